//! The guard's pipeline: payload → context → decision → output.
//!
//! The guard runs before every tool call of every session, as a new process each time, so the
//! hot path reads only what the payload needs: no tree walks, no process spawns. Its contract
//! with Claude Code is fixed: a block is the JSON decision on stdout and exit 0 (or, as a config
//! option, the reason on stderr and exit 2); anything else allows. Its own failures allow.

pub mod bash_writes; // ownership of the files a Bash/PowerShell command writes
pub mod blocklog; // every deny and fail-open, one JSON line in session-lock/blocks.jsonl
pub mod lifecycle;
pub mod notices; // told once per session: corrupt locks, unloadable config, failed heartbeats
pub mod output;
pub mod payload;
pub mod plan_edit; // plans' frontmatter is fixed while another stream is live
pub mod scope; // path-boundary mode of run-agent's restricted runs (`guard scope`)
pub mod script_files; // the text of scripts a command runs, for the analysis

pub use output::Outcome;
pub use payload::Payload;

/// The largest payload the guard reads and checks whole; the binary drains the rest of a larger
/// one, and the call is blocked (no input shape makes the guard skip its checks).
pub const MAX_PAYLOAD: usize = 256 * 1024 * 1024;

use crate::config::Config;
use lifecycle::{Ctx, Env, StreamCommand};
use std::path::Path;

/// Set to make the guard panic on purpose (tests of fail-open use it).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_GUARD_CRASH";

