//! Claude Code's registry of running sessions: `<config dir>/sessions/<pid>.json`, where the
//! config dir is `CLAUDE_CONFIG_DIR` or `~/.claude`. Each file: pid, procStart, sessionId, cwd,
//! status, name, kind, messagingSocketPath, … A file outlives a killed client, so an entry counts
//! only while its pid and start time still name a running process.

use super::LiveSession;
use serde::Deserialize;
use std::path::PathBuf;

/// One entry of the client's registry (unknown fields ignored: the client adds them freely).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeSession {
    pub pid: u32,
    #[serde(default)]
    pub proc_start: Option<String>,
    pub session_id: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub name_source: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub messaging_socket_path: Option<String>,
    #[serde(default)]
    pub started_at: Option<u64>,
}

impl ClaudeSession {
    pub fn alive(&self) -> bool {
        crate::liveness::is_alive(self.pid, self.proc_start.as_deref())
    }
}

/// `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn config_dir() -> Option<PathBuf> {
    crate::platform::this().claude_config_dir()
}

/// Every parseable registry entry, alive or not.
pub fn entries() -> Vec<ClaudeSession> {
    let Some(dir) = config_dir().map(|d| d.join("sessions")) else {
        return Vec::new();
    };
    let Ok(list) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in list.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        // `<pid>.json` only; `<pid>.<hash>.key` files hold tokens and are not read here.
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let parsed = crate::atomic::read_regular(e.path(), crate::atomic::MAX_READ)
            .ok()
            .and_then(|text| serde_json::from_str::<ClaudeSession>(&text).ok());
        out.extend(parsed);
    }
    out.sort_by_key(|s| s.pid);
    out
}

/// The registry's sessions whose process is alive.
pub fn live_sessions() -> Vec<LiveSession> {
    entries()
        .into_iter()
        .filter(ClaudeSession::alive)
        .map(|s| LiveSession {
            session_id: s.session_id,
            cwd: s.cwd,
            pid: Some(s.pid),
            source: "claude",
        })
        .collect()
}
