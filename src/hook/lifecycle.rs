//! The lock lifecycle as the guard sees it: claim recording, heartbeat, ownership blocking,
//! protection of the protocol's own files, and the session registry.
//!
//! Only the hook receives the real `session_id`, so the hook (not `claim`) writes the lock when
//! it sees a Bash call that runs `claim <stream>`; `claim` then reads it back.

use super::Payload;
use crate::config::Config;
use crate::globs::Owns;
use crate::paths::{RepoPath, RepoPaths};
use crate::round_index::LockSet;
use crate::state::{Held, Layout, LockRecord, short_id};
use crate::{liveness, plans, time};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the guard waits for the state lock before giving up on a write (it never hangs).
const STATE_LOCK_WAIT: Duration = Duration::from_secs(3);

/// What the guard knows about the call besides the payload.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// `CLAUDE_PROJECT_DIR`.
    pub project_dir: Option<String>,
    /// `CLAUDE_PID`: the client process.
    pub client_pid: Option<u32>,
    /// The per-user state folder (`SESSION_LOCK_HOME` or the platform's).
    pub state_home: Option<PathBuf>,
    /// The folder the guard binary runs from: frozen like the protocol files.
    pub binary_dir: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            project_dir: std::env::var("CLAUDE_PROJECT_DIR")
                .ok()
                .filter(|s| !s.is_empty()),
            client_pid: std::env::var("CLAUDE_PID")
                .ok()
                .and_then(|p| p.trim().parse().ok()),
            state_home: crate::sessions::state_home(),
            binary_dir: std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf)),
        }
    }
}

/// One word of a command as the lifecycle needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Holds an expansion (`$S`, `$(…)`, backticks) whose value the guard cannot know.
    pub dynamic: bool,
}

/// A claim or release the command runs, found at the head of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamCommand {
    Claim(Word),
    Release(Word),
    /// The tool was named with no stream.
    Bare(&'static str),
}

/// The repo, its config and paths, resolved once per call.
pub struct Ctx {
    pub root: PathBuf,
    pub layout: Layout,
    pub config: Config,
    pub paths: RepoPaths,
    pub now: u64,
}

impl Ctx {
    pub fn new(root: PathBuf, config: Config) -> Ctx {
        let paths = RepoPaths::new(&root, config.case_insensitive());
        Ctx {
            layout: Layout::new(&root),
            root,
            config,
            paths,
            now: time::now_ms(),
        }
    }

    fn stale_ms(&self) -> u64 {
        self.config.heartbeat_stale_ms()
    }
}

fn describe(held: &Held, now: u64) -> String {
    let mut s = format!(
        "session {}, heartbeat {} ago",
        short_id(&held.record.session_id),
        time::age(held.age_ms(now))
    );
    if held.orphaned() {
        s.push_str(", its client process is gone");
    }
    s
}

