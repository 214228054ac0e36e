//! `build-renderer`: the one sanctioned way to build the renderer. Two builds writing `dist/` at
//! once mix two builds' files, so every build runs under the OS lock `session-lock/build.lock`
//! (released by the OS when its holder dies, whatever the way).
//!
//! ```text
//! session-lock/
//!   build.lock                 the OS lock (content unused)
//!   build.holder.json          who holds it: written after taking the lock, removed before
//!                              releasing it; left behind only when the holder died
//!   build.queue/<pid>-<start>.json
//!                              one file per waiting process, removed when it stops waiting
//! ```
//!
//! A holder record whose process is gone says the last build was interrupted; when that build's
//! own process is still running (its parent was killed, not the build), the next holder waits
//! for it to end before starting, so two builds never overlap.

use crate::exit::{Code, fail};
use crate::filelock::FileLock;
use crate::state::{Layout, short_id};
use crate::tools::{caller_session, repo_root, shell};
use crate::{atomic, config::Config, liveness, time};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TOOL: &str = "build-renderer";

/// The holder record, next to `build.lock`.
pub const HOLDER_FILE: &str = "build.holder.json";
/// The waiters' folder, next to `build.lock`.
pub const QUEUE_DIR: &str = "build.queue";

/// How often a waiter tries the lock again.
const POLL: Duration = Duration::from_millis(200);

/// A process that holds the build lock or waits for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Party {
    pub pid: u32,
    /// The process start time (pids are reused), as `liveness::start_time` gives it.
    #[serde(default)]
    pub proc_start: Option<String>,
    /// `CLAUDE_CODE_SESSION_ID` of the calling session, when it ran inside one.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The stream whose lock names that session.
    #[serde(default)]
    pub stream: Option<String>,
    /// The build command, as shown to people.
    pub command: String,
    /// When it took the lock (holder) or started waiting (waiter), UTC ISO.
    pub since: String,
    /// The build's own process, once started (holder only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_start: Option<String>,
    /// The value of [`BUILD_TAG_VAR`] in the build's environment, recorded before the build
    /// starts (holder only): a holder killed before it could record `buildPid` still names its
    /// build this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_tag: Option<String>,
}

/// The environment variable every build runs with, naming the holder that started it.
pub const BUILD_TAG_VAR: &str = "SESSION_LOCK_BUILD";

impl Party {
    fn me(layout: &Layout, command: &str) -> Party {
        let pid = std::process::id();
        let session_id = caller_session();
        let stream = session_id.as_deref().and_then(|id| stream_of(layout, id));
        Party {
            pid,
            proc_start: liveness::start_time(pid),
            session_id,
            stream,
            command: command.to_string(),
            since: time::iso(time::now_ms()),
            build_pid: None,
            build_start: None,
            build_tag: None,
        }
    }

    pub fn is_alive(&self) -> bool {
        liveness::is_alive(self.pid, self.proc_start.as_deref())
    }

    /// The build process this holder started, when it is still running.
    pub fn build_running(&self) -> Option<u32> {
        match (self.build_pid, &self.build_tag) {
            (Some(pid), _) => liveness::is_alive(pid, self.build_start.as_deref()).then_some(pid),
            // Killed between starting the build and recording its pid: the build (or what it
            // started) still carries the tag.
            (None, Some(tag)) => liveness::find_by_env(BUILD_TAG_VAR, tag),
            (None, None) => None,
        }
    }

    /// `stream api (session 3f2a9c1e), pid 4242, `npx vite build`, since 2026-…Z (42s ago)`
    pub fn describe(&self, now_ms: u64) -> String {
        let who = match (&self.stream, &self.session_id) {
            (Some(s), Some(id)) => format!("stream {s} (session {}), ", short_id(id)),
            (None, Some(id)) => format!("session {}, ", short_id(id)),
            _ => String::new(),
        };
        let ago = time::parse_iso(&self.since)
            .map(|t| format!(" ({} ago)", time::age(now_ms.saturating_sub(t))))
            .unwrap_or_default();
        format!(
            "{who}pid {}, `{}`, since {}{ago}",
            self.pid, self.command, self.since
        )
    }

    fn key(&self) -> (u32, String) {
        (self.pid, self.since.clone())
    }
}

/// The stream whose live lock names `session_id`, if any.
fn stream_of(layout: &Layout, session_id: &str) -> Option<String> {
    let (held, _) = layout.read_locks();
    held.into_iter()
        .find(|h| h.record.session_id == session_id && !h.done)
        .map(|h| h.record.stream)
}

