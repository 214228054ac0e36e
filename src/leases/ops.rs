//! What claim, release, status and the refresher do with leases. Each reads the remote through
//! a fresh fetch, decides, and writes by compare-and-swap; the local files follow what landed.

use super::git::{self, GitError};
use super::mirror::{Lost, LostCause, Mirror, Mirrored};
use super::{Lease, LeasesConfig, remote_ref};
use crate::config::Config;
use crate::state::{Held, Layout};
use crate::time;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The lease this clone last pushed (or, offline, meant to push) for a stream.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    /// The remote's object for it; `None`: claimed offline, not on the remote yet.
    pub sha: Option<String>,
    pub lease: Lease,
}

fn held_path(layout: &Layout, stream: &str) -> PathBuf {
    super::dir(layout)
        .join("held")
        .join(format!("{stream}.json"))
}

/// The lease this clone last pushed for `stream`: `None` when it pushed none.
pub fn read_pushed(layout: &Layout, stream: &str) -> Option<Pushed> {
    load_pushed(layout, stream).ok().flatten()
}

/// [`read_pushed`], with an error naming the file when it is there but cannot be read.
pub fn load_pushed(layout: &Layout, stream: &str) -> Result<Option<Pushed>, String> {
    let file = held_path(layout, stream);
    let text = match crate::atomic::read_regular(&file, crate::atomic::MAX_READ) {
        Ok(t) => t.into_bytes(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", file.display())),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| format!("{} cannot be read: {e}", file.display()))
}

fn write_pushed(layout: &Layout, p: &Pushed) -> std::io::Result<()> {
    let file = held_path(layout, &p.lease.stream);
    if let Some(dir) = file.parent() {
        crate::atomic::create_dirs(dir)?;
    }
    let text = serde_json::to_vec_pretty(p).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&file, &text)
}

/// The next fetch ticket: fetches are numbered as they start, under the mirror's lock, so
/// which of two answers is the later one never depends on a clock (one can step back).
fn ticket(layout: &Layout) -> u64 {
    let _lock = super::lock(layout, "mirror.lock", std::time::Duration::from_secs(2));
    let file = super::dir(layout).join("fetch.seq");
    let last = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0)
        .max(Mirror::read(layout).map_or(0, |m| m.fetch_seq));
    let next = last + 1;
    let _ = crate::atomic::replace_cache(&file, next.to_string().as_bytes());
    next
}

/// Fetches the remote's leases and rewrites the mirror. On failure the mirror keeps its last
/// answer and records the attempt and the error, so readers can say how old it is. The mirror
/// returned is this fetch's answer (the caller decides from what the remote said now); the
/// file keeps the answer of the fetch that started last.
pub fn refresh(root: &Path, layout: &Layout, cfg: &LeasesConfig) -> Result<Mirror, GitError> {
    let clone_id = super::clone_id(layout).map_err(|e| GitError::Local(e.to_string()))?;
    let seq = ticket(layout);
    let now = time::now_ms();
    let mut mirror = Mirror::read(layout).unwrap_or_default();
    mirror.remote = cfg.remote.clone();
    mirror.clone_id = clone_id;
    mirror.tried_at_ms = now;
    let fetched = git::fetch(root, &cfg.remote)
        .and_then(|()| git::mirror_refs(root))
        .and_then(|refs| {
            let shas: Vec<String> = refs.iter().map(|(s, _)| s.clone()).collect();
            let bodies = git::blobs(root, &shas)?;
            Ok(refs
                .into_iter()
                .zip(bodies)
                .filter_map(|((sha, stream), body)| {
                    let lease: Lease = serde_json::from_str(body.as_deref()?).ok()?;
                    (lease.stream == stream).then_some(Mirrored { sha, lease })
                })
                .collect::<Vec<_>>())
        });
    match fetched {
        Ok(leases) => {
            mirror.leases = leases;
            mirror.fetched_at_ms = now;
            mirror.fetch_seq = seq;
            mirror.error = None;
            write_unless_newer(layout, &mirror);
            Ok(mirror)
        }
        Err(e) => {
            mirror.error = Some(e.to_string());
            write_unless_newer(layout, &mirror);
            Err(e)
        }
    }
}

