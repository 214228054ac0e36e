//! The guard's pipeline, read top to bottom: payload → context (repo, config, live locks,
//! built once) → checks, in order → one [`Decision`] → rendered once at the door
//! ([`door`], [`output::render`]).
//!
//! The guard runs before every tool call of every session, as a new process each time, so the
//! hot path reads only what the payload needs: no tree walks, no process spawns. Its contract
//! with Claude Code is fixed: a block is the JSON decision on stdout and exit 0 (or, as a config
//! option, the reason on stderr and exit 2); anything else allows. Its own failures allow.

pub mod blocklog; // every deny and fail-open, one JSON line in session-lock/blocks.jsonl
pub mod checks; // one module per check, run in order by `pre_tool_use`
pub mod context; // what one call knows besides its payload: repo, config, locks (built once)
pub mod deadline; // a run past its deadline allows, and is logged
pub mod decision; // the answer as a value: allow, rewrite, deny with a typed refusal
pub mod door; // `guard` with no command: stdin → pipeline → rendered answer, block log
pub mod floor; // an allowed shell command rewritten to run under the kernel write floor
pub mod input_paths; // the files a write tool's input names, walked through nested values
pub mod notices; // told once per session: corrupt locks, unloadable config, failed heartbeats
pub mod output; // a decision rendered for the client that sent the payload
pub mod payload; // the hook payload on stdin
pub mod rule_hits; // command-rule hits → the answer (shared by the command and MCP checks)
pub mod scope; // path-boundary mode of run-agent's restricted runs (`guard scope`)
pub mod script_files; // the text of scripts a command runs, for the analysis
pub mod session; // the session's registry entry, heartbeats and what it must hear about them
pub mod targets; // the files a call writes, and the facts the write checks decide from

pub use crate::clients::Client;
pub use decision::{Checked, Decision, Refusal, Rule, Verdict};
pub use output::Outcome;
pub use payload::Payload;

/// The largest payload the guard reads and checks whole; the binary drains the rest of a larger
/// one, and the call is blocked (no input shape makes the guard skip its checks).
pub const MAX_PAYLOAD: usize = 256 * 1024 * 1024;

use crate::config::{Config, DecisionForm};
use crate::words::HookEvent;
use context::{Call, Ctx, Env};
use std::path::Path;

/// The argument of the user-scope hook entry `guard install` writes into the user's Claude
/// Code settings: the client reads project settings only from the folder a session starts in,
/// so a session started in a subfolder (or a nested `claude -p` run there) meets only this one.
pub const USER_SCOPE: &str = "--user-scope";

/// The user-scope entry has nothing to do for a session started in `dir` (the client's
/// `CLAUDE_PROJECT_DIR`): `dir` is a git top level, where the repo's own entry runs when the repo
/// is wired, or no wired repo (one holding the launcher `session-lock/guard-hook`) is above it.
/// A few `stat` calls: it runs before every tool call of every session of the user.
pub fn user_entry_idle(dir: &Path) -> bool {
    match crate::state::git_top(dir) {
        None => true,
        Some(top) => top == dir || !top.join("session-lock").join("guard-hook").is_file(),
    }
}

/// Set to `1` to make the guard panic on purpose, to `hang` to make it never answer (tests of
/// fail-open and of the deadline use it: no input makes the guard wait).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_GUARD_CRASH";

/// Runs the hook on one payload and renders its answer for the client that sent it.
pub fn run(bytes: &[u8], env: &Env) -> Outcome {
    let (decision, form) = decide(bytes, env);
    output::render(&decision, decision.client, form)
}

