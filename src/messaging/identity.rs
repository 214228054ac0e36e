//! Who is sending: only verified credentials count, never arguments.
//!
//! Inside a Claude Code session the client exports `CLAUDE_CODE_SESSION_ID` and
//! `CLAUDE_CODE_MESSAGING_TOKEN`. That token is the client's child token, which it keeps in
//! memory only; what it writes down is the session's record (`<pid>.json`: pid + start time +
//! session id) and, beside it, `<pid>.<sha256 of socket path>.key` with the session's
//! `peerToken`. So a claim to be session S is accepted when S's record is live and either
//!
//! - the claiming process descends from S's client process (the process tree, read from the
//!   kernel) and the token presented is the one the client gave that tree (the environment
//!   the client started its child with, read from the kernel), or
//! - the token presented is S's `peerToken` (constant-time compare).
//!
//! A person at a terminal, outside any session, sends as `terminal`, authorized by the folder
//! they run in. On the bus the kernel names the connecting process (`messaging::peer`), and the
//! same two tests apply.

use super::directory::{self, workspace_of};
use super::frame::{self, Mode};
use crate::liveness;
use crate::sessions::{self, claude, registry};
use std::path::{Path, PathBuf};

/// The sender, as verified.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The session id, or `terminal`.
    pub id: String,
    pub name: String,
    /// The session's folder as its client records it (a `cd` in a Bash call does not move it).
    pub cwd: String,
    pub workspace: String,
    pub terminal: bool,
    /// The permission mode the frame declares.
    pub mode: Option<Mode>,
    /// `from=` in the frame: the session's socket address (`uds:<path>`), or `terminal`.
    pub address: String,
    pub pid: Option<u32>,
}

impl Caller {
    pub fn mode(&self) -> Mode {
        self.mode.unwrap_or(Mode::Prompting)
    }

    /// A person at a terminal in `cwd`.
    pub fn terminal(cwd: &Path) -> Caller {
        let cwd = cwd.to_string_lossy().to_string();
        Caller {
            id: "terminal".into(),
            name: "terminal".into(),
            workspace: workspace_of(&cwd),
            cwd,
            terminal: true,
            mode: Some(Mode::Prompting),
            address: "terminal".into(),
            pid: None,
        }
    }
}

/// Why a session's identity could not be verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityError {
    NoToken,
    NotRegistered(String),
    BadToken(String),
}

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdentityError::NoToken => write!(
                f,
                "CLAUDE_CODE_SESSION_ID is set but CLAUDE_CODE_MESSAGING_TOKEN is not; cannot verify this session"
            ),
            IdentityError::NotRegistered(id) => write!(
                f,
                "session {} is not in the client's registry of live sessions; cannot verify it",
                crate::state::short_id(id)
            ),
            IdentityError::BadToken(id) => write!(
                f,
                "cannot verify session {}: this process does not run under its client, and the token does not match the client's record of it",
                crate::state::short_id(id)
            ),
        }
    }
}

impl std::error::Error for IdentityError {}

/// The `peerToken` files of a registry pid: `<pid>.<hash>.key`.
fn key_tokens(dir: &Path, pid: u32, proc_start: Option<&str>) -> Vec<String> {
    let prefix = format!("{pid}.");
    let Ok(list) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in list.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with(&prefix) || !name.ends_with(".key") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        // A key written for an earlier process with this pid does not count.
        if let (Some(want), Some(have)) = (proc_start, v.get("procStart").and_then(|x| x.as_str()))
            && want != have
        {
            continue;
        }
        if let Some(tok) = v.get("peerToken").and_then(|x| x.as_str()) {
            out.push(tok.to_string());
        }
    }
    out
}

fn from_entry(e: &claude::ClaudeSession) -> Caller {
    let mut c = Caller {
        id: e.session_id.clone(),
        cwd: e.cwd.clone(),
        workspace: workspace_of(&e.cwd),
        address: match &e.messaging_socket_path {
            Some(p) => format!("uds:{p}"),
            None => format!("session:{}", e.session_id),
        },
        pid: Some(e.pid),
        ..Caller::default()
    };
    c.name = e
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_default();
    let transcript = directory::find_transcript(&e.session_id, &e.cwd);
    let info = transcript.as_deref().and_then(directory::transcript_info);
    if c.name.is_empty() {
        c.name = info
            .as_ref()
            .and_then(|i| i.title.clone())
            .unwrap_or_else(|| directory::fallback_name(&e.session_id));
    }
    // The mode the guard recorded from the client's own hook payload, else the transcript's.
    let recorded = sessions::state_home()
        .and_then(|h| registry::read(&h, &e.session_id))
        .and_then(|r| r.permission_mode);
    let mode = recorded.or_else(|| info.and_then(|i| i.permission_mode));
    c.mode = Some(Mode::from_client(mode.as_deref()));
    c
}

fn registry_dir() -> Option<PathBuf> {
    claude::config_dir().map(|d| d.join("sessions"))
}

