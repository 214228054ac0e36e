//! The repo's `session-lock/` folder: who holds which stream, who is done, the round's history.
//!
//! ```text
//! session-lock/
//!   PROTOCOL.md, config.json   committed (the only files git keeps here)
//!   <stream>.lock              JSON LockRecord, written by the guard when a session claims
//!   <stream>.done              JSON DoneRecord, written by `release` after its gate
//!   build.lock                 OS lock held by `build-renderer` while it builds
//!   .state.lock                OS lock serializing every read-modify-write of this folder
//!   milestones/ms-NN.done      written when the last stream of milestone NN is released
//!   history/<timestamp>/       one folder per finished round (the archive step)
//! ```

pub mod round_index; // the live-lock set one guard call reads at a flat cost

use crate::filelock::FileLock;
use crate::{atomic, time};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The folder name inside the repo.
pub const DIR: &str = "session-lock";

/// What a `<stream>.lock` holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LockRecord {
    pub stream: String,
    pub session_id: String,
    pub owns: Vec<String>,
    pub plan: String,
    pub milestone: u32,
    pub claimed_at: String,
    pub heartbeat_at: String,
    pub round: u32,
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_start: Option<String>,
    /// The session whose stale lock this claim replaced: it is told at its next tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_from: Option<String>,
}

/// What a `<stream>.done` holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DoneRecord {
    pub stream: String,
    pub session_id: String,
    pub released_at: String,
    #[serde(default)]
    pub head: String,
}

/// A stream's state in the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamState {
    Unclaimed,
    Active,
    Stale,
    Done,
    /// The lock file exists but cannot be read: never finished, still protecting.
    Corrupt,
    /// The stream's plan cannot be read.
    Broken,
}

impl StreamState {
    pub fn as_str(self) -> &'static str {
        match self {
            StreamState::Unclaimed => "unclaimed",
            StreamState::Active => "active",
            StreamState::Stale => "stale",
            StreamState::Done => "done",
            StreamState::Corrupt => "corrupt",
            StreamState::Broken => "broken",
        }
    }
}

/// A lock file that could not be read, with the file.
#[derive(Debug, Clone)]
pub struct BadLock {
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for BadLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for BadLock {}

impl BadLock {
    /// What a stand-in for this file says when it blocks ([`Held::stand_in`]).
    pub fn why(&self) -> String {
        format!(
            "its lock file is corrupt, so the guard keeps protecting what its plan owns; fix or delete session-lock/{}.lock",
            self.stream()
        )
    }

    /// The stream the file is named for (`api` for `session-lock/api.lock`).
    pub fn stream(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".lock").to_string())
            .unwrap_or_default()
    }
}

/// A lock as read from disk, with what the round knows about it.
#[derive(Clone, Debug)]
pub struct Held {
    pub record: LockRecord,
    pub done: bool,
    pub heartbeat_ms: u64,
}

impl Held {
    /// What stands in for a holder that cannot be known (a lock file that cannot be read, a
    /// lease mirror that cannot be read): `owns` (the plan's, or what the round index last read
    /// from the file), claimed at the epoch (so the earlier-claim rule gives it every path it
    /// owns), live at `now`, held by no session. Broken state keeps protecting the stream's
    /// files instead of dropping protection silently. `why` takes the place of the working
    /// folder (a stand-in has none): it is what a block of those files says.
    pub fn stand_in(
        stream: &str,
        owns: Vec<String>,
        plan: &str,
        milestone: u32,
        now: u64,
        why: String,
    ) -> Held {
        Held {
            record: LockRecord {
                stream: stream.to_string(),
                session_id: String::new(),
                owns,
                plan: plan.to_string(),
                milestone,
                claimed_at: time::iso(0),
                heartbeat_at: time::iso(now),
                round: 0,
                cwd: why,
                client_pid: None,
                client_start: None,
                taken_from: None,
            },
            done: false,
            heartbeat_ms: now,
        }
    }

    pub fn age_ms(&self, now: u64) -> u64 {
        now.saturating_sub(self.heartbeat_ms)
    }

    /// Live: not done and the heartbeat is younger than the staleness limit. A live lock
    /// protects its files and its stream.
    pub fn is_live(&self, now: u64, stale_ms: u64) -> bool {
        !self.done && self.age_ms(now) < stale_ms
    }

