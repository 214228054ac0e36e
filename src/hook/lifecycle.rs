//! The lock lifecycle as the guard sees it: claim recording, heartbeat, ownership blocking,
//! protection of the protocol's own files, and the session registry.
//!
//! Only the hook receives the real `session_id`, so the hook (not `claim`) writes the lock when
//! it sees a Bash call that runs `claim <stream>`; `claim` then reads it back.

use super::{Payload, plan_edit};
use crate::config::Config;
use crate::globs::Owns;
use crate::paths::lexical::Rooted;
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
    /// Claude Code's user folders whose settings files are frozen (`$CLAUDE_CONFIG_DIR`, and
    /// `~/.claude`).
    pub user_settings_dirs: Vec<PathBuf>,
}

/// The folders outside the repo that are frozen like the protocol files (`env`'s), each as a
/// path map: making one resolves its folder's real path, a few system calls paid once a call
/// rather than once per write target of a command.
struct FrozenDirs {
    /// The guard binary's folder; `None` when it holds the repo (then it is not the suite's).
    binary: Option<RepoPaths>,
    user_settings: Vec<RepoPaths>,
    state_home: Option<RepoPaths>,
}

impl FrozenDirs {
    fn new(env: &Env, root: &Path, cwd: &str) -> FrozenDirs {
        let map = |d: &Path| RepoPaths::new(d, crate::paths::default_case_insensitive());
        let root = root.to_string_lossy();
        FrozenDirs {
            binary: env
                .binary_dir
                .as_deref()
                .map(map)
                .filter(|b| !under_dir(b, &root, cwd, Rooted::CurrentDrive)),
            user_settings: env.user_settings_dirs.iter().map(|d| map(d)).collect(),
            state_home: env.state_home.as_deref().map(map),
        }
    }
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
            user_settings_dirs: crate::sessions::claude::config_dir()
                .into_iter()
                .chain(crate::sessions::home_dir().map(|h| h.join(".claude")))
                .collect(),
        }
    }
}

/// One word of a command, as the shell analysis gives it.
pub use crate::shell::Word;

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
    /// What the user must be told once per session (a config that could not be loaded, …).
    pub notices: Vec<super::notices::Notice>,
    /// The frozen folders outside the repo, made at the call's first write check.
    frozen: std::cell::OnceCell<FrozenDirs>,
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
            notices: Vec::new(),
            frozen: std::cell::OnceCell::new(),
        }
    }

    fn stale_ms(&self) -> u64 {
        self.config.heartbeat_stale_ms()
    }
}

