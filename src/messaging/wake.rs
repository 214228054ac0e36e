//! Cold wake: a session that is not running is resumed headless with its waiting messages as
//! the prompt. Only one wake per target runs at a time (a file lock per target); a sender who
//! finds a wake under way waits for it, and hands its message to the woken process's socket if
//! it comes up, or to the next wake. A session that runs (per either registry) is never
//! resumed: the client does not stop two processes from writing one transcript.

use std::path::PathBuf;

/// One headless run: resume `session_id` (or start a new session when `None`) in `cwd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeRequest {
    pub session_id: Option<String>,
    pub cwd: PathBuf,
    pub prompt: String,
    /// The client's permission mode for the run (never above what the sender holds).
    pub mode: String,
    /// The model the session last used (`None`: run-agent's default).
    pub model: Option<String>,
    pub timeout_ms: u64,
}

/// What the run said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeResult {
    pub ok: bool,
    pub session_id: Option<String>,
    pub error: Option<String>,
}

/// Starts headless runs. [`AgentWaker`] (run-agent) is the real one; unit tests plug in fakes.
pub trait Waker: Send + Sync {
    fn wake(&self, req: &WakeRequest) -> WakeResult;
}

/// The suite's run-agent library: one headless turn (`--resume <id>` when waking), stopped at
/// the timeout, its process group cleaned up.
#[derive(Clone, Debug, Default)]
pub struct AgentWaker;

impl Waker for AgentWaker {
    fn wake(&self, req: &WakeRequest) -> WakeResult {
        let opts = crate::agent::RunAgentOptions {
            cwd: Some(req.cwd.to_string_lossy().to_string()),
            prompt: Some(req.prompt.clone()),
            plugin_id: Some("send-message".into()),
            session_id: req.session_id.clone(),
            model: req.model.clone(),
            mode: Some(req.mode.clone()),
            timeout_ms: Some(req.timeout_ms),
            ..Default::default()
        };
        let r = crate::agent::run_agent(&opts);
        let error = match (&r.error_detail, r.is_error) {
            (Some(e), _) => Some(e.clone()),
            (None, true) => Some(if r.text.is_empty() {
                "the run ended in an error".into()
            } else {
                r.text.clone()
            }),
            (None, false) => None,
        };
        WakeResult {
            ok: r.ok && !r.is_error,
            session_id: r.session_id.clone(),
            error,
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