/// Records a claim, or explains why it cannot be taken.
pub fn claim(ctx: &Ctx, p: &Payload, env: &Env, stream: &Word) -> Result<(), String> {
    if stream.dynamic {
        return Err(format!(
            "session-lock: `claim {}` names its stream through an expansion; write the stream name literally (claim <stream>) so the claim can be recorded",
            stream.text
        ));
    }
    let name = stream.text.as_str();
    if let Some(problem) = plans::stream_name_problem(name) {
        return Err(format!(
            "session-lock: '{name}' is not a stream name ({problem})"
        ));
    }
    if p.session_id.is_empty() {
        return Err(format!(
            "session-lock: the hook payload carries no session_id, so the claim of '{name}' cannot be recorded (a lock without its session protects nothing)"
        ));
    }
    let streams = crate::plan_cache::load(&ctx.root, &ctx.config.plan_glob, &ctx.layout)
        .map_err(|e| format!("session-lock: cannot claim '{name}': {e}"))?;
    let Some(plan) = streams.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = streams.iter().map(|s| s.name.as_str()).collect();
        return Err(format!(
            "session-lock: no plan declares stream '{name}' ({}); streams: {}",
            ctx.config.plan_glob,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    let _guard = ctx
        .layout
        .lock_state(STATE_LOCK_WAIT)
        .map_err(|e| {
            format!(
                "session-lock: cannot lock {}: {e}",
                ctx.layout.dir.display()
            )
        })?
        .ok_or_else(|| {
            "session-lock: the state folder stayed locked; try the claim again".to_string()
        })?;
    let existing = ctx.layout.read_lock(name).map_err(|bad| {
        format!("session-lock: cannot claim '{name}': {bad}; fix or delete that file")
    })?;
    let client_start = env.client_pid.and_then(liveness::start_time);
    let now_iso = time::iso(ctx.now);
    let mut record = LockRecord {
        stream: name.to_string(),
        session_id: p.session_id.clone(),
        owns: plan.owns.clone(),
        plan: plan.plan.clone(),
        milestone: plan.milestone,
        claimed_at: now_iso.clone(),
        heartbeat_at: now_iso,
        round: ctx.layout.round(),
        cwd: p.cwd.clone(),
        client_pid: env.client_pid,
        client_start,
    };
    let index = crate::round_index::Index::before_write(&ctx.layout);
    let write = match existing {
        None => ctx.layout.create_lock(&record).and_then(|created| {
            if created {
                Ok(())
            } else {
                Err(std::io::Error::other(
                    "another claim was written at the same instant",
                ))
            }
        }),
        Some(held) => {
            let mine = held.record.session_id == p.session_id;
            if !mine && held.is_live(ctx.now, ctx.stale_ms()) {
                return Err(format!(
                    "session-lock: stream '{name}' is held by another session ({}). Pick another stream, or wait for it: wait-milestone {name} --stream <yours>",
                    describe(&held, ctx.now)
                ));
            }
            if mine && !held.done {
                record.claimed_at = held.record.claimed_at.clone();
            }
            if held.done {
                let _ = std::fs::remove_file(ctx.layout.done_path(name));
                let _ = std::fs::remove_file(ctx.layout.milestone_done(held.record.milestone));
            }
            ctx.layout.write_lock(&record)
        }
    };
    crate::round_index::Index::after_write(&ctx.layout, index, &[name]);
    write.map_err(|e| format!("session-lock: could not record the claim of '{name}': {e}"))
}

/// `release <stream>` may only be run by the session holding the stream, with a literal name.
pub fn check_release(ctx: &Ctx, p: &Payload, stream: &Word) -> Result<(), String> {
    if stream.dynamic {
        return Err(format!(
            "session-lock: `release {}` names its stream through an expansion; the guard cannot check whose stream that is. Write the stream name literally",
            stream.text
        ));
    }
    if let Ok(Some(held)) = ctx.layout.read_lock(&stream.text)
        && held.record.session_id != p.session_id
    {
        return Err(format!(
            "session-lock: stream '{}' belongs to another session ({}); only its own session may release it",
            stream.text,
            describe(&held, ctx.now)
        ));
    }
    Ok(())
}

/// Moves this session's heartbeats forward (at most once per throttle interval). A lock that
/// names another client process than `client_pid` (the session was resumed in a new process) is
/// due at once and is made to name this one.
pub fn heartbeat(ctx: &Ctx, session_id: &str, client_pid: Option<u32>, locks: &mut [Held]) {
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    let due: Vec<usize> = locks
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            let moved = client_pid.is_some() && h.record.client_pid != client_pid;
            h.record.session_id == session_id && !h.done && (moved || h.age_ms(ctx.now) >= throttle)
        })
        .map(|(i, _)| i)
        .collect();
    if due.is_empty() {
        return;
    }
    for i in due {
        let stream = locks[i].record.stream.clone();
        if let Ok(true) = ctx.layout.touch_heartbeat_from(
            &stream,
            session_id,
            client_pid,
            ctx.now,
            STATE_LOCK_WAIT,
        ) {
            match ctx.layout.read_lock(&stream) {
                Ok(Some(fresh)) => locks[i] = fresh,
                _ => {
                    locks[i].heartbeat_ms = ctx.now;
                    locks[i].record.heartbeat_at = time::iso(ctx.now);
                }
            }
        }
    }
}