fn describe(held: &Held, now: u64) -> String {
    if held.record.session_id.is_empty() {
        // A stand-in for a holder that cannot be known: it says why.
        return held.record.cwd.clone();
    }
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
    // Decided under the state lock, the fast path too: a lock read before it could be one
    // another claim is replacing (a released stream's done marker already gone, the new lock
    // not yet written), and a re-claim passed on it would make two winners.
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
    if unchanged_re_claim(ctx, p, env, name) {
        return Ok(());
    }
    let plan = &claimed_plan(ctx, name)?;
    let existing = ctx.layout.read_lock(name).map_err(|bad| {
        format!("session-lock: cannot claim '{name}': {bad}; fix or delete that file")
    })?;
    if existing
        .as_ref()
        .is_none_or(|h| h.record.session_id != p.session_id)
        && let Some(why) = late_protected_plan(ctx, p, plan)
    {
        return Err(why);
    }
    let mut record = record_for(ctx, p, env, plan);
    if let Some(held) = &existing
        && writes_nothing(ctx, p, held, &record)
    {
        return Ok(());
    }
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
                if record.owns != held.record.owns
                    && let Some(other) = others_live(ctx, &p.session_id)
                {
                    return Err(format!(
                        "session-lock: the plan of '{name}' now owns [{}], not the [{}] it was claimed with; a stream's owns cannot change while another stream is live ('{other}')",
                        record.owns.join(", "),
                        held.record.owns.join(", ")
                    ));
                }
            }
            if !mine && !held.done {
                record.taken_from = Some(held.record.session_id.clone());
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

/// The plan declaring `name`, read through the plan cache: its own line, and of the others only
/// their stat and the stream their line names (any plan may declare any stream, and a stream
/// declared twice is neither's). When no one plan declares it, every plan is loaded for the
/// message, which lists the streams and the broken plans.
fn claimed_plan(ctx: &Ctx, name: &str) -> Result<plans::Stream, String> {
    let (root, glob) = (&ctx.root, &ctx.config.plan_glob);
    let cannot = |e: plans::PlanError| format!("session-lock: cannot claim '{name}': {e}");
    if let Some(plan) =
        crate::plan_cache::declaring(root, glob, &ctx.layout, name).map_err(cannot)?
    {
        return Ok(plan);
    }
    let (mut streams, broken) =
        crate::plan_cache::load_each(root, glob, &ctx.layout).map_err(cannot)?;
    match streams.iter().position(|s| s.name == name) {
        Some(i) => Ok(streams.swap_remove(i)),
        None => Err(format!(
            "session-lock: {} (plans: {glob})",
            plans::undeclared(name, &streams, &broken, "; "),
        )),
    }
}

/// The lock a claim of `plan` by this call's session records (claimed and beating now).
fn record_for(ctx: &Ctx, p: &Payload, env: &Env, plan: &plans::Stream) -> LockRecord {
    let now_iso = time::iso(ctx.now);
    LockRecord {
        stream: plan.name.clone(),
        session_id: p.session_id.clone(),
        owns: plan.owns.clone(),
        plan: plan.plan.clone(),
        milestone: plan.milestone,
        claimed_at: now_iso.clone(),
        heartbeat_at: now_iso,
        round: ctx.layout.round(),
        cwd: p.cwd.clone(),
        client_pid: env.client_pid,
        client_start: env.client_pid.and_then(liveness::start_time),
        taken_from: None,
    }
}

/// A re-claim that changes nothing (the caller's own live lock, the same plan, owns and
/// client) while the heartbeat is fresh writes nothing: the lock on disk already says it all.
fn writes_nothing(ctx: &Ctx, p: &Payload, held: &Held, record: &LockRecord) -> bool {
    let same = LockRecord {
        claimed_at: held.record.claimed_at.clone(),
        heartbeat_at: held.record.heartbeat_at.clone(),
        ..record.clone()
    } == held.record;
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    held.record.session_id == p.session_id
        && !held.done
        && same
        && ctx.now.saturating_sub(held.heartbeat_ms) < throttle
}

/// The re-claim of a stream this session holds, whose plan (read alone, now) still declares it
/// as the lock records it: nothing to record, and no other plan to read. Anything else (a
/// first claim, a changed plan, a stale heartbeat) goes through the whole claim. Called under the
/// state lock.
fn unchanged_re_claim(ctx: &Ctx, p: &Payload, env: &Env, name: &str) -> bool {
    let Ok(Some(held)) = ctx.layout.read_lock(name) else {
        return false;
    };
    if held.record.session_id != p.session_id || held.done {
        return false;
    }
    crate::plan_cache::read_one(&ctx.root, &held.record.plan)
        .filter(|plan| plan.name == name)
        .is_some_and(|plan| writes_nothing(ctx, p, &held, &record_for(ctx, p, env, &plan)))
}

/// Stand-ins for corrupt lock files ([`Held::stand_in`]), with the stream's plan's `owns`.
pub fn corrupt_stand_ins(ctx: &Ctx, bad: &[crate::state::BadLock]) -> Vec<Held> {
    if bad.is_empty() {
        return Vec::new();
    }
    let Ok((streams, _)) =
        crate::plan_cache::load_each(&ctx.root, &ctx.config.plan_glob, &ctx.layout)
    else {
        return Vec::new();
    };
    bad.iter()
        .filter_map(|b| {
            let name = b.stream();
            let plan = streams.iter().find(|s| s.name == name)?;
            Some(Held::stand_in(
                &name,
                plan.owns.clone(),
                &plan.plan,
                plan.milestone,
                ctx.now,
                b.why(),
            ))
        })
        .collect()
}

/// A plan that owns protocol files (`protectedPaths`) and was written after another session's
/// live claim cannot be claimed: a stream declared mid-round would own the protocol itself.
fn late_protected_plan(ctx: &Ctx, p: &Payload, plan: &plans::Stream) -> Option<String> {
    let ci = ctx.paths.case_insensitive();
    let owns_protocol = crate::globs::OverlapSet::new(&plan.owns, ci)
        .first_overlap(&crate::globs::OverlapSet::new(
            &ctx.config.protected_paths,
            ci,
        ))
        .is_some();
    if !owns_protocol {
        return None;
    }
    let written = std::fs::metadata(ctx.root.join(&plan.plan))
        .and_then(|m| m.modified())
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    let (locks, _) = ctx.layout.read_locks();
    let earlier = locks.iter().find(|h| {
        h.record.session_id != p.session_id
            && h.is_live(ctx.now, ctx.stale_ms())
            && time::parse_iso(&h.record.claimed_at).is_some_and(|c| c < written)
    })?;
    Some(format!(
        "session-lock: the plan of '{}' ({}) owns protocol files and was written after stream '{}' was claimed; a stream that owns the protocol cannot be declared inside a round. Claim it when no other stream is live",
        plan.name, plan.plan, earlier.record.stream
    ))
}

/// Another session's live stream, if any.
fn others_live(ctx: &Ctx, session_id: &str) -> Option<String> {
    let (locks, _) = ctx.layout.read_locks();
    locks
        .into_iter()
        .find(|h| h.record.session_id != session_id && h.is_live(ctx.now, ctx.stale_ms()))
        .map(|h| h.record.stream)
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
///
/// Returns one line per heartbeat that could not be written (a read-only or full folder).
pub fn heartbeat(
    ctx: &Ctx,
    session_id: &str,
    client_pid: Option<u32>,
    locks: &mut [Held],
) -> Vec<(String, String)> {
    let mut failed = Vec::new();
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
    for i in due {
        let stream = locks[i].record.stream.clone();
        match ctx.layout.touch_heartbeat_from(
            &stream,
            session_id,
            client_pid,
            ctx.now,
            STATE_LOCK_WAIT,
        ) {
            Ok(true) => match ctx.layout.read_lock(&stream) {
                Ok(Some(fresh)) => locks[i] = fresh,
                _ => {
                    locks[i].heartbeat_ms = ctx.now;
                    locks[i].record.heartbeat_at = time::iso(ctx.now);
                }
            },
            Ok(false) => {}
            Err(e) => failed.push((
                stream.clone(),
                format!(
                    "cannot write the heartbeat of stream '{stream}' to {}: {e}. The lock goes stale {} min after its last heartbeat and stops protecting its files; make session-lock/ writable",
                    ctx.layout.lock_path(&stream).display(),
                    ctx.config.heartbeat_stale_minutes
                ),
            )),
        }
    }
    failed
}

/// Words of an MCP tool name that make it a writer of the files its input names.
const WRITE_WORDS: &[&str] = &[
    "write", "edit", "create", "save", "put", "delete", "remove", "rm", "move", "mv", "rename",
    "copy", "cp", "patch", "update", "append", "replace", "mkdir", "upload", "insert", "apply",
];

/// The most paths taken from one call's input (a longer list is cut, each one still checked).
const MAX_TARGETS: usize = 256;

/// Every file a write tool names: each `mcpPathKeys` key present (a string, or a list of
/// strings), not only the first. An MCP call naming a plugin (`pluginId`) with a relative path
/// names a file in that plugin's folder (`reloadPlugin.pluginFolder`).
pub fn write_targets(cfg: &Config, root: &Path, p: &Payload) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(input) = p.tool_input.as_object() else {
        return out;
    };
    let plugin = p.mcp_tool().and_then(|_| {
        ["pluginId", "plugin_id", "plugin"]
            .iter()
            .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
            .filter(|id| plans::valid_stream_name(id))
    });
    let mut push = |raw: &str| {
        if out.len() >= MAX_TARGETS || raw.is_empty() {
            return;
        }
        let relative = !crate::paths::lexical::is_absolute(raw);
        match plugin {
            Some(id) if relative => {
                let folder = cfg.reload_plugin.plugin_folder.replace("{id}", id);
                out.push(root.join(folder).join(raw).to_string_lossy().into_owned());
            }
            _ => out.push(raw.to_string()),
        }
    };
    for key in &cfg.mcp_path_keys {
        match input.get(key.as_str()) {
            Some(serde_json::Value::String(v)) => push(v),
            Some(serde_json::Value::Array(list)) => list
                .iter()
                .filter_map(serde_json::Value::as_str)
                .for_each(&mut push),
            _ => {}
        }
    }
    out
}

/// Is this tool one that writes the files named in its input? The built-in writers by name;
/// an MCP tool by its tool part (case-insensitive) in `mcpWriteTools`, or by a writing word in
/// its name (`save_file`, `createDirectory`).
pub fn is_write_tool(cfg: &Config, p: &Payload) -> bool {
    if cfg.write_tools.iter().any(|t| t == &p.tool_name) {
        return true;
    }
    p.mcp_tool().is_some_and(|t| {
        cfg.mcp_write_tools
            .iter()
            .any(|w| w.eq_ignore_ascii_case(t))
            || crate::rules::mcp_name_words(t)
                .iter()
                .any(|w| WRITE_WORDS.contains(&w.as_str()))
    })
}

fn under_dir(paths: &RepoPaths, raw: &str, cwd: &str, how: Rooted) -> bool {
    !matches!(paths.locate_as(cwd, raw, how), RepoPath::Outside)
}

/// The millisecond a lock was claimed, for the earlier-claim rule (unreadable: latest).
fn claimed_ms(h: &Held) -> u64 {
    time::parse_iso(&h.record.claimed_at).unwrap_or(u64::MAX)
}

/// Who keeps `rel` among `live` locks: of the locks whose `owns` match, the earliest claim (ties
/// by stream name). A later claim cannot take a path an earlier live one owns, so a stream cannot
/// widen itself over another's files. A pure function over lock records, whatever their source.
pub fn owner_of<'a>(rel: &str, live: &[&'a Held], case_insensitive: bool) -> Option<&'a Held> {
    live.iter()
        .filter(|h| !crate::globs::cannot_match(&h.record.owns, rel, case_insensitive))
        .filter(|h| Owns::new(&h.record.owns, case_insensitive).is_ok_and(|o| o.is_match(rel)))
        .min_by(|a, b| (claimed_ms(a), &a.record.stream).cmp(&(claimed_ms(b), &b.record.stream)))
        .copied()
}