    /// Where this lock stands in the earlier-claim rule: of the live locks owning one path, the
    /// smallest key keeps it (claimed first; ties by stream name; an unreadable time is latest).
    pub fn claim_order(&self) -> (u64, &str) {
        (
            crate::time::parse_iso(&self.record.claimed_at).unwrap_or(u64::MAX),
            &self.record.stream,
        )
    }

    pub fn state(&self, now: u64, stale_ms: u64) -> StreamState {
        if self.done {
            StreamState::Done
        } else if self.age_ms(now) < stale_ms {
            StreamState::Active
        } else {
            StreamState::Stale
        }
    }

    /// The client process that claimed it is known to be gone (a crash, or the session ended
    /// without releasing). The lock still protects its files until it goes stale, so a resumed
    /// session keeps them.
    pub fn orphaned(&self) -> bool {
        let start = self.record.client_start.as_deref();
        self.record
            .client_pid
            .is_some_and(|pid| !crate::liveness::is_alive(pid, start))
    }

    /// [`Held::orphaned`] within one look at many locks (each client pid read once).
    pub fn orphaned_in(&self, look: &mut crate::liveness::Look) -> bool {
        let start = self.record.client_start.as_deref();
        self.record
            .client_pid
            .is_some_and(|pid| !look.is_alive(pid, start))
    }
}

