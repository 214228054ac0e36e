//! The guard's pipeline: payload → context → decision → output.
//!
//! The guard runs before every tool call of every session, as a new process each time, so the
//! hot path reads only what the payload needs: no tree walks, no process spawns. Its contract
//! with Claude Code is fixed: a block is the JSON decision on stdout and exit 0 (or, as a config
//! option, the reason on stderr and exit 2); anything else allows. Its own failures allow.

pub mod lifecycle;
pub mod output;
pub mod payload;
pub mod words;

pub use output::Outcome;
pub use payload::Payload;

/// The largest payload the guard reads; a larger one is allowed unread (with a note).
pub const MAX_PAYLOAD: usize = 16 * 1024 * 1024;

use crate::config::Config;
use lifecycle::{Ctx, Env, StreamCommand};
use std::path::Path;

/// Set to make the guard panic on purpose (tests of fail-open use it).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_GUARD_CRASH";

/// Runs the hook on one payload. Never panics on bad input; the binary still wraps it in
/// `catch_unwind` so that its own bugs allow.
pub fn run(bytes: &[u8], env: &Env) -> Outcome {
    if bytes.len() > MAX_PAYLOAD {
        return Outcome::allow_with_note(format!("payload over {MAX_PAYLOAD} bytes; not checked"));
    }
    let p = match Payload::parse(bytes) {
        Ok(p) => p,
        Err(e) => return Outcome::allow_with_note(e),
    };
    if std::env::var_os(CRASH_SWITCH).is_some_and(|v| v == "1") {
        panic!("crash requested by {CRASH_SWITCH}");
    }
    let cwd = if p.cwd.is_empty() {
        std::env::current_dir().unwrap_or_default()
    } else {
        Path::new(&p.cwd).to_path_buf()
    };
    let Some(root) = crate::state::repo_root(&cwd, env.project_dir.as_deref()) else {
        return Outcome::allow();
    };
    let config = match Config::load(&root) {
        Ok(c) => c,
        Err(e) => return Outcome::allow_with_note(e.to_string()),
    };
    let ctx = Ctx::new(root, config);
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    match p.event.as_str() {
        "SessionEnd" => {
            if let Some(home) = env.state_home.as_deref() {
                crate::sessions::registry::remove(home, &p.session_id);
            }
            Outcome::allow()
        }
        "SessionStart" => {
            lifecycle::register(ctx.now, &p, env, 0);
            messages(&p, env, &ctx.config)
        }
        "PreToolUse" => {
            lifecycle::register(ctx.now, &p, env, throttle);
            pre_tool_use(&ctx, &p, env)
        }
        _ => {
            lifecycle::register(ctx.now, &p, env, throttle);
            let (mut locks, _) = ctx.layout.read_locks();
            lifecycle::heartbeat(&ctx, &p.session_id, &mut locks);
            messages(&p, env, &ctx.config)
        }
    }
}

/// Messages from other sessions waiting for this one (send-message's hook route).
fn messages(p: &Payload, env: &Env, config: &Config) -> Outcome {
    match crate::messaging::hook_context(p, env, config) {
        Some(text) => Outcome::context(&p.event, &text),
        None => Outcome::allow(),
    }
}

fn pre_tool_use(ctx: &Ctx, p: &Payload, env: &Env) -> Outcome {
    let form = ctx.config.decision;
    let (mut locks, bad) = ctx.layout.read_locks();
    lifecycle::heartbeat(ctx, &p.session_id, &mut locks);
    let mut note = String::new();
    for b in &bad {
        note.push_str(&format!("guard: skipped broken lock {b}\n"));
    }
    let verdict = if p.tool_name == "Bash" || p.tool_name == "PowerShell" {
        let command = p.input_str("command").unwrap_or_default();
        check_command(ctx, p, env, command)
    } else if lifecycle::is_write_tool(&ctx.config, p) {
        match lifecycle::write_target(p) {
            Some(raw) => lifecycle::check_write(ctx, p, env, raw, &locks),
            None => Ok(()),
        }
    } else {
        Ok(())
    };
    let mut out = match verdict {
        Ok(()) => Outcome::allow(),
        Err(reason) => Outcome::deny(&reason, form),
    };
    out.stderr.insert_str(0, &note);
    out
}

fn check_command(ctx: &Ctx, p: &Payload, env: &Env, command: &str) -> Result<(), String> {
    if !command.contains("claim") && !command.contains("release") {
        return Ok(());
    }
    for sc in lifecycle::stream_commands(&words::segments(command)) {
        match sc {
            StreamCommand::Claim(w) => lifecycle::claim(ctx, p, env, &w)?,
            StreamCommand::Release(w) => lifecycle::check_release(ctx, p, &w)?,
            StreamCommand::Bare(_) => {}
        }
    }
    Ok(())
}