/// Writes a fetched mirror unless one from a fetch that started later is already there (a slow
/// detached refresher must not put back what a later refresh, after a claim's push, replaced):
/// decided by the fetches' tickets, not by their clock readings.
fn write_unless_newer(layout: &Layout, mirror: &Mirror) {
    let _lock = super::lock(layout, "mirror.lock", std::time::Duration::from_secs(2));
    if let Some(on_disk) = Mirror::read(layout)
        && on_disk.fetch_seq > mirror.fetch_seq
    {
        return;
    }
    let _ = mirror.write(layout);
}

/// Why a lease could not be taken.
#[derive(Debug)]
pub enum ClaimError {
    /// Another session holds a live lease on the stream.
    Held(Box<Lease>),
    Remote(GitError),
    Io(std::io::Error),
    /// The record of the pushed lease cannot be read and the remote could not say whose the
    /// lease is: it may still be live.
    Unrecorded(String),
}

impl std::fmt::Display for ClaimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClaimError::Held(l) => write!(
                f,
                "stream '{}' is held on the remote by {}",
                l.stream,
                l.describe(time::now_ms())
            ),
            ClaimError::Remote(e) => write!(f, "{e}"),
            ClaimError::Io(e) => write!(f, "{e}"),
            ClaimError::Unrecorded(why) => write!(f, "{why}"),
        }
    }
}

/// What a claim did on the remote.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The lease is ours at this generation (`took_over`: from a stale holder).
    Lease { generation: u64, took_over: bool },
    /// Claimed locally only (`--offline`); pushed when the remote is back.
    Offline,
}

fn new_lease(
    layout: &Layout,
    held: &Held,
    prior: Option<&Lease>,
    now: u64,
) -> std::io::Result<Lease> {
    let clone_id = super::clone_id(layout)?;
    let same_holder = prior.is_some_and(|l| {
        !l.done && l.clone_id == clone_id && l.session_id == held.record.session_id
    });
    Ok(Lease {
        stream: held.record.stream.clone(),
        session_id: held.record.session_id.clone(),
        host: super::host(),
        clone_id,
        owns: held.record.owns.clone(),
        claimed_at: match prior {
            Some(l) if same_holder => l.claimed_at.clone(),
            _ => time::iso(now),
        },
        heartbeat_at: time::iso(now),
        generation: match prior {
            Some(l) if same_holder => l.generation,
            Some(l) => l.generation + 1,
            None => 1,
        },
        done: false,
        released_at: None,
    })
}

/// Takes (or renews) the lease of the stream `held` records, by compare-and-swap.
pub fn claim(
    root: &Path,
    layout: &Layout,
    config: &Config,
    cfg: &LeasesConfig,
    held: &Held,
    offline: bool,
) -> Result<Claimed, ClaimError> {
    let now = time::now_ms();
    let stale = config.heartbeat_stale_ms();
    let stream = held.record.stream.as_str();
    let clone_id = super::clone_id(layout).map_err(ClaimError::Io)?;
    let mirror = match refresh(root, layout, cfg) {
        Ok(m) => m,
        Err(GitError::Unreachable(_)) if offline => {
            let prior = Mirror::read(layout).and_then(|m| m.find(stream).map(|x| x.lease.clone()));
            let lease = new_lease(layout, held, prior.as_ref(), now).map_err(ClaimError::Io)?;
            write_pushed(layout, &Pushed { sha: None, lease }).map_err(ClaimError::Io)?;
            return Ok(Claimed::Offline);
        }
        Err(e) => return Err(ClaimError::Remote(e)),
    };
    let prior = mirror.find(stream).cloned();
    if let Some(p) = &prior
        && p.lease.is_live(now, stale)
        && (p.lease.clone_id != clone_id || p.lease.session_id != held.record.session_id)
    {
        return Err(ClaimError::Held(Box::new(p.lease.clone())));
    }
    let lease =
        new_lease(layout, held, prior.as_ref().map(|p| &p.lease), now).map_err(ClaimError::Io)?;
    let took_over = prior.as_ref().is_some_and(|p| {
        !p.lease.done
            && (p.lease.clone_id != clone_id || p.lease.session_id != held.record.session_id)
    });
    let sha = push(root, cfg, &lease, prior.as_ref().map(|p| p.sha.as_str()))?;
    pause_for_crash_tests();
    write_pushed(
        layout,
        &Pushed {
            sha: Some(sha),
            lease: lease.clone(),
        },
    )
    .map_err(ClaimError::Io)?;
    forget_lost(layout, stream);
    Ok(Claimed::Lease {
        generation: lease.generation,
        took_over,
    })
}