/// Runs the hook on one payload. Never panics on bad input; the binary still wraps it in
/// `catch_unwind` so that its own bugs allow.
pub fn run(bytes: &[u8], env: &Env) -> Outcome {
    if bytes.len() > MAX_PAYLOAD {
        return Outcome::deny(
            &format!(
                "session-lock: this tool call's input is over {} MiB, more than the guard can check; split it into smaller calls",
                MAX_PAYLOAD >> 20
            ),
            crate::config::DecisionForm::Json,
        );
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
            let config = root.map(|r| load_config(&r).0).unwrap_or_default();
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
    let (config, config_notice) = load_config(&root);
    let mut ctx = Ctx::new(root, config);
    ctx.notices.extend(config_notice);
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    match p.event.as_str() {
        "PreToolUse" => {
            lifecycle::register(ctx.now, &p, env, throttle);
            pre_tool_use(&ctx, &p, env)
        }
        _ => {
            lifecycle::register(ctx.now, &p, env, throttle);
            let locks = crate::round_index::LockSet::load(&ctx.layout);
            let mut own = locks.own(&p.session_id);
            let _ = lifecycle::heartbeat(&ctx, &p.session_id, env.client_pid, &mut own);
            messages(&p, env, &ctx.config)
        }
    }
}

/// The repo's config; one that cannot be loaded gives the protocol's defaults (neither
/// allow-all nor deny-all) and a notice naming the file and key.
fn load_config(root: &Path) -> (Config, Option<notices::Notice>) {
    match Config::load(root) {
        Ok(c) => (c, None),
        Err(e) => (
            Config::default(),
            Some(notices::Notice::new(
                format!("config:{e}"),
                format!("{e}; the guard applies the protocol's defaults until it is fixed"),
            )),
        ),
    }
}

/// What this session must hear about its own locks: one that had gone stale (revived by this
/// call, or since taken over by another session, whose files are then no longer its own).
/// `own`: the caller's locks; `taken`: locks taken over from the caller.
fn stale_notices(
    ctx: &Ctx,
    p: &Payload,
    own: &[crate::state::Held],
    taken: &[crate::state::Held],
) -> Vec<notices::Notice> {
    let stale_ms = ctx.config.heartbeat_stale_ms();
    let mut out = Vec::new();
    for h in own.iter().chain(taken).filter(|h| !h.done) {
        if h.record.session_id == p.session_id && !h.is_live(ctx.now, stale_ms) {
            out.push(notices::Notice::new(
                format!("stale:{}:{}", h.record.stream, h.record.heartbeat_at),
                format!(
                    "your lock on stream '{}' had gone stale (heartbeat {} ago, limit {} min), so its files were unprotected; this call renews it. Keep the lock fresh with wait-milestone --stream {} when you wait",
                    h.record.stream,
                    crate::time::age(h.age_ms(ctx.now)),
                    ctx.config.heartbeat_stale_minutes,
                    h.record.stream
                ),
            ));
        }
        if h.record.taken_from.as_deref() == Some(p.session_id.as_str()) {
            out.push(notices::Notice::new(
                format!("taken:{}:{}", h.record.stream, h.record.claimed_at),
                format!(
                    "your lock on stream '{}' went stale and session {} has claimed the stream since; its files are no longer yours (your writes to them are blocked). Pick another stream",
                    h.record.stream,
                    crate::state::short_id(&h.record.session_id)
                ),
            ));
        }
    }
    out
}

/// Messages from other sessions waiting for this one (send-message's hook route).
fn messages(p: &Payload, env: &Env, config: &Config) -> Outcome {
    let input = crate::messaging::hook::HookInput {
        event: &p.event,
        session_id: &p.session_id,
        agent_id: p.agent_id.as_deref(),
        transcript: Some(p.transcript_path.as_str())
            .filter(|t| !t.is_empty())
            .map(std::path::Path::new),
        mode: Some(p.permission_mode.as_str()).filter(|m| !m.is_empty()),
        home: env.state_home.as_deref(),
        client_pid: env.client_pid,
    };
    match crate::messaging::hook_context(&input, config) {
        Some(text) => Outcome::context(&p.event, &text),
        None => Outcome::allow(),
    }
}

fn pre_tool_use(ctx: &Ctx, p: &Payload, env: &Env) -> Outcome {
    let form = ctx.config.decision;
    // The caller's own locks only (for the heartbeat); the others are read when a write
    // target could be theirs.
    let mut locks = crate::round_index::LockSet::load(&ctx.layout);
    let lease = match &ctx.config.leases {
        Some(cfg) => crate::leases::guard::apply(
            &ctx.root,
            &ctx.layout,
            cfg,
            &mut locks,
            &p.session_id,
            env.binary_dir.as_deref(),
            ctx.now,
        ),
        None => Default::default(),
    };
    let mut told: Vec<notices::Notice> = ctx.notices.clone();
    let mut own = locks.own(&p.session_id);
    told.extend(stale_notices(
        ctx,
        p,
        &own,
        &locks.taken_from(&p.session_id),
    ));
    for (stream, why) in lifecycle::heartbeat(ctx, &p.session_id, env.client_pid, &mut own) {
        told.push(notices::Notice::new(format!("heartbeat:{stream}"), why));
    }
    locks.rewrote(&own);
    if let Some(reason) = lease.deny {
        let mut out = Outcome::deny(&reason, form);
        out.caller_stream = Some(
            own.iter()
                .find(|h| !h.done)
                .map(|h| h.record.stream.clone()),
        );
        return out;
    }
    // Lease and index notes go to the client's log (stderr), as they did before notices.
    let mut note = String::new();
    for n in lease.note.iter().chain(locks.note.iter()) {
        note.push_str(n);
        note.push('\n');
    }
    let bad = locks.bad();
    locks.add_foreign(lifecycle::corrupt_stand_ins(ctx, &bad), Vec::new());
    let verdict = if let Some((dialect, shell)) = dialect_of(&p.tool_name) {
        let command = p.input_str("command").unwrap_or_default();
        check_command(ctx, p, env, command, (dialect, shell), &locks)
    } else if lifecycle::is_write_tool(&ctx.config, p) {
        lifecycle::write_targets(&ctx.config, &ctx.root, p)
            .iter()
            .try_for_each(|raw| {
                // The client resolves these with Node's path.resolve: `\x` is on the cwd's drive.
                let how = crate::paths::lexical::Rooted::CurrentDrive;
                lifecycle::check_write(ctx, p, env, raw, how, &locks)
            })
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
    let out = match verdict {
        Ok(()) => Outcome::allow(),
        Err(reason) => Outcome::deny(&reason, form),
    };
    // After the checks: a lock file found broken while they read it is said too.
    for b in &locks.bad() {
        told.push(notices::Notice::new(
            format!("corrupt:{}", b.path.display()),
            format!(
                "broken lock {b}. The guard keeps protecting the files its plan owns; fix or delete that file (status shows it as corrupt)"
            ),
        ));
    }
    // Every call notes broken state on stderr (the client's log); the user hears it once.
    let mut out = out;
    for n in &told {
        out.stderr.insert_str(0, &format!("guard: {}\n", n.text));
    }
    out.stderr.insert_str(0, &note);
    out.caller_stream = Some(
        own.iter()
            .find(|h| !h.done)
            .map(|h| h.record.stream.clone()),
    );
    let fresh = notices::unseen(env.state_home.as_deref(), &p.session_id, told);
    out.with_notice(&p.event, &notices::text(&fresh))
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
    (dialect, shell): (crate::shell::Dialect, crate::rules::Shell),
    locks: &crate::round_index::LockSet,
) -> Result<(), String> {
    let here = crate::rules::CommandContext::new(p.cwd.clone(), ctx.root.display().to_string())
        .with_shell(shell);
    let analysis = (command.len() <= crate::shell::MAX_INPUT_BYTES).then(|| {
        crate::shell::analyze_with(command, dialect, &script_files::RepoFiles::new(&here))
    });
    let Some(analysis) = analysis.filter(|a| !a.truncated) else {
        return Err(format!(
            "session-lock: this command is longer or more deeply nested than the guard can check ({} KiB of text at most); split it into several smaller commands",
            crate::shell::MAX_INPUT_BYTES >> 10
        ));
    };
    // Not dropped: a guard call is one short process, and the analysis of a long script is
    // thousands of small allocations that the exit hands back at once, where dropping them
    // would free them one by one (about a tenth of such a call's instructions).
    let analysis = std::mem::ManuallyDrop::new(analysis);
    // Claims and releases, at the head of a segment once wrappers are peeled.
    for sc in lifecycle::stream_commands(analysis.segments.iter().map(|s| s.argv.as_slice())) {
        match sc {
            StreamCommand::Claim(w) => lifecycle::claim(ctx, p, env, &w)?,
            StreamCommand::Release(w) => lifecycle::check_release(ctx, p, &w)?,
            StreamCommand::Bare(_) => {}
        }
    }
    bash_writes::check(ctx, p, env, &analysis, locks)?;
    let rules = match crate::rules::compile(&ctx.config.rules) {
        Ok(r) => r,
        Err(e) => return Err(format!("session-lock: {e}; fix session-lock/config.json")),
    };
    let hits = rules.check_analysis(&analysis, &here);
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
    let tool = p.mcp_tool().unwrap_or_default();
    let server_tool = p.tool_name.strip_prefix("mcp__").unwrap_or_default();
    let lookalike_ok = ctx
        .config
        .mcp_lookalike_allow
        .iter()
        .any(|a| a.eq_ignore_ascii_case(tool) || a.eq_ignore_ascii_case(server_tool));
    decide(
        ctx,
        p,
        rules
            .check_mcp_allowing(&p.tool_name, &p.tool_input, lookalike_ok)
            .into_iter(),
    )
}
