//! What the guard does with leases, without waiting on the network: one read of the mirror,
//! other machines' leases added to the live-lock set, a one-time notice of a lost lease or a
//! stale mirror, and — at most once per `refreshSeconds` — a detached refresher started and
//! left to run.

use super::LeasesConfig;
use super::mirror::{LostCause, Mirror};
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
    /// The mirror is there but cannot be read (empty, cut short): why, naming the file. The
    /// guard cannot tell which streams other machines hold, so it protects every stream not
    /// held here until a refresh rewrites the mirror.
    pub unreadable: Option<String>,
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
    let mirror = Mirror::load(layout).unwrap_or_else(|why| {
        told.unreadable = Some(why);
        None
    });
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
                let how = match l.cause {
                    LostCause::TakenOver => format!(
                        "its lease on remote '{}' was taken over by {} while this session's heartbeat was stale",
                        cfg.remote, l.by
                    ),
                    LostCause::NeverPushed => format!(
                        "this session's claim never reached remote '{}' (it was interrupted or made offline) and {} holds the lease there, which stands",
                        cfg.remote, l.by
                    ),
                };
                told.deny = Some(format!(
                    "session-lock: this session no longer holds stream '{}': {how}. Stop editing its files; claim another stream or ask that session",
                    l.stream
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
            told.note = Some(match &told.unreadable {
                Some(why) => format!(
                    "guard: the lease mirror of remote '{}' cannot be read ({why}); until a refresh rewrites it, the files of every stream not claimed here are blocked",
                    cfg.remote
                ),
                None => format!(
                    "guard: the lease mirror of remote '{}' is {}; other machines' claims may be missing ({}). The guard decides from it until the remote answers again",
                    cfg.remote,
                    match age {
                        Some(a) => format!("{} old", time::age(a)),
                        None => "empty".into(),
                    },
                    mirror
                        .as_ref()
                        .and_then(|m| m.error.clone())
                        .unwrap_or_else(|| "no refresh yet".into())
                ),
            });
        }
    }
    if age.is_none_or(|a| a >= refresh_ms) {
        start_refresher(root, layout, binary_dir, refresh_ms, now);
    }
    told
}

/// Starts `status --refresh-leases` detached, unless one was started within the interval. A
/// stamp "after now" (this clock stepped back since) does not hold refreshers back for the
/// length of the step: one is started and the stamp set to now.
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
    if last <= now && now - last < refresh_ms {
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
        .arg("--background")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
