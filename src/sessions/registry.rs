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
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes (or replaces) this session's entry.
pub fn write(home: &Path, entry: &Entry) -> std::io::Result<()> {
    let path = file_for(home, &entry.session_id)
        .ok_or_else(|| std::io::Error::other(format!("bad session id '{}'", entry.session_id)))?;
    std::fs::create_dir_all(dir(home))?;
    let text = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&path, text.as_bytes())
}

/// Removes this session's entry (SessionEnd).
pub fn remove(home: &Path, session_id: &str) {
    if let Some(p) = file_for(home, session_id) {
        let _ = std::fs::remove_file(p);
    }
}

/// Every entry whose process is alive. Entries without a pid cannot be checked and are left out.
pub fn live_sessions(home: &Path) -> Vec<LiveSession> {
    let Ok(list) = std::fs::read_dir(dir(home)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in list.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(entry) = serde_json::from_str::<Entry>(&text) else {
            continue;
        };
        let Some(pid) = entry.pid else { continue };
        if crate::liveness::is_alive(pid, entry.proc_start.as_deref()) {
            out.push(LiveSession {
                session_id: entry.session_id,
                cwd: entry.cwd,
                pid: Some(pid),
                source: "suite",
            });
        }
    }
    out
}
