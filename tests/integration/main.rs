//! The integration test binary (the only one: `autotests = false`).
//!
//! Each area is a module file beside this one; shared test support lives in
//! `support/` (temporary git repositories, a fake Anthropic Messages API, real
//! Claude Code CLI sessions). Tests reach the suite's tools only through
//! `env!("CARGO_BIN_EXE_<name>")`. Tests that drive the real CLI find it through
//! `support::claude` and skip when it is missing, unless `CI` is set, where they
//! fail and name `scripts/install-claude-cli`.
//!
//! - `e2e_three_clients`: one guard, three clients: real Codex and Gemini sessions beside a
//!   real Claude Code session, kept off its stream's files (shell, file tools, `apply_patch`)
//!   and from `git checkout`, registered while they run.
//! - `e2e_clients`: the bed for Codex CLI and Gemini CLI proves itself: the fake model's
//!   Responses and Gemini wires, and each real CLI's tool calls and refusing hooks.
//! - `e2e_testbed`: proves the bed itself: the fake model's protocol, and the
//!   real CLI's round trips through it (text, tools, hooks, parallel sessions,
//!   API errors, timeouts).
//! - `agent_run`, `agent_contracts`: run-agent through its binary with the real CLI (one
//!   turn, resume, API error, timeout, env profiles; the read-only and workspace
//!   contracts); `agent_harness` runs the binary for them.
//! - `guard_props`: property tests of the guard binary (arbitrary bytes, JSON and
//!   payloads: exit 0 or 2, no hang, nothing on stdout but one decision).
//! - `build_lock`: `build-renderer` as concurrent real processes: no overlapping builds,
//!   waiters and the queue, a killed holder, the build's exit status.
//! - `reload_pipeline` (with the fake bridge `reload_bridge`): `reload-plugin` end to end.
//! - `messaging_*`: `send-message` against fake live sessions (`support::messaging`: delivery,
//!   hook route, holds, crash recovery, the bus, cold wake) and between real CLI sessions
//!   (`messaging_e2e`), and the MCP tools between real sessions (`messaging_mcp`).
//! - `selftest`: the `selftest/` case corpus through the real `guard`.
//! - `lifecycle_*`: the claim race and a whole round through the real binaries.
//! - `tools_*`: claim, release, status, wait-milestone and `guard install` / `uninstall` /
//!   `doctor` (`tools_doctor`: one check per cause) one by one (`tools_agents` for Codex CLI and
//!   Gemini CLI); `tools_errors` the failures people read, `tools_progress` and
//!   `tools_watch` the terminal views, read under tmux (`support::tmux`).
//! - `guard_clients`: Codex CLI and Gemini CLI payloads through the real guard, answered in each
//!   client's form.
//! - `guard_log`: the block log through the real guard.
//! - `guard_inputs`: FIFOs and deep payloads never make the guard wait or decide blind (issue 27).
//! - `state_links`: symbolic links planted in the state folders are never written through.
//! - `setup_script`: `scripts/setup` shows cargo's progress and wires a repo.
//! - `floor`: the kernel write floor (`guard floor`) and its wrapper with real processes: the
//!   tricks it stops, the ordinary work it keeps, bubblewrap and Landlock.
//! - `tools_*`: claim, release, status, wait-milestone and `guard install` one by one.
//! - `exit_codes`: PROTOCOL.md's table against `exit::Code`, each `--help` against its tool's codes.
//! - `windows`: the Windows build under wine (`scripts/test-windows`): path forms, a stream's
//!   lifecycle, serialized builds, `run.bat`'s keys, live Windows processes. The corpus
//!   runners (`selftest`, `selftest_commands`) also run every case through `guard.exe`.

//! - `support::e2e`: the shared bed of the scenarios below: a repo wired by
//!   `guard install`, sessions with the suite's tools on PATH, gates, and the
//!   check that the guard prints nothing on stdout but one decision.
//! - `e2e_lifecycle`: the stream lifecycle through the real CLI: claims (and two
//!   at once), ownership and protocol-file blocks, heartbeats (`wait-milestone`
//!   too) and staleness, the release gate and `status --wait`.
//! - `e2e_trust`: issue 11's trust boundary in a real round: the local settings, a plan
//!   widening and a release of another session's stream, refused from inside a session.
//! - `e2e_statusline`: an interactive session under tmux in a repo wired by plain `guard install`:
//!   the status line, the hooks and the MCP server all through the committed launcher.
//! - `e2e_doors`: issue 27's doors out of the guard from a real session's Bash: a script that
//!   is a FIFO, `guard uninstall` by several spellings, a nested client with its hooks off.
//! - `e2e_hook_contract`: the guard and the real client: fail-open on a crash,
//!   the exit-2 decision form, paths after a `cd`, sessions started below the
//!   repo root.

// The tests drive real processes with POSIX shells and signals; they run on Unix.
#![cfg(unix)]

mod support;

mod agent_contracts;
mod agent_harness;
mod agent_run;
mod architecture;
mod build_lock;
mod e2e_clients;
mod e2e_doors;
mod e2e_floor;
mod e2e_floor_clients;
mod e2e_hook_contract;
mod e2e_lifecycle;
mod e2e_statusline;
mod e2e_testbed;
mod e2e_three_clients;
mod e2e_trust;
mod exit_codes;
mod floor;
mod floor_hook;
mod guard_clients;
mod guard_explain;
mod guard_inputs;
mod guard_instructions;
mod guard_links;
mod guard_log;
mod guard_mcp_writers;
mod guard_props;
mod leases_remote;
mod lifecycle_flow;
mod lifecycle_race;
mod messaging_bus;
mod messaging_e2e;
mod messaging_hold;
mod messaging_mcp;
mod messaging_send;
mod messaging_wake;
mod reload_bridge;
mod reload_pipeline;
mod rules_corpus;
mod run_script;
mod selftest;
mod selftest_commands;
mod setup_script;
mod state_links;
mod tools_agents;
mod tools_claim;
mod tools_corrupt;
mod tools_doctor;
mod tools_errors;
mod tools_install;
mod tools_progress;
mod tools_release;
mod tools_status;
mod tools_wait;
mod tools_watch;
mod windows;