/// The path a write tool names, if any.
pub fn write_target(p: &Payload) -> Option<&str> {
    ["file_path", "notebook_path", "path", "filePath", "filepath"]
        .iter()
        .find_map(|k| p.input_str(k))
}

/// Is this tool one that writes the file named in its input?
pub fn is_write_tool(cfg: &Config, p: &Payload) -> bool {
    if cfg.write_tools.iter().any(|t| t == &p.tool_name) {
        return true;
    }
    p.mcp_tool()
        .is_some_and(|t| cfg.mcp_write_tools.iter().any(|w| w == t))
}

fn under_dir(dir: &Path, raw: &str, cwd: &str) -> bool {
    let paths = RepoPaths::new(dir, crate::paths::default_case_insensitive());
    !matches!(paths.locate(cwd, raw), RepoPath::Outside)
}

/// Ownership and self-protection for a write to `raw` (as the payload names it).
pub fn check_write(
    ctx: &Ctx,
    p: &Payload,
    env: &Env,
    raw: &str,
    locks: &LockSet,
) -> Result<(), String> {
    let ci = ctx.paths.case_insensitive();
    let owns_of = |h: &Held| Owns::new(&h.record.owns, ci).ok();
    let may_own = |h: &Held, rel: &str| !crate::globs::cannot_match(&h.record.owns, rel, ci);
    let live_of = |pool: Vec<Held>| -> Vec<Held> {
        pool.into_iter()
            .filter(|h| h.is_live(ctx.now, ctx.stale_ms()))
            .collect()
    };
    let rel = match ctx.paths.locate(&p.cwd, raw) {
        RepoPath::Inside(rel) => Some(rel),
        RepoPath::Root | RepoPath::Outside => None,
    };
    let protected = match &rel {
        Some(rel) if crate::globs::cannot_match(&ctx.config.protected_paths, rel, ci) => false,
        Some(rel) => Owns::new(&ctx.config.protected_paths, ci)
            .map(|o| o.is_match(rel))
            .unwrap_or(false),
        None => false,
    };
    // The suite's own folder is frozen; a folder that holds the whole repo (the guard copied to
    // the repo root) is not the suite's, or every file in the repo would be frozen.
    let in_binary_dir = env.binary_dir.as_deref().is_some_and(|d| {
        !under_dir(d, &ctx.root.to_string_lossy(), &p.cwd) && under_dir(d, raw, &p.cwd)
    });
    // Only the locks the decision rests on are read: every lock for the protocol's own files
    // (they are frozen while any lock is live), else the caller's and those that could own `rel`.
    let live = match &rel {
        _ if protected || in_binary_dir => live_of(locks.all()),
        Some(rel) => {
            let mut pool = locks.own(&p.session_id);
            pool.extend(locks.others_for(&p.session_id, rel, ci));
            live_of(pool)
        }
        None => Vec::new(),
    };
    if live.is_empty() {
        return Ok(());
    }
    let mine_covers = |rel: &str| {
        live.iter()
            .filter(|h| h.record.session_id == p.session_id && may_own(h, rel))
            .any(|h| owns_of(h).is_some_and(|o| o.is_match(rel)))
    };
    if (protected || in_binary_dir) && !rel.as_deref().is_some_and(mine_covers) {
        return Err(format!(
            "session-lock: {} is part of the session-lock protocol and is frozen while a round runs ({} live lock(s)). Edit it only when no stream is active, or from the stream that owns it",
            rel.as_deref().unwrap_or(raw),
            live.len()
        ));
    }
    let Some(rel) = rel else { return Ok(()) };
    if mine_covers(&rel) {
        return Ok(());
    }
    for h in live
        .iter()
        .filter(|h| h.record.session_id != p.session_id && may_own(h, &rel))
    {
        if owns_of(h).is_some_and(|o| o.is_match(&rel)) {
            return Err(format!(
                "session-lock: {rel} is owned by stream '{}' ({}). Edit only files your own stream owns; for a change here ask that stream's session, or wait for it: wait-milestone {} --stream <yours>",
                h.record.stream,
                describe(h, ctx.now),
                h.record.stream
            ));
        }
    }
    Ok(())
}