/// The messaging token the client handed its own children: the one in the environment of the
/// process right below `client` on the way up from `pid`. `None` when `pid` does not run under
/// `client` (or is the client itself).
fn child_token(pid: u32, client: u32) -> Option<String> {
    let mut below = None;
    let mut cur = pid;
    for _ in 0..64 {
        if cur == client {
            return liveness::env_var(below?, "CLAUDE_CODE_MESSAGING_TOKEN");
        }
        if cur <= 1 {
            return None;
        }
        below = Some(cur);
        cur = liveness::parent_of(cur)?;
    }
    None
}

/// True when `token` is the one session `e`'s client gave the process tree `claimant` runs in.
fn child_token_ok(e: &claude::ClaudeSession, token: &str, claimant: u32) -> bool {
    !token.is_empty()
        && child_token(claimant, e.pid)
            .is_some_and(|t| frame::ct_eq(t.as_bytes(), token.as_bytes()))
}

fn peer_token_ok(dir: &Path, e: &claude::ClaudeSession, token: &str) -> bool {
    !token.is_empty()
        && key_tokens(dir, e.pid, e.proc_start.as_deref())
            .iter()
            .any(|t| frame::ct_eq(t.as_bytes(), token.as_bytes()))
}

/// Verifies that the process `claimant` (with `token`) is session `session_id`.
pub fn verify(session_id: &str, token: &str, claimant: u32) -> Result<Caller, IdentityError> {
    let dir = registry_dir().ok_or_else(|| IdentityError::NotRegistered(session_id.into()))?;
    let mut seen = false;
    for e in claude::entries() {
        if e.session_id != session_id || !e.alive() {
            continue;
        }
        seen = true;
        if child_token_ok(&e, token, claimant) || peer_token_ok(&dir, &e, token) {
            return Ok(from_entry(&e));
        }
    }
    Err(if seen {
        IdentityError::BadToken(session_id.into())
    } else {
        IdentityError::NotRegistered(session_id.into())
    })
}

/// The live session a bus request comes from: the one whose `peerToken` this is, else the one
/// whose client process the connecting process `peer` runs under *and* gave it this token.
pub fn by_token(token: &str, peer: Option<u32>) -> Option<Caller> {
    if token.is_empty() {
        return None;
    }
    let dir = registry_dir()?;
    let live: Vec<claude::ClaudeSession> = claude::entries()
        .into_iter()
        .filter(|e| e.alive())
        .collect();
    if let Some(e) = live.iter().find(|e| peer_token_ok(&dir, e, token)) {
        return Some(from_entry(e));
    }
    let peer = peer?;
    live.iter()
        .filter(|e| child_token_ok(e, token, peer))
        .max_by_key(|e| e.started_at.unwrap_or(0))
        .map(from_entry)
}

/// The live session whose client is the process `pid` started at `proc_start` (as the client's
/// registry records it): how a server the client spawned knows whom it serves. Nothing the
/// server is told counts, only the kernel's parent pid and start time.
pub fn of_client(pid: u32, proc_start: Option<&str>) -> Option<Caller> {
    claude::entries()
        .into_iter()
        .filter(|e| e.pid == pid && e.alive())
        .find(|e| match (e.proc_start.as_deref(), proc_start) {
            (Some(recorded), Some(seen)) => recorded == seen,
            _ => true,
        })
        .map(|e| from_entry(&e))
}

/// The caller of this process: a verified session, or the terminal in `cwd`.
pub fn from_env(cwd: &Path) -> Result<Caller, IdentityError> {
    let id = std::env::var("CLAUDE_CODE_SESSION_ID").unwrap_or_default();
    if id.trim().is_empty() {
        return Ok(Caller::terminal(cwd));
    }
    let token = std::env::var("CLAUDE_CODE_MESSAGING_TOKEN").unwrap_or_default();
    if token.is_empty() {
        return Err(IdentityError::NoToken);
    }
    verify(id.trim(), &token, std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_must_match_pid_and_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("42.abc.key"),
            r#"{"peerToken":"t1","procStart":"100"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("420.abc.key"),
            r#"{"peerToken":"t2","procStart":"100"}"#,
        )
        .unwrap();
        assert_eq!(key_tokens(dir.path(), 42, Some("100")), vec!["t1"]);
        assert!(key_tokens(dir.path(), 42, Some("999")).is_empty());
        assert_eq!(key_tokens(dir.path(), 420, None), vec!["t2"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_token_must_be_the_one_the_client_gave_its_child() {
        let me = std::process::id();
        // The child has said it runs, so its environment is already its own.
        let mut child = crate::liveness::test_process::waiting_with_env(
            "CLAUDE_CODE_MESSAGING_TOKEN",
            "0123456789abcdef0123456789abcdef",
        );
        let token = child_token(child.id(), me);
        assert_eq!(token.as_deref(), Some("0123456789abcdef0123456789abcdef"));
        assert_eq!(
            child_token(me, me),
            None,
            "the client itself has no child token"
        );
        assert_eq!(child_token(me, child.id()), None, "not below it");
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn terminal_is_prompting_and_has_no_session() {
        let c = Caller::terminal(Path::new("/nowhere/x"));
        assert!(c.terminal);
        assert_eq!(c.id, "terminal");
        assert_eq!(c.mode(), Mode::Prompting);
    }
}