/// Ownership and self-protection for a write to `raw` (as the payload names it), read as a tool
/// that reads rooted paths `how` reads it: the file tools and PowerShell on the cwd's drive, Git
/// Bash below its MSYS root unless it names a drive mount.
pub fn check_write(
    ctx: &Ctx,
    p: &Payload,
    env: &Env,
    raw: &str,
    how: Rooted,
    locks: &LockSet,
) -> Result<(), String> {
    if !locks.any_live(ctx.now, ctx.stale_ms()) {
        return Ok(());
    }
    let ci = ctx.paths.case_insensitive();
    let rel = match ctx.paths.locate_as(&p.cwd, raw, how) {
        RepoPath::Inside(rel) => Some(rel),
        RepoPath::Root | RepoPath::Outside => None,
    };
    let what = protected(ctx, env, p, raw, how, rel.as_deref());
    // Only the locks the decision rests on are read: every lock for the protocol's own files and
    // the plans (frozen while any other lock is live), else the caller's and those that could
    // own `rel`.
    let is_plan = rel
        .as_deref()
        .is_some_and(|r| plan_edit::is_plan(&ctx.config.plan_glob, r, ci));
    let pool = match &rel {
        _ if what.is_some() || is_plan => locks.all(),
        Some(rel) => {
            let mut pool = locks.own(&p.session_id);
            pool.extend(locks.others_for(&p.session_id, rel, ci));
            pool
        }
        None => Vec::new(),
    };
    let live: Vec<&Held> = pool
        .iter()
        .filter(|h| h.is_live(ctx.now, ctx.stale_ms()))
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    let owner = rel.as_deref().and_then(|r| owner_of(r, &live, ci));
    let mine = owner.is_some_and(|h| h.record.session_id == p.session_id);
    // A protocol file is its owner's only when the owner names it (`.claude/**`), not through a
    // catch-all like `**`.
    let names_it = || {
        mine && owner
            .zip(rel.as_deref())
            .is_some_and(|(h, r)| crate::globs::names_explicitly(&h.record.owns, r, ci))
    };
    if let Some(what) = what
        && !names_it()
    {
        return Err(format!(
            "session-lock: {what} is part of the session-lock protocol and is frozen while a round runs ({} live lock(s)). Edit it only when no stream is active, or from the stream that owns it",
            live.len()
        ));
    }
    let Some(rel) = rel else { return Ok(()) };
    if let Some(other) = live.iter().find(|h| h.record.session_id != p.session_id)
        && plan_edit::is_plan(&ctx.config.plan_glob, &rel, ci)
        && let Some(why) = plan_edit::problem(p, &rel, &ctx.root.join(&rel), &other.record.stream)
    {
        return Err(why);
    }
    match owner {
        Some(h) if !mine => Err(format!(
            "session-lock: {rel} is owned by stream '{}' ({}). Edit only files your own stream owns; for a change here ask that stream's session, or wait for it: wait-milestone {} --stream <yours>",
            h.record.stream,
            describe(h, ctx.now),
            h.record.stream
        )),
        _ => Ok(()),
    }
}

