//! `send-message`: sessions that share a machine find each other and send each other messages.
//!
//! The map:
//!
//! ```text
//! identity   who sends: a verified session (id + the client's token) or the terminal
//! directory  who exists: live sessions (the client's registry) and cold ones (transcripts)
//! address    --to → one session (id, name, claimed stream), or not_found / ambiguous
//! auth       the authorization matrix; unreachable answers like missing
//! limits     size, summary, duplicates, rate, pending
//! ledger     outbox/<sender>.jsonl and inbound/<target>.jsonl: the durable record
//! frame      the framed text and the client's socket line
//! delivery   the lines a delivery writes in both ledgers, the start line and its framed text
//! send       send: resolve → authorize → limits → ledger → route, one function per stage
//! socket     the socket route: the framed line on the client's socket, the transcript watched
//! progress   how far a message got, from the target's transcript: taken, consumed
//! recover    moving messages on later: confirm, return, write again, wake
//! hold       inbound policy: accept, hold (expiry, capacity), refuse
//! review     review held messages; status of a message
//! list       the sessions the caller may message
//! hook       the suite's hook route: queued messages and held notices at the next tool call
//! wake       resuming a session that is not running (one wake per target)
//! bus        `serve`: the local bus for programs in any language
//! peer       the process at the other end of a Unix socket, as the kernel names it
//! request    the JSON fields of a list or send request (bus and MCP tools), checked once
//! mcp        `mcp`: the two tools as a stdio MCP server the session's client starts
//! create     start a new session with a message as its first prompt
//! ```

pub mod address;
pub mod auth;
#[cfg(unix)]
pub mod bus; // Unix domain sockets; `serve` says so elsewhere
pub mod cli;
pub mod create;
pub mod delivery;
pub mod directory;
pub mod frame;
pub mod hold;
pub mod hook;
pub mod identity;
pub mod ledger;
pub mod limits;
pub mod list;
pub mod mcp;
#[cfg(unix)]
pub mod peer; // the process at the other end of a Unix socket, from the kernel
pub mod progress;
pub mod recover;
pub mod request;
pub mod review;
pub mod send;
pub mod socket;
pub mod wake;

pub use hook::{HookInput, hook_context};
pub use identity::Caller;