/// Keeps the suite's registry entry of this session current (throttled).
pub fn register(ctx_now: u64, p: &Payload, env: &Env, throttle_ms: u64) {
    let (Some(home), Some(pid)) = (env.state_home.as_deref(), env.client_pid) else {
        return;
    };
    if p.session_id.is_empty() {
        return;
    }
    use crate::sessions::registry;
    if let Some(old) = registry::read(home, &p.session_id) {
        let fresh = time::parse_iso(&old.updated_at)
            .is_some_and(|t| ctx_now.saturating_sub(t) < throttle_ms);
        if fresh && old.pid == Some(pid) && old.cwd == p.cwd {
            return;
        }
    }
    let entry = registry::Entry {
        session_id: p.session_id.clone(),
        cwd: p.cwd.clone(),
        pid: Some(pid),
        proc_start: liveness::start_time(pid),
        transcript_path: (!p.transcript_path.is_empty()).then(|| p.transcript_path.clone()),
        permission_mode: (!p.permission_mode.is_empty()).then(|| p.permission_mode.clone()),
        updated_at: time::iso(ctx_now),
    };
    let _ = registry::write(home, &entry);
}

/// The claims and releases a command runs, from its segments.
pub fn stream_commands(segments: &[Vec<Word>]) -> Vec<StreamCommand> {
    let mut out = Vec::new();
    for seg in segments {
        let Some(head) = seg.first() else { continue };
        let base = head_name(&head.text);
        let cmd = match base.as_str() {
            "claim" => "claim",
            "release" => "release",
            _ => continue,
        };
        // The first argument that is not an option; `--repo DIR` takes a value.
        let mut args = seg.iter().skip(1);
        let mut stream = None;
        while let Some(w) = args.next() {
            if w.dynamic || !w.text.starts_with('-') {
                stream = Some(w);
                break;
            }
            if w.text == "--repo" {
                args.next();
            }
        }
        match stream {
            Some(w) if cmd == "claim" => out.push(StreamCommand::Claim(w.clone())),
            Some(w) => out.push(StreamCommand::Release(w.clone())),
            None => out.push(StreamCommand::Bare(cmd)),
        }
    }
    out
}

/// A command head as compared: basename, `.exe`/`.cmd`/`.bat` dropped, lower case.
pub fn head_name(word: &str) -> String {
    let base = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
        .to_ascii_lowercase();
    for ext in [".exe", ".cmd", ".bat"] {
        if let Some(stem) = base.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LockRecord;

    fn lock(ctx: &Ctx, heartbeat_ms: u64, client_pid: u32) -> LockRecord {
        let record = LockRecord {
            cwd: ctx.root.display().to_string(),
            client_pid: Some(client_pid),
            client_start: liveness::start_time(client_pid),
            ..crate::state::tests::record("api", heartbeat_ms)
        };
        ctx.layout.write_lock(&record).unwrap();
        record
    }

    #[test]
    fn heartbeat_is_throttled_unless_the_client_process_changed() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::new(dir.path().to_path_buf(), Config::default());
        let me = std::process::id();
        let recent = ctx.now - 5_000;
        let record = lock(&ctx, recent, me);
        let (mut locks, _) = ctx.layout.read_locks();
        heartbeat(&ctx, &record.session_id, Some(me), &mut locks);
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(
            held.heartbeat_ms, recent,
            "same process, within the throttle"
        );

        // The session was resumed: a new client process, 5 s after the last heartbeat.
        lock(&ctx, recent, u32::MAX - 1);
        let (mut locks, _) = ctx.layout.read_locks();
        assert!(locks[0].orphaned());
        heartbeat(&ctx, &record.session_id, Some(me), &mut locks);
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.heartbeat_ms, ctx.now);
        assert_eq!(held.record.client_pid, Some(me));
        assert!(!held.orphaned());
        assert_eq!(
            locks[0].record.client_pid,
            Some(me),
            "the caller's copy too"
        );
        assert!(!locks[0].orphaned());
    }
}
