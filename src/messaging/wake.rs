//! Cold wake: a session that is not running is resumed headless with its waiting messages as
//! the prompt. Only one wake per target runs at a time (a file lock per target); a sender who
//! finds a wake under way waits for it, and hands its message to the woken process's socket if
//! it comes up, or to the next wake. A session that runs (per either registry) is never
//! resumed: the client does not stop two processes from writing one transcript.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One headless run: resume `session_id` (or start a new session when `None`) in `cwd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeRequest {
    pub session_id: Option<String>,
    pub cwd: PathBuf,
    pub prompt: String,
    /// The client's permission mode for the run (never above what the sender holds).
    pub mode: String,
    pub timeout_ms: u64,
}

/// What the run said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeResult {
    pub ok: bool,
    pub session_id: Option<String>,
    pub error: Option<String>,
}

/// Starts headless runs. The suite's run-agent library is the real one; tests plug in fakes.
pub trait Waker: Send + Sync {
    fn wake(&self, req: &WakeRequest) -> WakeResult;
}

/// Runs the client directly: `claude -p <prompt> [--resume <id>] --output-format stream-json`.
/// The binary is `SESSION_LOCK_CLAUDE_BIN`, else `claude` on PATH.
#[derive(Clone, Debug, Default)]
pub struct CliWaker;

fn claude_bin() -> PathBuf {
    std::env::var_os("SESSION_LOCK_CLAUDE_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("claude"))
}

impl Waker for CliWaker {
    fn wake(&self, req: &WakeRequest) -> WakeResult {
        let mut cmd = Command::new(claude_bin());
        cmd.arg("-p")
            .arg(&req.prompt)
            .args(["--output-format", "stream-json", "--verbose"])
            .args(["--permission-mode", &req.mode])
            .current_dir(&req.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(id) = &req.session_id {
            cmd.args(["--resume", id]);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return WakeResult {
                    error: Some(format!("cannot start {}: {e}", claude_bin().display())),
                    ..WakeResult::default()
                };
            }
        };
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return WakeResult {
                error: Some("no stdout from the client".into()),
                ..WakeResult::default()
            };
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut session = None;
            let mut result: Option<(bool, Option<String>)> = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if session.is_none() {
                    session = v
                        .get("session_id")
                        .and_then(|s| s.as_str())
                        .map(str::to_string);
                }
                if v.get("type").and_then(|t| t.as_str()) == Some("result") && result.is_none() {
                    let is_error = v.get("is_error").and_then(|b| b.as_bool()).unwrap_or(true);
                    let text = v.get("result").and_then(|r| r.as_str()).map(str::to_string);
                    result = Some((is_error, text));
                }
            }
            let _ = tx.send((session, result));
        });
        let deadline = Instant::now() + Duration::from_millis(req.timeout_ms);
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let (session, result) = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or((None, None));
        let session_id = session.or_else(|| req.session_id.clone());
        match (status, result) {
            (None, _) => WakeResult {
                ok: false,
                session_id,
                error: Some("timeout".into()),
            },
            (Some(s), Some((false, _))) if s.success() => WakeResult {
                ok: true,
                session_id,
                error: None,
            },
            (Some(s), r) => WakeResult {
                ok: false,
                session_id,
                error: Some(match r {
                    Some((_, Some(text))) => text,
                    _ => format!("the client exited with {s}"),
                }),
            },
        }
    }
}

/// The mode a wake runs in: the target's own, but never bypass for a message from a prompting
/// sender (the run would obey what the client itself would have held).
pub fn wake_mode(target_mode: Option<&str>, any_prompting_sender: bool) -> String {
    match target_mode {
        Some("bypassPermissions") if any_prompting_sender => "default".into(),
        Some(m) if !m.is_empty() && m != "auto" => m.into(),
        _ => "default".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_never_runs_above_the_sender() {
        assert_eq!(wake_mode(Some("bypassPermissions"), true), "default");
        assert_eq!(
            wake_mode(Some("bypassPermissions"), false),
            "bypassPermissions"
        );
        assert_eq!(wake_mode(Some("acceptEdits"), true), "acceptEdits");
        assert_eq!(wake_mode(None, false), "default");
    }
}
