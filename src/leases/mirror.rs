//! The local mirror of the remote's leases, as the guard reads it: one JSON file, written by
//! whoever refreshed it (claim, release, status, the detached refresher), read with one `read`.

use super::Lease;
use crate::state::{Held, Layout, LockRecord};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One lease of the mirror and the object it was read from.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Mirrored {
    pub sha: String,
    pub lease: Lease,
}

/// A stream a session here lost to another machine's lease (the refresher found it out).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lost {
    pub stream: String,
    /// The session here that held it.
    pub session_id: String,
    /// The generation this clone held; for a claim that never reached the remote, the
    /// winner's.
    pub generation: u64,
    /// Who holds it now ("session … on host …").
    pub by: String,
    #[serde(default)]
    pub cause: LostCause,
}

/// How a stream held here came to be another machine's.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum LostCause {
    /// This clone's lease went stale and another machine took it over.
    #[default]
    TakenOver,
    /// The local claim never reached the remote (killed before its push, or claimed offline)
    /// while another machine's lease did: the remote's order decides, that lease stands.
    NeverPushed,
}

/// `session-lock/.leases/mirror.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Mirror {
    pub remote: String,
    /// The clone that wrote it (its own leases are its local locks).
    #[serde(default)]
    pub clone_id: String,
    /// When the remote last answered (ms since the epoch, by this machine's clock); 0: never.
    pub fetched_at_ms: u64,
    /// The ticket of the fetch it holds: fetches are numbered as they start, so a fetch that
    /// started later wins whatever the clock says (the fetch of `ops::refresh`).
    #[serde(default)]
    pub fetch_seq: u64,
    /// When a refresh was last tried, and why it failed if it did.
    pub tried_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub leases: Vec<Mirrored>,
    #[serde(default)]
    pub lost: Vec<Lost>,
}

pub fn path(layout: &Layout) -> PathBuf {
    super::dir(layout).join("mirror.json")
}

impl Mirror {
    /// The mirror as last written; `None` when there is none (or it cannot be read).
    pub fn read(layout: &Layout) -> Option<Mirror> {
        Mirror::load(layout).ok().flatten()
    }

    /// The mirror as last written: `Ok(None)` when there is none, an error naming the file when
    /// it is there but cannot be read (empty, cut short, not a mirror).
    pub fn load(layout: &Layout) -> Result<Option<Mirror>, String> {
        let file = path(layout);
        let text = match crate::atomic::read_regular(&file, crate::atomic::MAX_READ) {
            Ok(t) => t.into_bytes(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        serde_json::from_slice(&text).map(Some).map_err(|e| {
            if text.iter().all(u8::is_ascii_whitespace) {
                format!("{} is empty", file.display())
            } else {
                format!("{} is not a lease mirror ({e})", file.display())
            }
        })
    }

    /// Replaces the file (a cache of the remote: atomic, not synced).
    pub fn write(&self, layout: &Layout) -> std::io::Result<()> {
        crate::atomic::create_dirs(super::dir(layout))?;
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::atomic::replace_cache(&path(layout), &text)
    }

    pub fn find(&self, stream: &str) -> Option<&Mirrored> {
        self.leases.iter().find(|m| m.lease.stream == stream)
    }

    /// How old the mirror's answer is; `None` when the remote never answered, or when it
    /// answered "after now" (this machine's clock stepped back since): its age is unknown then,
    /// and it is refreshed as an old one would be.
    pub fn age_ms(&self, now: u64) -> Option<u64> {
        (self.fetched_at_ms > 0 && self.fetched_at_ms <= now).then(|| now - self.fetched_at_ms)
    }

    /// Other clones' leases that are not done, as locks the guard applies like its own.
    pub fn foreign_locks(&self, clone_id: &str) -> Vec<Held> {
        self.leases
            .iter()
            .filter(|m| m.lease.clone_id != clone_id && !m.lease.done)
            .map(|m| as_held(&m.lease))
            .collect()
    }

    /// Streams this clone's `session_id` lost to another holder.
    pub fn lost_by(&self, session_id: &str) -> Vec<&Lost> {
        self.lost
            .iter()
            .filter(|l| l.session_id == session_id)
            .collect()
    }
}

/// What [`as_held`] puts where a local lock keeps its working folder (always absolute there).
const HOST_MARK: &str = "host ";

/// The host of another machine's lease as [`as_held`] made it a lock; `None` for a local lock.
pub fn host_of(held: &Held) -> Option<&str> {
    held.record.cwd.strip_prefix(HOST_MARK)
}

/// A lease as a lock record: what ownership checks read. The host goes where a local lock keeps
/// its working folder, so messages can name it ([`host_of`]).
pub fn as_held(lease: &Lease) -> Held {
    Held {
        record: LockRecord {
            stream: lease.stream.clone(),
            session_id: lease.session_id.clone(),
            owns: lease.owns.clone(),
            plan: String::new(),
            milestone: 0,
            claimed_at: lease.claimed_at.clone(),
            heartbeat_at: lease.heartbeat_at.clone(),
            round: 0,
            cwd: format!("{HOST_MARK}{}", lease.host),
            client_pid: None,
            client_start: None,
            taken_from: None,
        },
        done: lease.done,
        heartbeat_ms: lease.heartbeat_ms(),
    }
}