/// The answer to one payload, and the decision form the repo's config asks for. Never panics
/// on bad input; the door still wraps it in `catch_unwind` so that its own bugs allow.
pub fn decide(bytes: &[u8], env: &Env) -> (Decision, DecisionForm) {
    let form = DecisionForm::Json;
    if bytes.len() > MAX_PAYLOAD {
        let refusal = Refusal::new(
            Rule::TooLarge,
            format!(
                "session-lock: this tool call's input is over {} MiB, more than the guard can check; split it into smaller calls",
                MAX_PAYLOAD >> 20
            ),
        );
        return (Decision::deny(HookEvent::PreToolUse, refusal), form);
    }
    let p = match Payload::parse(bytes) {
        Ok(p) => p,
        Err(e) => return (Decision::fail_open(e), form),
    };
    match std::env::var_os(CRASH_SWITCH) {
        Some(v) if v == "1" => panic!("crash requested by {CRASH_SWITCH}"),
        // A bug that never returns: only the deadline ends the run.
        Some(v) if v == "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        },
        _ => {}
    }
    // Neither Codex nor Gemini names its process to its hooks: it is found above this one.
    let found;
    let env = match (p.client, env.client_pid) {
        (Client::Claude, _) | (_, Some(_)) => env,
        (client, None) => {
            found = Env {
                client_pid: crate::clients::process::find(client),
                ..env.clone()
            };
            &found
        }
    };
    let (mut decision, form) = decide_payload(&p, env);
    decision.client = p.client;
    (decision, form)
}

