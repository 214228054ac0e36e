//! The one integration-test binary: every module runs the real binaries in temp git repos.

mod lifecycle_flow;
mod lifecycle_race;
mod lifecycle_support;
mod selftest;
mod tools_claim;
mod tools_corrupt;
mod tools_install;
mod tools_release;
mod tools_status;
mod tools_wait;
