//! The guard's pipeline: payload → context → decision → output.
//!
//! The guard runs before every tool call of every session, as a new process each time, so the
//! hot path reads only what the payload needs: no tree walks, no process spawns. Its contract
//! with Claude Code is fixed: a block is the JSON decision on stdout and exit 0 (or, as a config
//! option, the reason on stderr and exit 2); anything else allows. Its own failures allow.

pub mod blocklog; // every deny and fail-open, one JSON line in session-lock/blocks.jsonl
pub mod lifecycle;
pub mod output;
pub mod payload;
pub mod scope; // path-boundary mode of run-agent's restricted runs (`guard scope`)

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
    // The session registry is per user, not per repo: keep it whatever the cwd or the config.
    match p.event.as_str() {
        "SessionEnd" => {
            if let Some(home) = env.state_home.as_deref() {
                crate::sessions::registry::remove(home, &p.session_id);
            }
            return Outcome::allow();
        }
        "SessionStart" => {
            lifecycle::register(crate::time::now_ms(), &p, env, 0);
            let root = crate::state::repo_root(Path::new(&p.cwd), env.project_dir.as_deref());
            let config = root.and_then(|r| Config::load(&r).ok()).unwrap_or_default();
            return messages(&p, env, &config);
        }
        _ => {}
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
        "PreToolUse" => {
            lifecycle::register(ctx.now, &p, env, throttle);
            pre_tool_use(&ctx, &p, env)
        }
        _ => {
            lifecycle::register(ctx.now, &p, env, throttle);
            let (mut locks, _) = ctx.layout.read_locks();
            lifecycle::heartbeat(&ctx, &p.session_id, env.client_pid, &mut locks);
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
    lifecycle::heartbeat(ctx, &p.session_id, env.client_pid, &mut locks);
    let mut note = String::new();
    for b in &bad {
        note.push_str(&format!("guard: skipped broken lock {b}\n"));
    }
    let verdict = if let Some((dialect, shell)) = dialect_of(&p.tool_name) {
        let command = p.input_str("command").unwrap_or_default();
        check_command(ctx, p, env, command, dialect, shell)
    } else if lifecycle::is_write_tool(&ctx.config, p) {
        match lifecycle::write_target(p) {
            Some(raw) => lifecycle::check_write(ctx, p, env, raw, &locks),
            None => Ok(()),
        }
        .and_then(|()| {
            if p.mcp_tool().is_some() {
                check_mcp(ctx, p)
            } else {
                Ok(())
            }
        })
    } else if p.mcp_tool().is_some() {
        check_mcp(ctx, p)
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

/// The shell a command tool runs its command in.
fn dialect_of(tool: &str) -> Option<(crate::shell::Dialect, crate::rules::Shell)> {
    match tool {
        "Bash" => Some((crate::shell::Dialect::Posix, crate::rules::Shell::Bash)),
        "PowerShell" => Some((
            crate::shell::Dialect::PowerShell,
            crate::rules::Shell::PowerShell,
        )),
        _ => None,
    }
}

fn check_command(
    ctx: &Ctx,
    p: &Payload,
    env: &Env,
    command: &str,
    dialect: crate::shell::Dialect,
    shell: crate::rules::Shell,
) -> Result<(), String> {
    let analysis = crate::shell::analyze(command, dialect);
    // Claims and releases, at the head of a segment once wrappers are peeled.
    let segments: Vec<Vec<lifecycle::Word>> = analysis
        .segments
        .iter()
        .map(|seg| {
            seg.argv
                .iter()
                .map(|w| lifecycle::Word {
                    text: w.text.clone(),
                    dynamic: w.dynamic,
                })
                .collect()
        })
        .collect();
    for sc in lifecycle::stream_commands(&segments) {
        match sc {
            StreamCommand::Claim(w) => lifecycle::claim(ctx, p, env, &w)?,
            StreamCommand::Release(w) => lifecycle::check_release(ctx, p, &w)?,
            StreamCommand::Bare(_) => {}
        }
    }
    let rules = match crate::rules::compile(&ctx.config.rules) {
        Ok(r) => r,
        Err(e) => return Err(format!("session-lock: {e}; fix session-lock/config.json")),
    };
    let cmd_ctx = crate::rules::CommandContext::new(p.cwd.clone(), ctx.root.display().to_string())
        .with_shell(shell);
    let hits = rules.check_analysis(&analysis, &cmd_ctx);
    decide(ctx, p, hits.into_iter().map(|(_, h)| h))
}

/// Turns rule hits into a verdict: an always-rule blocks; a shared-tree rule blocks unless the
/// caller is alone in the tree (asked only when such a rule fires).
fn decide(
    ctx: &Ctx,
    p: &Payload,
    hits: impl Iterator<Item = crate::rules::Hit>,
) -> Result<(), String> {
    let hits: Vec<crate::rules::Hit> = hits.collect();
    // An always-rule names the real danger even when a shared-tree rule fired first.
    if let Some(hit) = hits.iter().find(|h| h.scope == crate::rules::Scope::Always) {
        return Err(hit.reason.clone());
    }
    let mut presence: Option<crate::sessions::Presence> = None;
    for hit in hits {
        let who = presence.get_or_insert_with(|| {
            let external = std::env::var_os("SESSION_LOCK_LIVE_FILE")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    ctx.config
                        .live_sessions_file
                        .as_ref()
                        .map(|f| ctx.root.join(f))
                });
            crate::sessions::presence(
                &ctx.root,
                &p.session_id,
                external.as_deref(),
                ctx.config.case_insensitive(),
            )
        });
        match who {
            crate::sessions::Presence::Alone => {}
            crate::sessions::Presence::Unknown(why) => {
                return Err(format!(
                    "{} (The guard cannot tell whether another session works in this tree: {why}.)",
                    hit.reason
                ));
            }
            crate::sessions::Presence::Others(list) => {
                let names: Vec<String> = list
                    .iter()
                    .take(5)
                    .map(|s| format!("{} ({})", crate::state::short_id(&s.session_id), s.source))
                    .collect();
                return Err(format!(
                    "{} (Other live sessions in this tree: {}.)",
                    hit.reason,
                    names.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// MCP tools: the rules that go by tool name.
fn check_mcp(ctx: &Ctx, p: &Payload) -> Result<(), String> {
    let rules = crate::rules::compile(&ctx.config.rules)
        .map_err(|e| format!("session-lock: {e}; fix session-lock/config.json"))?;
    decide(
        ctx,
        p,
        rules.check_mcp(&p.tool_name, &p.tool_input).into_iter(),
    )
}
