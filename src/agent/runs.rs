//! The per-user registry of runs under way: `<state home>/runs/<name>.json` per run (its tab id,
//! the pid and start time of the process running it, the CLI's pid, the cwd), written when the
//! CLI is spawned and removed when the run ends. It makes two things possible from any process
//! of the same user:
//!
//! - [`list`]: the runs under way (entries whose process is gone are dropped on the way);
//! - [`interrupt`]: stop one run by its tab id. It creates `<name>.interrupt` beside the entry;
//!   the run looks for that file at every tick of its loop and stops the CLI exactly as at a
//!   timeout, ending with `error: "interrupted"`. A file, not a signal, so it reaches a run
//!   inside any process (a library caller's too) and nothing else.
//!
//! The folder is private to the user (0700 on unix).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long [`interrupt`] waits for the run to end.
pub const INTERRUPT_WAIT: Duration = Duration::from_secs(30);

/// One run under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    pub tab_id: String,
    /// The process running the run (`run-agent`, or a library caller).
    pub pid: u32,
    /// Its start time, as [`crate::liveness::start_time`] gives it (pids are reused).
    pub proc_start: Option<String>,
    /// The CLI's pid.
    pub cli_pid: u32,
    pub cwd: String,
    /// Milliseconds since the epoch.
    pub started_at: u64,
}

/// Why the registry could not answer.
#[derive(Debug, PartialEq, Eq)]
pub enum RunsError {
    /// No state home (no HOME, no SESSION_LOCK_HOME).
    NoPlace,
    /// No run with this tab id is under way.
    NotRunning(String),
    /// The run was asked to stop but has not ended within [`INTERRUPT_WAIT`].
    StillRunning(String),
    Io(PathBuf, String),
}

impl std::fmt::Display for RunsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunsError::NoPlace => write!(f, "no state folder: set HOME or SESSION_LOCK_HOME"),
            RunsError::NotRunning(t) => write!(f, "no run with tabId '{t}' is under way"),
            RunsError::StillRunning(t) => write!(
                f,
                "run '{t}' was asked to stop and has not ended within {} s",
                INTERRUPT_WAIT.as_secs()
            ),
            RunsError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for RunsError {}

/// `<state home>/runs`.
pub fn runs_dir() -> Result<PathBuf, RunsError> {
    crate::sessions::state_home()
        .map(|h| h.join("runs"))
        .ok_or(RunsError::NoPlace)
}

/// A file name for a tab id: its safe characters (at most 48), then a hash of the whole id.
fn file_stem(tab_id: &str) -> String {
    let safe: String = tab_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    // FNV-1a, 64 bits: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tab_id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{safe}-{h:016x}")
}

fn io(path: &Path, e: std::io::Error) -> RunsError {
    RunsError::Io(path.to_path_buf(), e.to_string())
}

/// A run's place in the registry, held while it runs; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    entry: PathBuf,
    flag: PathBuf,
}

impl Registration {
    /// True once someone asked this run to stop.
    pub fn interrupted(&self) -> bool {
        self.flag.exists()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.entry);
        let _ = std::fs::remove_file(&self.flag);
    }
}

/// Records a run under way in `dir`. A stale flag of an earlier run with the same id is cleared.
pub fn register_in(dir: &Path, entry: &RunEntry) -> Result<Registration, RunsError> {
    crate::private::create_dirs(dir).map_err(|e| io(dir, e))?;
    let stem = file_stem(&entry.tab_id);
    let reg = Registration {
        entry: dir.join(format!("{stem}.json")),
        flag: dir.join(format!("{stem}.interrupt")),
    };
    let _ = std::fs::remove_file(&reg.flag);
    let text =
        serde_json::to_vec(entry).map_err(|e| RunsError::Io(reg.entry.clone(), e.to_string()))?;
    crate::atomic::write_atomic(&reg.entry, &text).map_err(|e| io(&reg.entry, e))?;
    Ok(reg)
}

/// Records a run under way in the user's registry.
pub fn register(entry: &RunEntry) -> Result<Registration, RunsError> {
    register_in(&runs_dir()?, entry)
}

fn alive(e: &RunEntry) -> bool {
    e.proc_start.is_some() && crate::liveness::is_alive(e.pid, e.proc_start.as_deref())
}