/// First 8 characters of a session id, for tables and messages.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Paths of the `session-lock/` folder of one repo.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            dir: root.join(DIR),
        }
    }

    pub fn lock_path(&self, stream: &str) -> PathBuf {
        self.dir.join(format!("{stream}.lock"))
    }

    pub fn done_path(&self, stream: &str) -> PathBuf {
        self.dir.join(format!("{stream}.done"))
    }

    pub fn build_lock(&self) -> PathBuf {
        self.dir.join("build.lock")
    }

    pub fn milestones(&self) -> PathBuf {
        self.dir.join("milestones")
    }

    pub fn milestone_done(&self, nn: u32) -> PathBuf {
        self.milestones().join(format!("ms-{nn:02}.done"))
    }

    pub fn history(&self) -> PathBuf {
        self.dir.join("history")
    }

    /// Creates the folder if needed.
    pub fn ensure(&self) -> std::io::Result<()> {
        crate::atomic::create_dirs(&self.dir)
    }

    /// Serializes read-modify-write of this folder. Waits at most `limit` (the guard passes a
    /// short one so it never hangs); `None` when it could not get the lock in time.
    pub fn lock_state(&self, limit: Duration) -> std::io::Result<Option<FileLock>> {
        self.ensure()?;
        FileLock::exclusive_within(&self.dir.join(".state.lock"), limit)
    }

    /// Reads one stream's lock; `Ok(None)` when there is none.
    pub fn read_lock(&self, stream: &str) -> Result<Option<Held>, BadLock> {
        let path = self.lock_path(stream);
        let text = match atomic::read_optional(&path) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(None),
            Err(e) => {
                return Err(BadLock {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        let held = self.parse_lock(&path, &text, |s| self.done_path(s).exists())?;
        if held.record.stream != stream {
            return Err(BadLock {
                reason: format!("names stream '{}', not '{stream}'", held.record.stream),
                path,
            });
        }
        Ok(Some(held))
    }

    /// `done`: is there a done marker for this stream?
    fn parse_lock(
        &self,
        path: &Path,
        text: &str,
        done: impl FnOnce(&str) -> bool,
    ) -> Result<Held, BadLock> {
        let record: LockRecord = serde_json::from_str(text).map_err(|e| BadLock {
            path: path.to_path_buf(),
            reason: format!("not a lock record: {e}"),
        })?;
        let heartbeat_ms = time::parse_iso(&record.heartbeat_at).ok_or_else(|| BadLock {
            path: path.to_path_buf(),
            reason: format!(
                "heartbeatAt '{}' is not a UTC timestamp",
                record.heartbeat_at
            ),
        })?;
        let done = done(&record.stream);
        Ok(Held {
            record,
            done,
            heartbeat_ms,
        })
    }

    /// Every `*.lock` but `build.lock`, sorted by stream; broken files come back as errors so
    /// callers decide (the guard skips them with a note, `status` reports them).
    pub fn read_locks(&self) -> (Vec<Held>, Vec<BadLock>) {
        let mut good = Vec::new();
        let mut bad = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return (good, bad);
        };
        // One listing gives the lock files and the done markers: a lock's done state is a name
        // looked up here, not one more file system call per lock. A marker that is a symbolic
        // link counts as `exists()` says (done only when it leads somewhere).
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        let mut done: std::collections::HashSet<String> = Default::default();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if let Some(stream) = name.to_str().and_then(|n| n.strip_suffix(".done")) {
                let link = entry.file_type().is_ok_and(|t| t.is_symlink());
                if !link || entry.path().exists() {
                    done.insert(stream.to_string());
                }
                continue;
            }
            let name = name.to_string_lossy();
            let Some(stream) = name.strip_suffix(".lock") else {
                continue;
            };
            if stream == "build" || stream.is_empty() || name.starts_with('.') {
                continue;
            }
            files.push((stream.to_string(), entry.path()));
        }
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut buf = Vec::new();
        for (stream, path) in files {
            match atomic::read_text_into(&path, &mut buf) {
                Ok(text) => match self.parse_lock(&path, text, |s| done.contains(s)) {
                    Ok(h) if h.record.stream == stream => good.push(h),
                    Ok(h) => bad.push(BadLock {
                        path,
                        reason: format!("names stream '{}', not '{stream}'", h.record.stream),
                    }),
                    Err(e) => bad.push(e),
                },
                Err(e) => bad.push(BadLock {
                    path,
                    reason: e.to_string(),
                }),
            }
        }
        (good, bad)
    }

    pub fn write_lock(&self, record: &LockRecord) -> std::io::Result<()> {
        self.ensure()?;
        let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
        atomic::write_atomic(&self.lock_path(&record.stream), text.as_bytes())
    }

    /// Creates the lock only if none exists; `false` when one does.
    pub fn create_lock(&self, record: &LockRecord) -> std::io::Result<bool> {
        self.ensure()?;
        let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
        atomic::create_new(&self.lock_path(&record.stream), text.as_bytes())
    }

    pub fn write_done(&self, done: &DoneRecord) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(done).map_err(std::io::Error::other)?;
        atomic::write_atomic(&self.done_path(&done.stream), text.as_bytes())
    }

    /// Moves the heartbeat of `stream` to `now` if `session_id` still holds it and it is not
    /// done. Takes the state lock (waiting at most `limit`). `Ok(false)` when nothing was moved.
    pub fn touch_heartbeat(
        &self,
        stream: &str,
        session_id: &str,
        now: u64,
        limit: Duration,
    ) -> std::io::Result<bool> {
        self.touch_heartbeat_from(stream, session_id, None, now, limit)
    }

    /// Like [`Layout::touch_heartbeat`], from the session's client process `client_pid`: a
    /// lock that names another process (the session was resumed, so its client is a new
    /// process) is made to name this one, so it is no longer shown as orphaned.
    pub fn touch_heartbeat_from(
        &self,
        stream: &str,
        session_id: &str,
        client_pid: Option<u32>,
        now: u64,
        limit: Duration,
    ) -> std::io::Result<bool> {
        let Some(_guard) = self.lock_state(limit)? else {
            return Ok(false);
        };
        match self.read_lock(stream) {
            Ok(Some(mut held)) if held.record.session_id == session_id && !held.done => {
                held.record.heartbeat_at = time::iso(now);
                if let Some(pid) = client_pid
                    && held.record.client_pid != Some(pid)
                {
                    held.record.client_pid = Some(pid);
                    held.record.client_start = crate::liveness::start_time(pid);
                }
                let index = crate::round_index::Index::before_write(self);
                self.write_lock(&held.record)?;
                crate::round_index::Index::after_write(self, index, &[stream]);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The round number: how many rounds `history/` holds.
    pub fn round(&self) -> u32 {
        std::fs::read_dir(self.history())
            .map(|it| it.flatten().filter(|e| e.path().is_dir()).count() as u32)
            .unwrap_or(0)
    }

    /// Moves `*.lock` (not build.lock), `*.done` and `milestones/` into
    /// `history/<timestamp>/`. Returns that folder, or `None` when there was nothing to move.
    pub fn archive(&self, now_ms: u64) -> std::io::Result<Option<PathBuf>> {
        let mut moving: Vec<PathBuf> = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let is_round_file =
                    (name.ends_with(".lock") && name != "build.lock" && !name.starts_with('.'))
                        || name.ends_with(".done");
                if is_round_file || (name == "milestones" && e.path().is_dir()) {
                    moving.push(e.path());
                }
            }
        }
        if moving.is_empty() {
            return Ok(None);
        }
        let base = time::compact(now_ms);
        let mut target = self.history().join(&base);
        let mut n = 2;
        while target.exists() {
            target = self.history().join(format!("{base}-{n}"));
            n += 1;
        }
        // Each error names the file or folder it is about.
        let named =
            |what: String, e: std::io::Error| std::io::Error::new(e.kind(), format!("{what}: {e}"));
        crate::atomic::create_dirs(&target)
            .map_err(|e| named(format!("cannot create {}", target.display()), e))?;
        for from in moving {
            if let Some(name) = from.file_name() {
                std::fs::rename(&from, target.join(name)).map_err(|e| {
                    named(
                        format!("cannot move {} into {}", from.display(), target.display()),
                        e,
                    )
                })?;
            }
        }
        atomic::sync_dir(&self.dir)
            .map_err(|e| named(format!("cannot sync {}", self.dir.display()), e))?;
        Ok(Some(target))
    }
}