/// What `build-renderer` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub repo: Option<PathBuf>,
    pub json: bool,
    /// Report the holder and the queue; build nothing.
    pub status: bool,
    /// Fail with `Busy` instead of waiting.
    pub no_wait: bool,
    /// Give up waiting after this long (`Timeout`).
    pub timeout: Option<Duration>,
    /// Run this instead of the configured build (argv, no shell).
    pub command: Vec<String>,
    /// No progress on stderr while waiting.
    pub quiet: bool,
}

/// How a run ended: a code of the suite's table, or the build's own exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    Code(Code),
    Build(u8),
}

/// The process exit for a run: the build's own status when the build ran, else the table's.
pub fn finish(json: bool, result: anyhow::Result<Finished>) -> std::process::ExitCode {
    match result {
        Ok(Finished::Build(n)) => {
            let _ = std::io::stdout().flush();
            std::process::ExitCode::from(n)
        }
        Ok(Finished::Code(code)) => crate::cli::finish(TOOL, Ok(code)),
        Err(e) => crate::cli::finish_json(TOOL, json, Err(e)),
    }
}

/// Where the lock's companions live.
#[derive(Clone, Debug)]
pub struct BuildPaths {
    pub lock: PathBuf,
    pub holder: PathBuf,
    pub queue: PathBuf,
}

impl BuildPaths {
    pub fn new(layout: &Layout) -> BuildPaths {
        BuildPaths {
            lock: layout.build_lock(),
            holder: layout.dir.join(HOLDER_FILE),
            queue: layout.dir.join(QUEUE_DIR),
        }
    }

    /// The holder record; `None` when there is none or it cannot be read (a torn record is
    /// impossible: it is written atomically).
    pub fn read_holder(&self) -> Option<Party> {
        let text = atomic::read_optional(&self.holder).ok()??;
        serde_json::from_str(&text).ok()
    }