/// What makes the write target part of the protocol, or `None`: a repo path under
/// `protectedPaths`, or the folder the guard binary runs from. A folder that holds the whole
/// repo (the guard copied to the repo root) is not the suite's, or every file would be frozen.
fn protected(
    ctx: &Ctx,
    env: &Env,
    p: &Payload,
    raw: &str,
    how: Rooted,
    rel: Option<&str>,
) -> Option<String> {
    let ci = ctx.paths.case_insensitive();
    if let Some(rel) = rel
        && !crate::globs::cannot_match(&ctx.config.protected_paths, rel, ci)
        && Owns::new(&ctx.config.protected_paths, ci).is_ok_and(|o| o.is_match(rel))
    {
        return Some(rel.to_string());
    }
    let frozen = ctx
        .frozen
        .get_or_init(|| FrozenDirs::new(env, &ctx.root, &p.cwd));
    if frozen
        .binary
        .as_ref()
        .is_some_and(|b| under_dir(b, raw, &p.cwd, how))
    {
        return Some(rel.unwrap_or(raw).to_string());
    }
    // User-scope Claude Code settings: `disableAllHooks` there switches the guard off too.
    for paths in &frozen.user_settings {
        if let RepoPath::Inside(f) = paths.locate_as(&p.cwd, raw, how)
            && USER_SETTINGS.iter().any(|s| f.eq_ignore_ascii_case(s))
        {
            return Some(format!("{raw} (user-scope Claude Code settings)"));
        }
    }
    // The per-user state home: the session registry that says who else works here.
    if let Some(home) = &frozen.state_home
        && under_dir(home, raw, &p.cwd, how)
    {
        return Some(format!("{raw} (the session-lock state home)"));
    }
    None
}