/// [`decide`] once the payload is read.
fn decide_payload(p: &Payload, env: &Env) -> (Decision, DecisionForm) {
    let form = DecisionForm::Json;
    // The session registry is per user, not per repo: keep it whatever the cwd or the config.
    match p.event {
        HookEvent::SessionEnd => {
            if let Some(home) = env.state_home.as_deref() {
                crate::sessions::registry::remove(home, &p.session_id);
            }
            return (Decision::allow(p.event.clone()), form);
        }
        HookEvent::SessionStart => {
            session::register(crate::time::now_ms(), p, env, 0);
            let root = crate::state::repo_root(Path::new(&p.cwd), env.project_dir.as_deref());
            let config = root.map(|r| load_config(&r).0).unwrap_or_default();
            return (messages(p, env, &config), form);
        }
        _ => {}
    }
    let cwd = if p.cwd.is_empty() {
        std::env::current_dir().unwrap_or_default()
    } else {
        Path::new(&p.cwd).to_path_buf()
    };
    let Some(root) = crate::state::repo_root(&cwd, env.project_dir.as_deref()) else {
        return (Decision::allow(p.event.clone()), form);
    };
    let (config, config_notice) = load_config(&root);
    let mut ctx = Ctx::new(root, config);
    ctx.notices.extend(config_notice);
    let form = ctx.config.decision;
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    session::register(ctx.now, p, env, throttle);
    if p.event == HookEvent::PreToolUse {
        if p.cut && matches!(p.tool_name, crate::words::Tool::Other(_)) {
            // The built-in tools' fields sit at the top of their input and are read whatever
            // lies deeper; an MCP tool's paths and commands may sit anywhere.
            let refusal = Refusal::new(
                Rule::TooLarge,
                format!(
                    "session-lock: this tool call's input is nested more than {} levels deep, deeper than the guard can check; pass it flatter",
                    payload::MAX_DEPTH
                ),
            );
            return (Decision::deny(p.event.clone(), refusal), form);
        }
        return (pre_tool_use(&mut ctx, p, env), form);
    }
    let mut own = ctx.locks.own(&p.session_id);
    let _ = session::heartbeat(&ctx, &p.session_id, env.client_pid, &mut own);
    (messages(p, env, &ctx.config), form)
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

/// Messages from other sessions waiting for this one (send-message's hook route).
fn messages(p: &Payload, env: &Env, config: &Config) -> Decision {
    let input = crate::messaging::hook::HookInput {
        event: &p.event,
        session_id: &p.session_id,
        agent_id: p.agent_id.as_deref(),
        transcript: Some(p.transcript_path.as_str())
            .filter(|t| !t.is_empty())
            .map(std::path::Path::new),
        mode: Some(&p.permission_mode).filter(|m| !m.is_empty()),
        home: env.state_home.as_deref(),
        client_pid: env.client_pid,
    };
    Decision {
        context: crate::messaging::hook_context(&input, config),
        ..Decision::allow(p.event.clone())
    }
}

/// A tool call: build the context, run the checks in order, gather the answer.
pub fn pre_tool_use(ctx: &mut Ctx, p: &Payload, env: &Env) -> Decision {
    let event = HookEvent::PreToolUse;
    let mut prepared = prepare(ctx, p, env);
    // What the floor stage tells once per session: not broken state, so not logged every call.
    let mut floor_told: Vec<notices::Notice> = Vec::new();
    let mut decision = match prepared.lease_deny.take() {
        Some(refusal) => Decision::deny(event, refusal),
        None => {
            let d = match Call::new(ctx, p, env) {
                Err(refusal) => Decision::deny(event, refusal),
                Ok(call) => match run_checks(ctx, &call) {
                    Err(refusal) => Decision::deny(event, refusal),
                    // Allowed: while a round runs, a shell command goes under the floor.
                    Ok(()) => match floor::stage(ctx, &call, &mut floor_told) {
                        floor::Floored::Unchanged => Decision::allow(event),
                        floor::Floored::Rewrite(input) => Decision {
                            verdict: Verdict::Rewrite { input },
                            ..Decision::allow(event)
                        },
                        floor::Floored::Deny(refusal) => Decision::deny(event, refusal),
                    },
                },
            };
            // After the checks: a lock file found broken while they read it is said too.
            for b in &ctx.locks.bad() {
                prepared.told.push(notices::Notice::new(
                    format!("corrupt:{}", b.path.display()),
                    format!(
                        "broken lock {b}. The guard keeps protecting the files its plan owns; fix or delete that file (status shows it as corrupt)"
                    ),
                ));
            }
            d
        }
    };
    // Every call notes broken state on stderr (the client's log); the user hears it once.
    decision.log = prepared.log;
    decision
        .log
        .extend(prepared.told.iter().map(|n| format!("guard: {}", n.text)));
    decision.caller_stream = Some(prepared.stream);
    prepared.told.extend(floor_told);
    let fresh = match ctx.dry {
        true => prepared.told,
        false => notices::unseen(env.state_home.as_deref(), &p.session_id, prepared.told),
    };
    decision.notices = fresh.into_iter().map(|n| n.text).collect();
    decision
}

/// The checks, in order; the first refusal is the answer.
fn run_checks(ctx: &Ctx, call: &Call) -> Checked {
    if let Some(why) = &call.p.unreadable {
        return Err(Refusal::new(
            Rule::Unreadable,
            format!("session-lock: {why}"),
        ));
    }
    checks::claims::check(ctx, call)?;
    let each = |t: &targets::Target| write_checks(ctx, call, t);
    if let Some(command) = &call.command {
        targets::of_command(ctx, call, command, each)?;
        if call.p.client == Client::Codex {
            targets::of_patches_in(ctx, command, each)?;
        }
    }
    // A file tool's paths; an MCP tool judged as the git command it runs has its named files
    // checked too (`git_apply {patch}`, `git_add {files}`).
    if (call.command.is_none() || call.p.mcp_tool().is_some())
        && targets::is_write_tool(&ctx.config, call.p)
    {
        targets::of_file_tool(ctx, call, each)?
    }
    checks::commands::check(ctx, call)?;
    checks::mcp::check(ctx, call)
}

/// The checks of one write target, in order.
pub fn write_checks(ctx: &Ctx, call: &Call, t: &targets::Target) -> Checked {
    name_checks(ctx, call, t)?;
    if !ctx.any_live() {
        return Ok(());
    }
    for other in targets::other_links(ctx, call, t)? {
        name_checks(ctx, call, &other).map_err(|mut r| {
            r.reason = format!(
                "session-lock: {} is a hard link of {}, so writing it writes that file. {}",
                t.raw,
                r.path.as_deref().unwrap_or(&other.raw),
                r.reason.trim_start_matches("session-lock: ")
            );
            r
        })?;
    }
    Ok(())
}

/// The checks of one name of a write target.
fn name_checks(ctx: &Ctx, call: &Call, t: &targets::Target) -> Checked {
    let Some(facts) = targets::Facts::of(ctx, call, t) else {
        return Ok(());
    };
    checks::protected::check(ctx, t, &facts)?;
    checks::plan_edit::check(ctx, call, &facts)?;
    checks::ownership::check(ctx, &facts)
}

/// What the context stage gives the checks besides the context itself.
struct Prepared {
    /// What the session must hear (once).
    told: Vec<notices::Notice>,
    /// Lease and index notes for the client's log.
    log: Vec<String>,
    /// The caller's stream, if it holds one.
    stream: Option<String>,
    /// The lease of a stream this session held was taken over.
    lease_deny: Option<Refusal>,
}

/// Completes the context of a tool call: the lease mirror's locks, the caller's heartbeats
/// moved, stand-ins for corrupt locks, and what to tell the session about them.
fn prepare(ctx: &mut Ctx, p: &Payload, env: &Env) -> Prepared {
    let lease = match (&ctx.config.leases, ctx.dry) {
        (Some(cfg), false) => crate::leases::guard::apply(
            &ctx.root,
            &ctx.layout,
            cfg,
            &mut ctx.locks,
            &p.session_id,
            env.binary_dir.as_deref(),
            ctx.now,
        ),
        // A dry run only reads the mirror: no lost-lease marker, no refresher.
        (Some(_), true) => match crate::leases::mirror::Mirror::load(&ctx.layout) {
            Ok(m) => {
                if let Some(m) = m {
                    ctx.locks
                        .add_foreign(m.foreign_locks(&m.clone_id), Vec::new());
                }
                Default::default()
            }
            Err(why) => crate::leases::guard::Told {
                unreadable: Some(why),
                ..Default::default()
            },
        },
        (None, _) => Default::default(),
    };
    if let (Some(why), Some(cfg)) = (&lease.unreadable, &ctx.config.leases) {
        let stand_ins = context::mirror_stand_ins(ctx, why, &cfg.remote);
        ctx.locks.add_foreign(stand_ins, Vec::new());
    }
    let mut told: Vec<notices::Notice> = ctx.notices.clone();
    let mut own = ctx.locks.own(&p.session_id);
    told.extend(session::stale_notices(
        ctx,
        p,
        &own,
        &ctx.locks.taken_from(&p.session_id),
    ));
    if !ctx.dry {
        for (stream, why) in session::heartbeat(ctx, &p.session_id, env.client_pid, &mut own) {
            told.push(notices::Notice::new(format!("heartbeat:{stream}"), why));
        }
    }
    ctx.locks.rewrote(&own);
    let stream = own
        .iter()
        .find(|h| !h.done)
        .map(|h| h.record.stream.clone());
    let mut prepared = Prepared {
        told,
        log: Vec::new(),
        stream,
        lease_deny: lease.deny.map(|why| Refusal::new(Rule::Lease, why)),
    };
    if prepared.lease_deny.is_some() {
        // Denied before the checks: nothing more is told, as before the checks ran.
        prepared.told.clear();
        return prepared;
    }
    // Lease and index notes go to the client's log (stderr), as they did before notices.
    prepared
        .log
        .extend(lease.note.iter().chain(ctx.locks.note.iter()).cloned());
    let bad = ctx.locks.bad();
    let stand_ins = context::corrupt_stand_ins(ctx, &bad);
    ctx.locks.add_foreign(stand_ins, Vec::new());
    prepared
}