    /// Live waiters, oldest first, and how many records named dead processes.
    /// Every waiter record in the queue folder, with its path; `None` for one that cannot be read.
    fn queue_entries(&self) -> Vec<(PathBuf, Option<Party>)> {
        let Ok(entries) = std::fs::read_dir(&self.queue) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                name.ends_with(".json") && !name.starts_with('.')
            })
            .map(|e| {
                let party = atomic::read_optional(&e.path())
                    .ok()
                    .flatten()
                    .and_then(|t| serde_json::from_str::<Party>(&t).ok());
                (e.path(), party)
            })
            .collect()
    }

    pub fn read_queue(&self) -> (Vec<Party>, usize) {
        let mut live = Vec::new();
        let mut dead = 0;
        for (_, party) in self.queue_entries() {
            match party {
                Some(p) if p.is_alive() => live.push(p),
                _ => dead += 1,
            }
        }
        live.sort_by(|a, b| a.since.cmp(&b.since).then(a.pid.cmp(&b.pid)));
        (live, dead)
    }

    /// Removes the records of waiters that are gone.
    fn prune_queue(&self) {
        for (path, party) in self.queue_entries() {
            if !party.is_some_and(|p| p.is_alive()) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// This process's place in the queue; leaves it when dropped.
struct QueueEntry {
    path: PathBuf,
}

impl QueueEntry {
    fn join(paths: &BuildPaths, me: &Party) -> std::io::Result<QueueEntry> {
        crate::atomic::create_dirs(&paths.queue)?;
        paths.prune_queue();
        let start = me.proc_start.as_deref().unwrap_or("0");
        let path = paths.queue.join(format!("{}-{start}.json", me.pid));
        let text = serde_json::to_string_pretty(me).map_err(std::io::Error::other)?;
        atomic::write_atomic(&path, text.as_bytes())?;
        Ok(QueueEntry { path })
    }
}

impl Drop for QueueEntry {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The holder record while this process holds the lock; removed when dropped (before the lock
/// is released, since the lock is dropped after it).
struct HolderRecord {
    path: PathBuf,
}

impl HolderRecord {
    fn write(paths: &BuildPaths, me: &Party) -> std::io::Result<HolderRecord> {
        let text = serde_json::to_string_pretty(me).map_err(std::io::Error::other)?;
        atomic::write_atomic(&paths.holder, text.as_bytes())?;
        Ok(HolderRecord {
            path: paths.holder.clone(),
        })
    }

    fn update(&self, me: &Party) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(me).map_err(std::io::Error::other)?;
        atomic::write_atomic(&self.path, text.as_bytes())
    }
}

impl Drop for HolderRecord {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What `--status` reports.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The lock file.
    pub lock: String,
    /// A live process holds the lock.
    pub holding: bool,
    /// The holder record: the live holder, or the last one when it died without releasing
    /// (`alive: false`).
    pub holder: Option<HolderView>,
    /// Live waiters, oldest first.
    pub queue: Vec<Party>,
    /// Queue records of processes that are gone (ignored).
    pub stale_waiters: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HolderView {
    #[serde(flatten)]
    pub party: Party,
    pub alive: bool,
    /// The build started by a holder that died is still running.
    pub orphan_build_running: bool,
}

/// Reads the holder and the queue without touching the lock.
pub fn status(layout: &Layout) -> Status {
    let paths = BuildPaths::new(layout);
    let holder = paths.read_holder().map(|p| {
        let alive = p.is_alive();
        HolderView {
            orphan_build_running: !alive && p.build_running().is_some(),
            party: p,
            alive,
        }
    });
    let (queue, stale_waiters) = paths.read_queue();
    Status {
        lock: paths.lock.display().to_string(),
        holding: holder.as_ref().is_some_and(|h| h.alive),
        holder,
        queue,
        stale_waiters,
    }
}

fn print_status(s: &Status) -> anyhow::Result<()> {
    let now = time::now_ms();
    let mut out = String::new();
    match &s.holder {
        Some(h) if h.alive => {
            out.push_str(&format!("build lock: held by {}\n", h.party.describe(now)));
        }
        Some(h) => {
            out.push_str(&format!(
                "build lock: free; the last holder died without releasing it ({})\n",
                h.party.describe(now)
            ));
            if h.orphan_build_running {
                out.push_str(&format!(
                    "  its build (pid {}) is still running; the next build waits for it\n",
                    h.party.build_pid.unwrap_or(0)
                ));
            }
        }
        None => out.push_str("build lock: free\n"),
    }
    if s.queue.is_empty() {
        out.push_str("queue: empty\n");
    } else {
        out.push_str(&format!("queue: {} waiting\n", s.queue.len()));
        for w in &s.queue {
            out.push_str(&format!("  {}\n", w.describe(now)));
        }
    }
    if s.stale_waiters > 0 {
        out.push_str(&format!(
            "({} queue record(s) of processes that are gone, ignored)\n",
            s.stale_waiters
        ));
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

/// One line on stderr, prefixed with the tool's name.
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{TOOL}: {text}");
}

fn holder_text(paths: &BuildPaths, now: u64) -> String {
    match paths.read_holder() {
        Some(h) if h.is_alive() => format!("held by {}", h.describe(now)),
        Some(h) => format!(
            "held; the holder record names a process that is gone ({}), a new holder is starting",
            h.describe(now)
        ),
        None => "held by a process that has not written its holder record yet".into(),
    }
}

/// What the build summary says in `--json` mode.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary<'a> {
    command: &'a str,
    exit_code: Option<i32>,
    signal: Option<i32>,
    waited_ms: u64,
    duration_ms: u64,
    interrupted_previous: Option<&'a Party>,
}

/// Runs `build-renderer`.
pub fn run(opts: &Options) -> anyhow::Result<Finished> {
    let root = repo_root(opts.repo.as_deref())?;
    let layout = Layout::new(&root);
    if opts.status {
        let s = status(&layout);
        if opts.json {
            crate::cli::print_json(&s)?;
        } else {
            print_status(&s)?;
        }
        return Ok(Finished::Code(Code::Success));
    }
    let config = Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let (mut command, shown) = if opts.command.is_empty() {
        let c = config.build.command.clone();
        if let Some(missing) = super::missing_project_tool(&root, &c, "build.command") {
            return Err(fail(Code::NotFound, missing));
        }
        (shell(&c), c)
    } else {
        let mut c = Command::new(&opts.command[0]);
        c.args(&opts.command[1..]);
        (c, shell_words(&opts.command))
    };
    layout
        .ensure()
        .with_context(|| format!("cannot create {}", layout.dir.display()))?;
    let paths = BuildPaths::new(&layout);
    let mut me = Party::me(&layout, &shown);
    let started = Instant::now();
    let deadline = opts.timeout.map(|t| started + t);
    let lock = acquire(&paths, &me, opts, &config, deadline)?;
    let waited = started.elapsed();

    // A holder record left behind means the last holder died mid-build.
    let previous = paths.read_holder();
    if let Some(prev) = &previous {
        say(&format!(
            "the previous holder died without releasing the lock ({}); its output may be incomplete",
            prev.describe(time::now_ms())
        ));
        wait_for_orphan(prev, opts, deadline)?;
    }

    let now = time::now_ms();
    me.since = time::iso(now);
    let tag = format!("{}-{now}", me.pid);
    command.env(BUILD_TAG_VAR, &tag);
    me.build_tag = Some(tag);
    let record = HolderRecord::write(&paths, &me)
        .with_context(|| format!("cannot write {}", paths.holder.display()))?;
    if waited >= POLL && !opts.quiet {
        say(&format!(
            "got the build lock after {}; running `{shown}`",
            seconds(waited)
        ));
    }
    command.current_dir(&root).stdin(Stdio::inherit());
    if opts.json {
        // Stdout carries the one JSON summary; the build's output goes to stderr.
        command.stdout(Stdio::from(std::io::stderr()));
    }
    let build_started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| fail(Code::Failure, format!("cannot start `{shown}`: {e}")))?;
    me.build_pid = Some(child.id());
    me.build_start = liveness::start_time(child.id());
    if let Err(e) = record.update(&me) {
        say(&format!("cannot record the build's pid: {e}"));
    }
    let status = child
        .wait()
        .with_context(|| format!("cannot wait for `{shown}`"))?;
    let duration = build_started.elapsed();
    drop(record);
    drop(lock);

    let (code, signal) = exit_parts(status);
    if opts.json {
        crate::cli::print_json(&Summary {
            command: &shown,
            exit_code: code,
            signal,
            waited_ms: waited.as_millis() as u64,
            duration_ms: duration.as_millis() as u64,
            interrupted_previous: previous.as_ref(),
        })?;
    }
    match (code, signal) {
        (Some(n), _) => {
            if n != 0 {
                say(&format!(
                    "`{shown}` failed with exit {n} after {}",
                    seconds(duration)
                ));
            }
            Ok(Finished::Build(u8::try_from(n).unwrap_or(1)))
        }
        (None, Some(sig)) => Err(fail(
            Code::Failure,
            format!("`{shown}` was killed by signal {sig}"),
        )),
        (None, None) => Err(fail(Code::Failure, format!("`{shown}` ended abnormally"))),
    }
}

/// Takes the lock: now, or after waiting in the queue.
fn acquire(
    paths: &BuildPaths,
    me: &Party,
    opts: &Options,
    config: &Config,
    deadline: Option<Instant>,
) -> anyhow::Result<FileLock> {
    let open_err = |e: std::io::Error| {
        anyhow::Error::new(e).context(format!("cannot lock {}", paths.lock.display()))
    };
    if let Some(lock) = FileLock::try_exclusive(&paths.lock).map_err(open_err)? {
        return Ok(lock);
    }
    if opts.no_wait {
        return Err(fail(
            Code::Busy,
            format!(
                "the build lock is {}; not waiting (--no-wait)",
                holder_text(paths, time::now_ms())
            ),
        ));
    }
    let _entry = QueueEntry::join(paths, me)
        .with_context(|| format!("cannot join the queue in {}", paths.queue.display()))?;
    let started = Instant::now();
    let mut progress = super::progress::Progress::new(TOOL, opts.quiet, opts.timeout);
    let report = Duration::from_secs(config.build.report_seconds.max(1));
    let mut next_report = started + report;
    let mut shown: Option<Option<(u32, String)>> = None;
    let mut unsettled_since: Option<Instant> = None;
    loop {
        if let Some(lock) = FileLock::try_exclusive(&paths.lock).map_err(open_err)? {
            return Ok(lock);
        }
        let now = Instant::now();
        let holder = paths.read_holder();
        let key = holder.as_ref().map(Party::key);
        // No record, or one naming a process that is gone, while the lock is held: a new
        // holder is starting. Give it a moment to write its record before reporting.
        let settled = if holder.as_ref().is_some_and(Party::is_alive) {
            unsettled_since = None;
            true
        } else {
            let since = *unsettled_since.get_or_insert(now);
            now.duration_since(since) >= Duration::from_secs(1)
        };
        if progress.is_live() {
            let (queue, _) = paths.read_queue();
            let place = queue
                .iter()
                .position(|w| w.pid == me.pid)
                .map(|i| format!(" (you are {} of {} in the queue)", i + 1, queue.len()))
                .unwrap_or_default();
            progress.update(
                &format!("{key:?}"),
                &format!(
                    "the build lock{place}, {}",
                    holder_text(paths, time::now_ms())
                ),
            );
        } else if opts.quiet {
        } else if settled && shown.as_ref() != Some(&key) {
            let verb = if shown.is_none() {
                "waiting: the build lock is"
            } else {
                "the build lock changed hands; now"
            };
            say(&format!("{verb} {}", holder_text(paths, time::now_ms())));
            shown = Some(key);
        }
        if now >= next_report && !progress.is_live() && !opts.quiet {
            say(&format!(
                "still waiting ({}s); {}",
                started.elapsed().as_secs(),
                holder_text(paths, time::now_ms())
            ));
            next_report += report;
        }
        if let Some(d) = deadline
            && now >= d
        {
            return Err(fail(
                Code::Timeout,
                format!(
                    "no build lock within {}s; it is {}",
                    opts.timeout.unwrap_or_default().as_secs(),
                    holder_text(paths, time::now_ms())
                ),
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// Waits until the build of a holder that died has ended (its parent was killed, the build was
/// not), so two builds never write `dist/` at once.
fn wait_for_orphan(prev: &Party, opts: &Options, deadline: Option<Instant>) -> anyhow::Result<()> {
    let Some(pid) = prev.build_running() else {
        return Ok(());
    };
    if opts.no_wait {
        return Err(fail(
            Code::Busy,
            format!("the interrupted build (pid {pid}) is still running; not waiting (--no-wait)"),
        ));
    }
    say(&format!(
        "its build (pid {pid}) is still running; waiting for it to end"
    ));
    while prev.build_running().is_some() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(fail(
                Code::Timeout,
                format!(
                    "the interrupted build (pid {pid}) was still running after {}s",
                    opts.timeout.unwrap_or_default().as_secs()
                ),
            ));
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// The exit code, or the signal that ended the process.
fn exit_parts(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (status.code(), status.signal())
    }
    #[cfg(not(unix))]
    {
        (status.code(), None)
    }
}

/// `2.4s`, for durations people read.
pub fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// An argv shown as one line, quoting words that need it.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| crate::shell::word::quote_posix(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn party(pid: u32, start: Option<String>) -> Party {
        Party {
            pid,
            proc_start: start,
            session_id: Some("3f2a9c1e-0000-4000-8000-000000000000".into()),
            stream: Some("api".into()),
            command: "npx vite build".into(),
            since: time::iso(time::now_ms()),
            build_pid: None,
            build_start: None,
            build_tag: None,
        }
    }

    #[test]
    fn describe_names_stream_session_pid_and_command() {
        let p = party(4242, None);
        let d = p.describe(time::now_ms());
        assert!(d.starts_with("stream api (session 3f2a9c1e), pid 4242, `npx vite build`, since "));
        assert!(d.ends_with("(0s ago)"), "{d}");
    }

    #[test]
    fn status_reports_a_dead_holder_as_not_holding() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        layout.ensure().unwrap();
        let paths = BuildPaths::new(&layout);
        let s = status(&layout);
        assert!(!s.holding && s.holder.is_none() && s.queue.is_empty());

        let dead = crate::liveness::test_process::exited();
        HolderRecord::write(&paths, &party(dead, None))
            .map(std::mem::forget)
            .unwrap();
        let s = status(&layout);
        assert!(!s.holding);
        assert!(!s.holder.as_ref().unwrap().alive);

        let me = std::process::id();
        HolderRecord::write(&paths, &party(me, liveness::start_time(me)))
            .map(std::mem::forget)
            .unwrap();
        assert!(status(&layout).holding);
    }

    #[test]
    fn queue_ignores_and_prunes_dead_waiters() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let paths = BuildPaths::new(&layout);
        std::fs::create_dir_all(&paths.queue).unwrap();
        std::fs::write(
            paths.queue.join("1-1.json"),
            serde_json::to_string(&party(u32::MAX - 1, Some("1".into()))).unwrap(),
        )
        .unwrap();
        std::fs::write(paths.queue.join("junk.json"), "{").unwrap();
        let me = std::process::id();
        let entry = QueueEntry::join(&paths, &party(me, liveness::start_time(me))).unwrap();
        let (live, _) = paths.read_queue();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].pid, me);
        assert_eq!(
            std::fs::read_dir(&paths.queue).unwrap().count(),
            1,
            "dead and broken records pruned on join"
        );
        drop(entry);
        assert_eq!(paths.read_queue(), (vec![], 0));
    }

    #[test]
    fn shell_words_quote_what_needs_it() {
        let argv: Vec<String> = ["sh", "-c", "echo 'hi' >> log", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_words(&argv), r#"sh -c 'echo '\''hi'\'' >> log' ''"#);
    }
}