/// The runs under way in `dir`, oldest first; entries of processes that are gone are removed.
pub fn list_in(dir: &Path) -> Result<Vec<RunEntry>, RunsError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut runs = Vec::new();
    for item in read.flatten() {
        let path = item.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        match serde_json::from_str::<RunEntry>(&text) {
            Ok(e) if alive(&e) => runs.push(e),
            // A crashed run's entry, or one that is not an entry at all.
            _ => {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_file(path.with_extension("interrupt"));
            }
        }
    }
    runs.sort_by(|a, b| (a.started_at, &a.tab_id).cmp(&(b.started_at, &b.tab_id)));
    Ok(runs)
}

/// The runs under way for this user.
pub fn list() -> Result<Vec<RunEntry>, RunsError> {
    list_in(&runs_dir()?)
}

/// Asks the run `tab_id` in `dir` to stop and waits up to `wait` for it to end.
pub fn interrupt_in(dir: &Path, tab_id: &str, wait: Duration) -> Result<RunEntry, RunsError> {
    let entry = list_in(dir)?
        .into_iter()
        .find(|e| e.tab_id == tab_id)
        .ok_or_else(|| RunsError::NotRunning(tab_id.to_string()))?;
    let stem = file_stem(tab_id);
    let flag = dir.join(format!("{stem}.interrupt"));
    crate::atomic::write_atomic(&flag, b"interrupt\n").map_err(|e| io(&flag, e))?;
    let json = dir.join(format!("{stem}.json"));
    let until = Instant::now() + wait;
    while json.exists() && alive(&entry) {
        if Instant::now() >= until {
            return Err(RunsError::StillRunning(tab_id.to_string()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(entry)
}

/// Stops the run `tab_id` of this user, from any process: the run ends `interrupted`, with
/// nothing left running. Returns once it has ended (or fails after [`INTERRUPT_WAIT`]).
pub fn interrupt(tab_id: &str) -> Result<RunEntry, RunsError> {
    interrupt_in(&runs_dir()?, tab_id, INTERRUPT_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tab: &str) -> RunEntry {
        let me = std::process::id();
        RunEntry {
            tab_id: tab.into(),
            pid: me,
            proc_start: crate::liveness::start_time(me),
            cli_pid: 0,
            cwd: "/w".into(),
            started_at: 5,
        }
    }

    #[test]
    fn a_registered_run_is_listed_until_its_registration_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let reg = register_in(&runs, &entry("run:x:1")).unwrap();
        assert_eq!(list_in(&runs).unwrap(), vec![entry("run:x:1")]);
        assert!(!reg.interrupted());
        drop(reg);
        assert!(list_in(&runs).unwrap().is_empty());
        assert!(list_in(&dir.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn stale_and_broken_entries_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut dead = entry("dead");
        dead.proc_start = Some("not-the-start".into());
        let reg = register_in(dir.path(), &dead).unwrap();
        std::fs::write(dir.path().join("junk.json"), "{").unwrap();
        assert!(list_in(dir.path()).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        drop(reg);
    }

    #[test]
    fn interrupt_sets_the_flag_and_waits_for_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let reg = register_in(dir.path(), &entry("a/b:c")).unwrap();
        let e = interrupt_in(dir.path(), "nope", Duration::ZERO).unwrap_err();
        assert_eq!(e, RunsError::NotRunning("nope".into()));
        let e = interrupt_in(dir.path(), "a/b:c", Duration::ZERO).unwrap_err();
        assert_eq!(e, RunsError::StillRunning("a/b:c".into()));
        assert!(reg.interrupted(), "the run sees the request");
        std::fs::remove_file(&reg.flag).unwrap();
        let path = dir.path().to_path_buf();
        let waiter = std::thread::spawn(move || interrupt_in(&path, "a/b:c", INTERRUPT_WAIT));
        // The run ends when it sees the flag.
        while !reg.interrupted() {
            std::thread::yield_now();
        }
        drop(reg);
        assert_eq!(waiter.join().unwrap().unwrap().tab_id, "a/b:c");
    }

    #[test]
    fn file_names_are_safe_and_distinct() {
        assert_ne!(file_stem("run:a:1"), file_stem("run_a_1"));
        let long = file_stem(&"x/".repeat(500));
        assert!(long.len() < 80 && !long.contains('/'), "{long}");
    }
}
