//! The suite's own small registry of live sessions, so the suite does not depend on one client
//! version's internals: `<state home>/sessions/<session id>.json`, written by the guard at
//! SessionStart and (throttled) on tool calls, removed at SessionEnd.

use super::LiveSession;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub session_id: String,
    pub cwd: String,
    /// The client process (`CLAUDE_PID`), when the hook environment carries it.
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub proc_start: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub permission_mode: Option<String>,
    pub updated_at: String,
}

fn dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

fn file_for(home: &Path, session_id: &str) -> Option<PathBuf> {
    file_in(&dir(home), session_id, "json")
}

/// `<dir>/<session id>.<ext>`, or `None` when the id could not be a file name (empty, too long,
/// or holding anything but letters, digits, `-` and `_`).
pub fn file_in(dir: &Path, session_id: &str, ext: &str) -> Option<PathBuf> {
    let ok = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then(|| dir.join(format!("{session_id}.{ext}")))
}

/// Reads this session's entry, if any.
pub fn read(home: &Path, session_id: &str) -> Option<Entry> {
    let path = file_for(home, session_id)?;
    let text = crate::atomic::read_regular(path, crate::atomic::MAX_READ).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes (or replaces) this session's entry.
pub fn write(home: &Path, entry: &Entry) -> std::io::Result<()> {
    let path = file_for(home, &entry.session_id)
        .ok_or_else(|| std::io::Error::other(format!("bad session id '{}'", entry.session_id)))?;
    crate::private::create_dirs(&dir(home))?;
    let text = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&path, text.as_bytes())
}

/// Removes this session's entry (SessionEnd).
pub fn remove(home: &Path, session_id: &str) {
    if let Some(p) = file_for(home, session_id) {
        let _ = std::fs::remove_file(p);
    }
}

/// Every entry that parses, alive or not (the one reader of the folder).
pub fn entries(home: &Path) -> Vec<Entry> {
    let Ok(list) = std::fs::read_dir(dir(home)) else {
        return Vec::new();
    };
    list.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| crate::atomic::read_regular(e.path(), crate::atomic::MAX_READ).ok())
        .filter_map(|text| serde_json::from_str::<Entry>(&text).ok())
        .collect()
}

impl Entry {
    /// True while its client process runs. An entry without a pid cannot be checked: false.
    pub fn alive(&self) -> bool {
        self.pid
            .is_some_and(|pid| crate::liveness::is_alive(pid, self.proc_start.as_deref()))
    }
}

/// Every entry whose process is alive. Entries without a pid cannot be checked and are left out.
pub fn live_sessions(home: &Path) -> Vec<LiveSession> {
    entries(home)
        .into_iter()
        .filter(Entry::alive)
        .map(|entry| LiveSession {
            session_id: entry.session_id,
            cwd: entry.cwd,
            pid: entry.pid,
            source: "suite",
        })
        .collect()
}