/// The repo root for a session: the git top level above `CLAUDE_PROJECT_DIR` when set (the
/// session's start folder, which may be a subfolder of the tree; the folder itself when it is
/// in no repo), else the git top level above `cwd`. Found by looking for `.git`, without
/// running git.
pub fn repo_root(cwd: &Path, project_dir: Option<&str>) -> Option<PathBuf> {
    if let Some(dir) = project_dir.filter(|d| !d.is_empty()) {
        let dir = Path::new(dir);
        return Some(git_top(dir).unwrap_or_else(|| dir.to_path_buf()));
    }
    git_top(cwd)
}

/// The nearest folder at or above `start` holding `.git` (a folder, or a file for worktrees).
pub fn git_top(start: &Path) -> Option<PathBuf> {
    let mut cur = Some(start);
    while let Some(dir) = cur {
        if dir.join(".git").exists() {
            return Some(dir.to_path_buf());
        }
        cur = dir.parent();
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Sets a folder's modification time. Windows opens a folder only with
    /// `FILE_FLAG_BACKUP_SEMANTICS`, and setting its time needs `FILE_WRITE_ATTRIBUTES`.
    pub(crate) fn set_folder_time(dir: &Path, t: std::time::SystemTime) {
        let mut open = std::fs::OpenOptions::new();
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            const FILE_WRITE_ATTRIBUTES: u32 = 0x0100;
            const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
            open.access_mode(FILE_WRITE_ATTRIBUTES)
                .custom_flags(FILE_FLAG_BACKUP_SEMANTICS);
        }
        #[cfg(not(windows))]
        open.read(true);
        open.open(dir).unwrap().set_modified(t).unwrap();
    }

    /// A lock record for tests: session 3f2a9c1e owning src/api/**, heartbeat at `heartbeat_ms`.
    pub(crate) fn record(stream: &str, heartbeat_ms: u64) -> LockRecord {
        LockRecord {
            stream: stream.into(),
            session_id: "3f2a9c1e-0000-4000-8000-000000000000".into(),
            owns: vec!["src/api/**".into()],
            plan: "plans/r-ms-01-api/plan.md".into(),
            milestone: 1,
            claimed_at: time::iso(heartbeat_ms),
            heartbeat_at: time::iso(heartbeat_ms),
            round: 0,
            cwd: "/r".into(),
            client_pid: None,
            client_start: None,
            taken_from: None,
        }
    }

    #[test]
    fn lock_states_follow_heartbeat_and_done() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        assert!(l.create_lock(&record("api", now)).unwrap());
        assert!(!l.create_lock(&record("api", now)).unwrap());
        let held = l.read_lock("api").unwrap().unwrap();
        assert_eq!(held.state(now, 30 * 60_000), StreamState::Active);
        assert_eq!(
            held.state(now + 31 * 60_000, 30 * 60_000),
            StreamState::Stale
        );
        l.write_done(&DoneRecord {
            stream: "api".into(),
            session_id: held.record.session_id.clone(),
            released_at: time::iso(now),
            head: String::new(),
        })
        .unwrap();
        assert_eq!(
            l.read_lock("api").unwrap().unwrap().state(now, 1),
            StreamState::Done
        );
    }

    #[test]
    fn heartbeat_from_a_new_client_process_names_that_process() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let then = time::now_ms() - 10 * 60_000;
        let mut r = record("api", then);
        // A client process that is gone: the lock is orphaned.
        r.client_pid = Some(u32::MAX - 1);
        r.client_start = Some("1".into());
        l.write_lock(&r).unwrap();
        assert!(l.read_lock("api").unwrap().unwrap().orphaned());

        let me = std::process::id();
        let now = time::now_ms();
        let wait = Duration::from_secs(1);
        assert!(
            l.touch_heartbeat_from("api", &r.session_id, Some(me), now, wait)
                .unwrap()
        );
        let held = l.read_lock("api").unwrap().unwrap();
        assert_eq!(held.heartbeat_ms, now);
        assert_eq!(held.record.client_pid, Some(me));
        assert_eq!(held.record.client_start, crate::liveness::start_time(me));
        assert!(!held.orphaned(), "the resumed session's process is alive");

        assert!(
            l.touch_heartbeat("api", &r.session_id, now + 1, wait)
                .unwrap()
        );
        let held = l.read_lock("api").unwrap().unwrap();
        assert_eq!(
            held.record.client_pid,
            Some(me),
            "no pid given: the client is kept"
        );
        assert!(
            !l.touch_heartbeat_from("api", "someone-else", Some(1), now, wait)
                .unwrap()
        );
        assert_eq!(
            l.read_lock("api").unwrap().unwrap().record.client_pid,
            Some(me)
        );
    }

    #[test]
    fn read_locks_names_done_streams_from_its_listing_as_read_lock_does() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        for s in ["api", "ui", "db"] {
            l.write_lock(&record(s, now)).unwrap();
        }
        let done = |s: &str| DoneRecord {
            stream: s.into(),
            session_id: "x".into(),
            released_at: time::iso(now),
            head: String::new(),
        };
        l.write_done(&done("ui")).unwrap();
        // A marker that leads nowhere is not one, as `exists()` says.
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("nowhere"), l.done_path("db")).unwrap();
        let (good, bad) = l.read_locks();
        assert!(bad.is_empty(), "{bad:?}");
        let names: Vec<(&str, bool)> = good
            .iter()
            .map(|h| (h.record.stream.as_str(), h.done))
            .collect();
        assert_eq!(names, [("api", false), ("db", false), ("ui", true)]);
        for h in &good {
            let one = l.read_lock(&h.record.stream).unwrap().unwrap();
            assert_eq!(one.done, h.done, "{}", h.record.stream);
        }
    }

    #[test]
    fn broken_locks_are_reported_with_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        l.ensure().unwrap();
        std::fs::write(l.lock_path("ui"), "{not json").unwrap();
        std::fs::write(l.build_lock(), "").unwrap();
        l.write_lock(&record("api", time::now_ms())).unwrap();
        let (good, bad) = l.read_locks();
        assert_eq!(good.len(), 1);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].to_string().contains("ui.lock"), "{}", bad[0]);
        assert!(l.read_lock("ui").is_err());
        // A lock file naming another stream is broken for read_lock as for read_locks.
        std::fs::copy(l.lock_path("api"), l.lock_path("web")).unwrap();
        let err = l.read_lock("web").unwrap_err().to_string();
        assert!(err.contains("names stream 'api', not 'web'"), "{err}");
    }

    #[test]
    fn the_repo_root_is_the_git_top_of_the_start_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let sub = root.join("plugins-library/chat");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        let sub_text = sub.to_string_lossy().to_string();
        assert_eq!(repo_root(dir.path(), Some(&sub_text)), Some(root.clone()));
        assert_eq!(repo_root(&sub, None), Some(root.clone()));
        let loose = dir.path().join("no-repo");
        let loose_text = loose.to_string_lossy().to_string();
        assert_eq!(repo_root(&sub, Some(&loose_text)), Some(loose));
        assert_eq!(repo_root(&sub, Some("")), Some(root));
    }

    #[test]
    fn archive_moves_the_round_and_counts_it() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        l.write_lock(&record("api", now)).unwrap();
        std::fs::create_dir_all(l.milestones()).unwrap();
        std::fs::write(l.milestone_done(1), "{}").unwrap();
        std::fs::write(l.build_lock(), "").unwrap();
        assert_eq!(l.round(), 0);
        let to = l.archive(now).unwrap().unwrap();
        assert!(to.join("api.lock").exists() && to.join("milestones/ms-01.done").exists());
        assert!(l.build_lock().exists(), "build.lock stays");
        assert_eq!(l.round(), 1);
        assert!(l.archive(now).unwrap().is_none());
        l.write_lock(&record("api", now)).unwrap();
        l.archive(now).unwrap().unwrap();
        assert_eq!(l.round(), 2, "same second gets its own folder");
    }
}