/// Set to a file path to make a claim stop between its push and its local record (it creates
/// the file and waits), so tests can kill it there.
pub const PAUSE_SWITCH: &str = "SESSION_LOCK_LEASE_PAUSE_AFTER_PUSH";

fn pause_for_crash_tests() {
    if let Some(file) = std::env::var_os(PAUSE_SWITCH).filter(|v| !v.is_empty()) {
        let _ = std::fs::write(file, b"pushed\n");
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Pushes `lease` by CAS against `expected`; on a lost race, who won.
fn push(
    root: &Path,
    cfg: &LeasesConfig,
    lease: &Lease,
    expected: Option<&str>,
) -> Result<String, ClaimError> {
    let body =
        serde_json::to_vec_pretty(lease).map_err(|e| ClaimError::Io(std::io::Error::other(e)))?;
    let sha = git::hash_blob(root, &body).map_err(ClaimError::Remote)?;
    match git::push_cas(
        root,
        &cfg.remote,
        &remote_ref(&lease.stream),
        &sha,
        expected,
    ) {
        Ok(()) => {
            let _ = git::set_mirror_ref(root, &lease.stream, &sha);
            Ok(sha)
        }
        Err(GitError::Lost) => {
            let layout = Layout::new(root);
            match refresh(root, &layout, cfg)
                .ok()
                .and_then(|m| m.find(&lease.stream).cloned())
            {
                Some(winner) => Err(ClaimError::Held(Box::new(winner.lease))),
                None => Err(ClaimError::Remote(GitError::Lost)),
            }
        }
        Err(e) => Err(ClaimError::Remote(e)),
    }
}

/// Marks the lease of `session_id` done on the remote (release). `Ok(false)`: nothing to mark
/// (no lease pushed from here, or marked already). An unreachable remote leaves it pending; the
/// refresher pushes it later. When this clone's record of the lease cannot be read, the lease
/// is read back from the remote (this clone's and this session's, not done: it is marked
/// done); if the remote cannot be asked either, [`ClaimError::Unrecorded`].
pub fn release(
    root: &Path,
    layout: &Layout,
    cfg: &LeasesConfig,
    stream: &str,
    session_id: &str,
) -> Result<bool, ClaimError> {
    let mut pushed = match load_pushed(layout, stream) {
        Ok(Some(p)) if p.lease.done => return Ok(false),
        Ok(Some(p)) => p,
        Ok(None) => return Ok(false),
        Err(why) => match from_remote(root, layout, cfg, stream, session_id, &why)? {
            Some(p) => p,
            None => return Ok(false),
        },
    };
    pushed.lease.done = true;
    pushed.lease.released_at = Some(time::iso(time::now_ms()));
    write_pushed(layout, &pushed).map_err(ClaimError::Io)?;
    let Some(expected) = pushed.sha.clone() else {
        return Ok(false);
    };
    let sha = push(root, cfg, &pushed.lease, Some(&expected))?;
    pushed.sha = Some(sha);
    write_pushed(layout, &pushed).map_err(ClaimError::Io)?;
    let _ = refresh(root, layout, cfg);
    Ok(true)
}

/// This clone's record of its lease on `stream`, read back from the remote when the file is
/// unreadable (`why`): the remote's lease if it is this clone's and `session_id`'s and not done
/// (the unreadable file is then replaced), else `None` (the file is removed: nothing of ours
/// is live there).
fn from_remote(
    root: &Path,
    layout: &Layout,
    cfg: &LeasesConfig,
    stream: &str,
    session_id: &str,
    why: &str,
) -> Result<Option<Pushed>, ClaimError> {
    let mirror = refresh(root, layout, cfg).map_err(|e| {
        ClaimError::Unrecorded(format!(
            "{why}, and remote '{}' could not be asked whose the lease is ({e})",
            cfg.remote
        ))
    })?;
    let clone_id = super::clone_id(layout).map_err(ClaimError::Io)?;
    match mirror.find(stream) {
        Some(m)
            if m.lease.clone_id == clone_id
                && m.lease.session_id == session_id
                && !m.lease.done =>
        {
            let pushed = Pushed {
                sha: Some(m.sha.clone()),
                lease: m.lease.clone(),
            };
            write_pushed(layout, &pushed).map_err(ClaimError::Io)?;
            Ok(Some(pushed))
        }
        _ => {
            let _ = std::fs::remove_file(held_path(layout, stream));
            Ok(None)
        }
    }
}

/// What one refresher pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Synced {
    pub heartbeats: Vec<String>,
    pub lost: Vec<String>,
    pub published: Vec<String>,
}

/// The refresher's pass: fetch the mirror, then for each lease this clone pushed: publish an
/// offline claim or a pending release, push a heartbeat that is due, and find out a take-over.
pub fn sync(
    root: &Path,
    layout: &Layout,
    config: &Config,
    cfg: &LeasesConfig,
) -> Result<Synced, GitError> {
    let mut mirror = refresh(root, layout, cfg)?;
    let now = time::now_ms();
    let mut out = Synced::default();
    let dir = super::dir(layout).join("held");
    let streams: Vec<String> = std::fs::read_dir(&dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".json")
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    for stream in streams {
        let Some(mut pushed) = read_pushed(layout, &stream) else {
            continue;
        };
        let remote = mirror.find(&stream).cloned();
        let local = layout.read_lock(&stream).ok().flatten();
        // Ours on the remote still? A lease with another holder or a newer generation is not.
        let taken = remote.as_ref().is_some_and(|r| {
            r.lease.clone_id != pushed.lease.clone_id
                || r.lease.session_id != pushed.lease.session_id
                || r.lease.generation != pushed.lease.generation
        });
        if taken && pushed.sha.is_some() {
            let by = remote
                .as_ref()
                .map(|r| r.lease.describe(now))
                .unwrap_or_default();
            record_lost(&mut mirror, lost_of(&pushed, by, LostCause::TakenOver));
            out.lost.push(stream.clone());
            let _ = std::fs::remove_file(held_path(layout, &stream));
            continue;
        }
        let due = match &pushed.sha {
            None => true,
            Some(_) if pushed.lease.done => remote.as_ref().is_some_and(|r| !r.lease.done),
            // A heartbeat pushed "after now" means this clock stepped back since: due, or the
            // lease would go quiet on the remote for as long as the step.
            Some(_) => {
                local.as_ref().is_some_and(|h| !h.done)
                    && (pushed.lease.heartbeat_ms() > now
                        || now - pushed.lease.heartbeat_ms() >= cfg.heartbeat_push_seconds * 1000)
            }
        };
        if !due {
            continue;
        }
        if let Some(h) = &local
            && !pushed.lease.done
        {
            // The session's latest beat by this clock, later than the one pushed unless the
            // clock stepped back: then now, as the clock reads it now.
            let beat = if pushed.lease.heartbeat_ms() > now {
                now
            } else {
                h.heartbeat_ms.max(pushed.lease.heartbeat_ms())
            };
            pushed.lease.heartbeat_at = time::iso(beat);
            if h.done {
                pushed.lease.done = true;
                pushed.lease.released_at = Some(time::iso(now));
            }
        }
        if pushed.sha.is_none()
            && let Some(r) = &remote
            && r.lease.is_live(now, config.heartbeat_stale_ms())
        {
            // Claimed offline while another machine took it: the remote's holder wins.
            let by = r.lease.describe(now);
            record_lost(&mut mirror, lost_of(&pushed, by, LostCause::NeverPushed));
            out.lost.push(stream.clone());
            let _ = std::fs::remove_file(held_path(layout, &stream));
            continue;
        }
        let expected = match &pushed.sha {
            Some(s) => Some(s.clone()),
            None => remote.as_ref().map(|r| r.sha.clone()),
        };
        let was_offline = pushed.sha.is_none();
        match push(root, cfg, &pushed.lease, expected.as_deref()) {
            Ok(sha) => {
                pushed.sha = Some(sha);
                let _ = write_pushed(layout, &pushed);
                if was_offline {
                    out.published.push(stream.clone());
                } else {
                    out.heartbeats.push(stream.clone());
                }
            }
            Err(ClaimError::Held(winner)) => {
                // The CAS rejected the late push: the lease moved on without us.
                let cause = if was_offline {
                    LostCause::NeverPushed
                } else {
                    LostCause::TakenOver
                };
                record_lost(&mut mirror, lost_of(&pushed, winner.describe(now), cause));
                out.lost.push(stream.clone());
                let _ = std::fs::remove_file(held_path(layout, &stream));
            }
            Err(ClaimError::Remote(e)) => return Err(e),
            Err(ClaimError::Io(_) | ClaimError::Unrecorded(_)) => {}
        }
    }
    if let Ok(fresh) = refresh(root, layout, cfg) {
        let lost = mirror.lost.clone();
        mirror = fresh;
        mirror.lost = lost;
    }
    unpushed_lost(layout, config, &mut mirror, &out.lost);
    let _ = mirror.write(layout);
    Ok(out)
}

fn lost_of(pushed: &Pushed, by: String, cause: LostCause) -> Lost {
    Lost {
        stream: pushed.lease.stream.clone(),
        session_id: pushed.lease.session_id.clone(),
        generation: pushed.lease.generation,
        by,
        cause,
    }
}

fn record_lost(mirror: &mut Mirror, lost: Lost) {
    mirror.lost.retain(|l| l.stream != lost.stream);
    mirror.lost.push(lost);
}

/// Local locks whose claim never reached the remote (killed before its push, or a record of
/// it that cannot be read) on streams another machine's live lease holds: the remote's order
/// decides, so each is recorded lost and its session told. `skip`: streams decided in this
/// pass; a session already recorded as having lost the stream keeps its first record.
fn unpushed_lost(layout: &Layout, config: &Config, mirror: &mut Mirror, skip: &[String]) {
    let now = time::now_ms();
    let stale = config.heartbeat_stale_ms();
    let theirs: Vec<Lease> = mirror
        .leases
        .iter()
        .filter(|m| m.lease.clone_id != mirror.clone_id && m.lease.is_live(now, stale))
        .filter(|m| !skip.contains(&m.lease.stream))
        .map(|m| m.lease.clone())
        .collect();
    for lease in theirs {
        let Ok(Some(local)) = layout.read_lock(&lease.stream) else {
            continue;
        };
        let session = &local.record.session_id;
        // A record of this session's live lease: the pass above decided it.
        let recorded = read_pushed(layout, &lease.stream)
            .is_some_and(|p| p.lease.session_id == *session && !p.lease.done);
        let told = mirror
            .lost
            .iter()
            .any(|l| l.stream == lease.stream && l.session_id == *session);
        if !local.is_live(now, stale) || recorded || told {
            continue;
        }
        record_lost(
            mirror,
            Lost {
                stream: lease.stream.clone(),
                session_id: local.record.session_id.clone(),
                generation: lease.generation,
                by: lease.describe(now),
                cause: LostCause::NeverPushed,
            },
        );
    }
}

/// Forgets what was lost of `stream` here: this clone holds its lease now (a claim landed).
fn forget_lost(layout: &Layout, stream: &str) {
    let _lock = super::lock(layout, "mirror.lock", std::time::Duration::from_secs(2));
    if let Some(mut m) = Mirror::read(layout)
        && m.lost.iter().any(|l| l.stream == stream)
    {
        m.lost.retain(|l| l.stream != stream);
        let _ = m.write(layout);
    }
}

/// Can leases live on this remote? Pushes a probe ref and deletes it again. `guard doctor`
/// calls this; the error says what to configure.
pub fn check_remote(root: &Path, remote: &str) -> Result<(), String> {
    let layout = Layout::new(root);
    let id = super::clone_id(&layout).map_err(|e| e.to_string())?;
    let probe = format!("refs/session-lock/probe/{id}");
    let sha = git::hash_blob(root, b"session-lock probe\n").map_err(|e| e.to_string())?;
    match git::push_cas(root, remote, &probe, &sha, None) {
        Ok(()) => git::delete_cas(root, remote, &probe, &sha).map_err(|e| {
            format!("the probe ref {probe} was pushed to '{remote}' but could not be deleted ({e}); delete it by hand")
        }),
        Err(GitError::Refused(why)) => Err(format!(
            "remote '{remote}' refuses refs under refs/session-lock/ ({why}): allow pushes to refs/session-lock/* for the team (server hooks, branch protection rules or receive.hideRefs), or set leases.remote to a remote that accepts them"
        )),
        Err(GitError::Lost) => Err(format!(
            "remote '{remote}' already holds {probe}; delete it and check again"
        )),
        Err(e) => Err(format!("remote '{remote}': {e}")),
    }
}
