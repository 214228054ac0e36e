//! The integration test binary (the only one: `autotests = false`).
//!
//! Each area is a module file beside this one; shared test support lives in
//! `support/` (temporary git repositories, a fake Anthropic Messages API, real
//! Claude Code CLI sessions). Tests reach the suite's tools only through
//! `env!("CARGO_BIN_EXE_<name>")`. Tests that drive the real CLI find it through
//! `support::claude` and skip when it is missing, unless `CI` is set, where they
//! fail and name `scripts/install-claude-cli`.
//!
//! - `e2e_testbed`: proves the bed itself: the fake model's protocol, and the
//!   real CLI's round trips through it (text, tools, hooks, parallel sessions,
//!   API errors, timeouts).
//! - `e2e_lifecycle`: the stream lifecycle through the real CLI in repos wired by
//!   `guard install`: claims (and two at once), ownership and protocol-file
//!   blocks, heartbeats (`wait-milestone` too) and staleness, the release gate
//!   and `status --wait`, fail-open, the exit-2 decision form, paths after a
//!   `cd`, and sessions started below the repo root.

mod support;

mod e2e_lifecycle;
mod e2e_testbed;
