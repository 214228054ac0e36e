//! What the guard does with leases, without waiting on the network: one read of the mirror,
//! other machines' leases added to the live-lock set, a one-time notice of a lost lease or a
//! stale mirror, and — at most once per `refreshSeconds` — a detached refresher started and
//! left to run.

use super::LeasesConfig;
use super::mirror::Mirror;
use crate::round_index::LockSet;
use crate::state::{Layout, short_id};
use crate::time;
use std::path::Path;
use std::process::{Command, Stdio};

/// What the guard tells the session.
#[derive(Debug, Default)]
pub struct Told {
    /// Blocks this one call: the session lost a lease.
    pub deny: Option<String>,
    /// A note on stderr (the mirror is stale).
    pub note: Option<String>,
}

/// Creates `name` under `.leases/told/` if it is not there: `true` the first time.
fn first_time(layout: &Layout, name: &str) -> bool {
    let dir = super::dir(layout).join("told");
    crate::atomic::create_dirs(&dir).is_ok()
        && crate::atomic::create_new(&dir.join(name), b"").unwrap_or(false)
}

/// Applies the mirror to `locks` for `session_id`'s call.
pub fn apply(
    root: &Path,
    layout: &Layout,
    cfg: &LeasesConfig,
    locks: &mut LockSet,
    session_id: &str,
    binary_dir: Option<&Path>,
    now: u64,
) -> Told {
    let mut told = Told::default();
    let mirror = Mirror::read(layout);
    if let Some(m) = &mirror {
        let lost: Vec<String> = m
            .lost_by(session_id)
            .iter()
            .map(|l| l.stream.clone())
            .collect();
        locks.add_foreign(m.foreign_locks(&m.clone_id), lost);
        for l in m.lost_by(session_id) {
            let marker = format!(
                "lost-{}-{}-{}",
                l.stream,
                l.generation,
                short_id(session_id)
            );
            if first_time(layout, &marker) {
                told.deny = Some(format!(
                    "session-lock: this session no longer holds stream '{}': its lease on remote '{}' was taken over by {} while this session's heartbeat was stale. Stop editing its files; claim another stream or ask that session",
                    l.stream, cfg.remote, l.by
                ));
                break;
            }
        }
    }
    let refresh_ms = cfg.refresh_seconds.max(1) * 1000;
    let age = mirror.as_ref().and_then(|m| m.age_ms(now));
    // Stale: three refresh intervals without an answer from the remote.
    if age.is_none_or(|a| a >= 3 * refresh_ms) {
        let marker = format!("stale-{}", short_id(session_id));
        if first_time(layout, &marker) {
            let why = mirror
                .as_ref()
                .and_then(|m| m.error.clone())
                .unwrap_or_else(|| "no refresh yet".into());
            told.note = Some(format!(
                "guard: the lease mirror of remote '{}' is {}; other machines' claims may be missing ({why}). The guard decides from it until the remote answers again",
                cfg.remote,
                match age {
                    Some(a) => format!("{} old", time::age(a)),
                    None => "empty".into(),
                }
            ));
        }
    }
    if age.is_none_or(|a| a >= refresh_ms) {
        start_refresher(root, layout, binary_dir, refresh_ms, now);
    }
    told
}

/// Starts `status --refresh-leases` detached, unless one was started within the interval.
fn start_refresher(
    root: &Path,
    layout: &Layout,
    binary_dir: Option<&Path>,
    refresh_ms: u64,
    now: u64,
) {
    let stamp = super::dir(layout).join("refresh.stamp");
    let last = crate::atomic::read_regular(&stamp, crate::atomic::MAX_READ)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if now.saturating_sub(last) < refresh_ms {
        return;
    }
    if crate::atomic::create_dirs(super::dir(layout)).is_err()
        || crate::atomic::replace_cache(&stamp, now.to_string().as_bytes()).is_err()
    {
        return;
    }
    let status = binary_dir
        .map(|d| d.join(format!("status{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file());
    let Some(status) = status else { return };
    // Not waited for: the refresher outlives this call and reports through the mirror.
    let _ = Command::new(status)
        .arg("--repo")
        .arg(root)
        .arg("--refresh-leases")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
