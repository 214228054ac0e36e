//! Shared test support: temporary git repositories, a fake Anthropic Messages
//! API, and real Claude Code CLI sessions driven against it.
//!
//! - [`repo`]: [`repo::GitRepo`], a real git repository with files and a commit.
//! - [`fake_model`]: [`fake_model::FakeModel`], a scripted Messages API on loopback
//!   that logs what the model was sent.
//! - [`claude`]: locating the CLI (`require_claude!`), [`claude::SessionBuilder`]
//!   and [`claude::run_all`] to run headless sessions, [`claude::Finished`] to
//!   read their output.
//! - [`http`]: the minimal HTTP/1.1 server layer under the fake model.
//! - [`tmux`]: [`tmux::Pane`], a command in a private tmux server, for terminal UIs.
//! - [`cases`]: the command-case corpus format, read by the rules corpus and the selftest runner.
//! - [`lines`]: [`lines::Lines`], a child's output read as it comes, to wait for the line that
//!   says an event happened rather than sleeping.
//! - [`wine`]: the Windows builds of the tools under wine, paths in Windows form, a live
//!   Windows process.

// A library for many test modules: not every module uses every item.
#![allow(dead_code)]

pub mod cases; // the command-case corpus format (`selftest/commands/*.case`)
pub mod claude;
pub mod e2e; // the real-CLI bed: a repo wired by guard install, sessions with the tools on PATH
pub mod fake_model;
pub mod http;
pub mod lifecycle; // temp repos with plans and locks; the suite's tools run as a person or a session
pub mod lines;
pub mod messaging; // fake live sessions and ledgers for send-message
pub mod poll; // waiting for an event: a condition polled until it holds
pub mod repo;
pub mod tmux;
pub mod wine;
