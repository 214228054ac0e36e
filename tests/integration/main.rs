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
//! - `guard_props`: property tests of the guard binary (arbitrary bytes, JSON and
//!   payloads: exit 0 or 2, no hang, nothing on stdout but one decision).
//! - `build_lock`: `build-renderer` as concurrent real processes: no overlapping builds,
//!   waiters and the queue, a killed holder, the build's exit status.
//! - `reload_pipeline` (with the fake bridge `reload_bridge`): `reload-plugin` end to end.
//! - `messaging_*`: `send-message` against fake live sessions (`messaging_common`: delivery,
//!   hook route, holds, crash recovery, the bus, cold wake) and between real CLI sessions
//!   (`messaging_e2e`).

// The tests drive real processes with POSIX shells and signals; they run on Unix.
#![cfg(unix)]

mod support;

mod build_lock;
mod e2e_testbed;
mod guard_props;
mod messaging_bus;
mod messaging_common;
mod messaging_e2e;
mod messaging_hold;
mod messaging_send;
mod messaging_wake;
mod reload_bridge;
mod reload_pipeline;
