//! Shared test support: temporary git repositories and a fake Anthropic
//! Messages API.
//!
//! - [`repo`]: [`repo::GitRepo`], a real git repository with files and a commit.
//! - [`fake_model`]: [`fake_model::FakeModel`], a scripted Messages API on loopback
//!   that logs what the model was sent.
//! - [`http`]: the minimal HTTP/1.1 server layer under the fake model.

// A library for many test modules: not every module uses every helper.
#![allow(dead_code)]

pub mod fake_model;
pub mod http;
pub mod repo;
