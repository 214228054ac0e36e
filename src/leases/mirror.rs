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

/// A lease this clone held and lost to another holder (the refresher found it out).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lost {
    pub stream: String,
    /// The session here that held it.
    pub session_id: String,
    pub generation: u64,
    /// Who holds it now ("session … on host …").
    pub by: String,
}

/// `session-lock/.leases/mirror.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Mirror {
    pub remote: String,
    /// The clone that wrote it (its own leases are its local locks).
    #[serde(default)]
    pub clone_id: String,
    /// When the remote last answered (ms since the epoch); 0: never.
    pub fetched_at_ms: u64,
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
        let text = crate::atomic::read_regular(path(layout), crate::atomic::MAX_READ)
            .ok()?
            .into_bytes();
        serde_json::from_slice(&text).ok()
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

    /// How old the mirror's answer is.
    pub fn age_ms(&self, now: u64) -> Option<u64> {
        (self.fetched_at_ms > 0).then(|| now.saturating_sub(self.fetched_at_ms))
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

/// A lease as a lock record: what ownership checks read. The host goes where a local lock keeps
/// its working folder, so messages can name it.
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
            cwd: format!("host {}", lease.host),
            client_pid: None,
            client_start: None,
            taken_from: None,
        },
        done: lease.done,
        heartbeat_ms: lease.heartbeat_ms(),
    }
}