/// The settings files Claude Code reads from its user folder (`$CLAUDE_CONFIG_DIR`, `~/.claude`).
pub const USER_SETTINGS: [&str; 2] = ["settings.json", "settings.local.json"];

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
pub fn stream_commands<'a>(segments: impl IntoIterator<Item = &'a [Word]>) -> Vec<StreamCommand> {
    let mut out = Vec::new();
    for seg in segments {
        let Some(head) = seg.first() else { continue };
        let base = crate::shell::word::command_name(&head.text);
        let cmd = match &*base {
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
    fn a_re_claim_that_changes_nothing_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plans/r-ms-01-api");
        std::fs::create_dir_all(&plan).unwrap();
        std::fs::write(plan.join("plan.md"), "---\nowns: [src/api/**]\n---\n").unwrap();
        let ctx = Ctx::new(dir.path().to_path_buf(), Config::default());
        let p = Payload {
            session_id: "s-1".into(),
            cwd: ctx.root.display().to_string(),
            ..Payload::default()
        };
        let env = Env::default();
        claim(&ctx, &p, &env, &Word::plain("api")).unwrap();
        let first = std::fs::read(ctx.layout.lock_path("api")).unwrap();
        let later = Ctx {
            now: ctx.now + 1_000,
            ..Ctx::new(ctx.root.clone(), Config::default())
        };
        claim(&later, &p, &env, &Word::plain("api")).unwrap();
        assert_eq!(
            std::fs::read(ctx.layout.lock_path("api")).unwrap(),
            first,
            "same plan, fresh heartbeat: the lock stays as written"
        );
        // Past the heartbeat throttle the re-claim renews the heartbeat, and keeps claimedAt.
        let throttle = later.config.heartbeat_throttle_seconds * 1000;
        let much_later = Ctx {
            now: ctx.now + throttle + 1,
            ..Ctx::new(ctx.root.clone(), Config::default())
        };
        claim(&much_later, &p, &env, &Word::plain("api")).unwrap();
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.heartbeat_ms, much_later.now);
        assert_eq!(held.record.claimed_at, time::iso(ctx.now));
        // A plan that now owns more is written at once (no other stream is live).
        std::fs::write(
            plan.join("plan.md"),
            "---\nowns: [src/api/**, docs/**]\n---\n",
        )
        .unwrap();
        claim(&much_later, &p, &env, &Word::plain("api")).unwrap();
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.record.owns, vec!["src/api/**", "docs/**"]);
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
