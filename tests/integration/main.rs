//! The one integration-test binary: every module runs the real binaries in temp git repos.

mod lifecycle_support;
mod selftest;