use crate::config::Config;
use crate::exit::Code;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a messaging operation could not run at all (as opposed to a `refused` answer).
#[derive(Debug)]
pub enum Error {
    /// The session's credentials did not check out.
    Identity(identity::IdentityError),
    /// No per-user state folder (no HOME, no SESSION_LOCK_HOME).
    NoStateHome,
    /// A ledger or socket could not be used.
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The request itself is wrong.
    Usage(String),
    /// The operation needs a session, not a terminal.
    NeedsSession(&'static str),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Identity(e) => write!(f, "{e}"),
            Error::NoStateHome => write!(f, "no state folder: set HOME or SESSION_LOCK_HOME"),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Usage(m) => write!(f, "{m}"),
            Error::NeedsSession(what) => write!(
                f,
                "{what} needs a Claude Code session (CLAUDE_CODE_SESSION_ID and CLAUDE_CODE_MESSAGING_TOKEN); a terminal has no inbox"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    pub fn code(&self) -> Code {
        match self {
            Error::Identity(_) | Error::NeedsSession(_) => Code::Refused,
            Error::Usage(_) => Code::Usage,
            Error::NoStateHome | Error::Io { .. } => Code::Failure,
        }
    }
}

/// Wraps an io error with what was being done.
pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// What every operation needs: the state folder, the caller's repo config, the waker.
#[derive(Clone)]
pub struct Ctx {
    pub home: PathBuf,
    pub config: Config,
    pub repo_root: Option<PathBuf>,
    pub waker: Arc<dyn wake::Waker>,
}

impl Ctx {
    /// The state folder (`SESSION_LOCK_HOME` or the platform's), the config of the repo at
    /// `repo` (or around `cwd`), and the given waker.
    pub fn load(
        repo: Option<&Path>,
        cwd: &Path,
        waker: Arc<dyn wake::Waker>,
    ) -> Result<Ctx, Error> {
        let home = crate::sessions::state_home().ok_or(Error::NoStateHome)?;
        let project = std::env::var("CLAUDE_PROJECT_DIR").ok();
        let repo_root = match repo {
            Some(r) => Some(r.to_path_buf()),
            None => crate::state::repo_root(cwd, project.as_deref()),
        };
        let config = match &repo_root {
            Some(root) => Config::load(root).map_err(|e| Error::Usage(e.to_string()))?,
            None => Config::default(),
        };
        Ok(Ctx {
            home,
            config,
            repo_root,
            waker,
        })
    }

    pub fn policy(&self) -> auth::Policy {
        auth::Policy::from_config(&self.config)
    }

    pub fn m(&self) -> &crate::config::MessagingConfig {
        &self.config.messaging
    }
}

/// A session as answers name it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TargetRef {
    pub name: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl TargetRef {
    pub fn of(t: &directory::Target) -> TargetRef {
        TargetRef {
            name: t.name.clone(),
            id: t.id.clone(),
            cwd: None,
        }
    }
}

/// Where a send ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SendStatus {
    /// In a model request's input: the target's model has it.
    Delivered,
    /// The target's client took it; its model sees it at its next request.
    Accepted,
    /// Recorded, not yet taken: retried, handed over at the target's next tool call (its hook),
    /// or at its next run.
    Queued,
    /// Recorded; the target is not running and a detached wake resumes it with the message.
    Waking,
    /// Held: by the target's inbound review, or by its client (permission-mode mismatch).
    Held,
    /// The same message was sent within the dedupe window; `message_id` is the original's.
    Duplicate,
    Refused,
    NotFound,
    Ambiguous,
    #[serde(rename = "self")]
    SelfTarget,
}

impl SendStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SendStatus::Delivered => "delivered",
            SendStatus::Accepted => "accepted",
            SendStatus::Queued => "queued",
            SendStatus::Waking => "waking",
            SendStatus::Held => "held",
            SendStatus::Duplicate => "duplicate",
            SendStatus::Refused => "refused",
            SendStatus::NotFound => "not_found",
            SendStatus::Ambiguous => "ambiguous",
            SendStatus::SelfTarget => "self",
        }
    }

    /// The exit code of `send-message send` for this status.
    pub fn code(self) -> Code {
        match self {
            SendStatus::Delivered
            | SendStatus::Accepted
            | SendStatus::Queued
            | SendStatus::Waking
            | SendStatus::Held
            | SendStatus::Duplicate => Code::Success,
            SendStatus::Refused | SendStatus::SelfTarget => Code::Refused,
            SendStatus::NotFound => Code::NotFound,
            SendStatus::Ambiguous => Code::Usage,
        }
    }
}

/// The answer to a send.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SendResult {
    pub status: SendStatus,
    pub message_id: String,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<TargetRef>>,
}

impl SendResult {
    pub fn new(status: SendStatus, id: &str, detail: impl Into<String>) -> SendResult {
        SendResult {
            status,
            message_id: id.to_string(),
            detail: detail.into(),
            target: None,
            candidates: None,
        }
    }

    pub fn to(mut self, t: &directory::Target) -> SendResult {
        self.target = Some(TargetRef::of(t));
        self
    }
}

/// The one text for a session that is missing or not reachable (they must read the same).
pub fn not_found_detail(to: &str) -> String {
    format!(
        "no session named '{}' that you can message (see send-message list)",
        address::normalize(to)
    )
}

#[cfg(test)]
mod tests {
    use super::SendStatus;

    #[test]
    fn status_text_matches_its_json() {
        for s in [
            SendStatus::Delivered,
            SendStatus::Accepted,
            SendStatus::Queued,
            SendStatus::Waking,
            SendStatus::Held,
            SendStatus::Duplicate,
            SendStatus::Refused,
            SendStatus::NotFound,
            SendStatus::Ambiguous,
            SendStatus::SelfTarget,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str(), "{s:?}");
        }
    }
}
