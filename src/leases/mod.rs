//! Streams across machines: each claim is also a lease on the team's git remote.
//!
//! Opt-in with `"leases": {"remote": "origin"}` in `session-lock/config.json`; without it nothing
//! here runs and nothing touches the network.
//!
//! ```text
//! remote   refs/session-lock/streams/<stream>  → a blob holding the lease (JSON, below)
//! clone    refs/session-lock/mirror/<stream>   ← fetched copy of the remote refs
//!          session-lock/.leases/mirror.json    the mirror as the guard reads it (one read)
//!          session-lock/.leases/held/<s>.json  the lease this clone last pushed for <s>
//!          session-lock/.leases/clone-id       this clone's random id
//! ```
//!
//! - **Claim** is a compare-and-swap push: `git push --atomic --force-with-lease=<ref>:<old>`
//!   with `<old>` the lease the claimer read (empty: "must not exist"). Of N claimers that read
//!   the same old value exactly one push lands; the others are rejected and told who holds it.
//!   A stale lease (heartbeat older than `heartbeatStaleMinutes`) is taken over the same way,
//!   and the **generation** moves on by one with every new holder.
//! - **The guard never waits on the network**: it reads `mirror.json` and applies the live
//!   leases of other clones to ownership exactly like local locks. The mirror is refreshed by
//!   claim, release and status, and by a detached refresher (`status --refresh-leases`) the
//!   guard starts at most once per `refreshSeconds` and never waits for.
//! - **Heartbeats** are pushed by the refresher at most every `heartbeatPushSeconds`, by CAS
//!   against the lease this clone last pushed: a lease taken over meanwhile rejects the push,
//!   and the holder is told at its next tool call.
//! - **Release** pushes the lease with `done: true`, by CAS, only from the holding clone.
//! - Credentials are git's own: the suite only runs `git`; leases hold no secret.

pub mod git;
pub mod guard;
pub mod mirror;
pub mod ops;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use crate::config::LeasesConfig;

/// The ref namespace on the remote.
pub const REMOTE_PREFIX: &str = "refs/session-lock/streams/";
/// Where this clone keeps its fetched copy.
pub const MIRROR_PREFIX: &str = "refs/session-lock/mirror/";

/// One lease, as the remote's blob holds it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub stream: String,
    pub session_id: String,
    pub host: String,
    pub clone_id: String,
    pub owns: Vec<String>,
    pub claimed_at: String,
    pub heartbeat_at: String,
    /// Grows by one with every new holder.
    pub generation: u64,
    #[serde(default)]
    pub done: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_at: Option<String>,
}

impl Lease {
    pub fn heartbeat_ms(&self) -> u64 {
        crate::time::parse_iso(&self.heartbeat_at).unwrap_or(0)
    }

    /// Held: not done and the heartbeat is younger than `stale_ms`.
    pub fn is_live(&self, now: u64, stale_ms: u64) -> bool {
        !self.done && now.saturating_sub(self.heartbeat_ms()) < stale_ms
    }

    /// "session 3f2a9c1e on host build-02, heartbeat 4m ago"
    pub fn describe(&self, now: u64) -> String {
        format!(
            "session {} on host {}, heartbeat {} ago",
            crate::state::short_id(&self.session_id),
            self.host,
            crate::time::age(now.saturating_sub(self.heartbeat_ms()))
        )
    }
}

/// The remote's ref of a stream.
pub fn remote_ref(stream: &str) -> String {
    format!("{REMOTE_PREFIX}{stream}")
}

/// The lease files' folder.
pub fn dir(layout: &crate::state::Layout) -> PathBuf {
    layout.dir.join(".leases")
}

/// The lock file `name` in the lease folder, held exclusively: `None` when it stayed taken for
/// `wait` (or could not be opened).
pub fn lock(
    layout: &crate::state::Layout,
    name: &str,
    wait: std::time::Duration,
) -> Option<crate::filelock::FileLock> {
    crate::atomic::create_dirs(dir(layout))
        .and_then(|()| crate::filelock::FileLock::exclusive_within(&dir(layout).join(name), wait))
        .ok()
        .flatten()
}

/// This machine's name as leases show it: `SESSION_LOCK_HOST`, else
/// [`crate::platform::host_name`].
pub fn host() -> String {
    if let Ok(h) = std::env::var("SESSION_LOCK_HOST")
        && !h.trim().is_empty()
    {
        return h.trim().to_string();
    }
    crate::platform::host_name()
}

/// This clone's id: random, made once, kept in `.leases/clone-id`. A file that is there but
/// holds no id (empty, or not an id) is refused, naming it: every lease this clone pushed names
/// its id, and one made up now would turn them into another machine's.
pub fn clone_id(layout: &crate::state::Layout) -> std::io::Result<String> {
    let file = dir(layout).join("clone-id");
    let checked = |text: String| -> std::io::Result<String> {
        let id = text.trim();
        let fine = id.len() >= 8
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if fine {
            return Ok(id.to_string());
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} {}; this clone's leases are named by it. Delete the file to make a new id (leases this clone pushed before then look like another machine's until they end)",
                file.display(),
                if id.is_empty() {
                    "is empty".to_string()
                } else {
                    format!("holds '{id}', which is not a clone id")
                }
            ),
        ))
    };
    if let Some(text) = crate::atomic::read_optional(&file)? {
        return checked(text);
    }
    crate::atomic::create_dirs(dir(layout))?;
    let id = crate::ids::new_uuid();
    if !crate::atomic::create_new(&file, id.as_bytes())? {
        // Another process made it first: theirs stands.
        return checked(crate::atomic::read_regular(&file, crate::atomic::MAX_READ)?);
    }
    Ok(id)
}

/// The repo's `.git` folder (a worktree's `.git` file is followed).
pub fn git_dir(root: &Path) -> PathBuf {
    let dot = root.join(".git");
    if let Ok(text) = crate::atomic::read_regular(&dot, crate::atomic::MAX_READ)
        && let Some(rest) = text.trim().strip_prefix("gitdir:")
    {
        let p = PathBuf::from(rest.trim());
        return if p.is_absolute() { p } else { root.join(p) };
    }
    dot
}
