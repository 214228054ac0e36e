//! What the tools say about leases: claim's compare-and-swap and its messages, release's done
//! mark, the mirror status reads other machines' rows from (`tools::report`), the refresher.

use crate::config::Config;
use crate::exit::{Code, fail};
use crate::leases::LeasesConfig;
use crate::leases::git::GitError;
use crate::leases::mirror::Mirror;
use crate::leases::ops::{self, ClaimError, Claimed};
use crate::state::{Held, Layout};
use crate::time;
use std::path::Path;
use std::time::Duration;

/// `claim`'s step after the guard recorded the local lock: the lease on the remote. On any
/// failure the local lock is taken back (unless this clone already held the lease), so the
/// claim fails closed.
pub fn claim(
    root: &Path,
    layout: &Layout,
    config: &Config,
    cfg: &LeasesConfig,
    held: &Held,
    offline: bool,
) -> anyhow::Result<String> {
    let stream = held.record.stream.as_str();
    match ops::claim(root, layout, config, cfg, held, offline) {
        Ok(Claimed::Lease {
            generation,
            took_over,
        }) => Ok(format!(
            "Lease: {} on remote '{}' is this session's (generation {generation}{}).\n",
            crate::leases::remote_ref(stream),
            cfg.remote,
            if took_over {
                ", taken over from a stale holder"
            } else {
                ""
            }
        )),
        Ok(Claimed::Offline) => Ok(format!(
            "Lease: remote '{}' is unreachable; claimed here only (--offline). Other machines do not see this claim until the remote is back; the refresher publishes it then, and if another machine claimed '{stream}' meanwhile, theirs stands.\n",
            cfg.remote
        )),
        Err(e) => {
            take_back(layout, held);
            let (code, msg) = match &e {
                ClaimError::Held(l) => (
                    Code::Conflict,
                    format!(
                        "stream '{stream}' is held by {} (lease {} on remote '{}'). Pick another stream, or wait for it: wait-milestone {stream} --stream <yours>",
                        l.describe(time::now_ms()),
                        crate::leases::remote_ref(stream),
                        cfg.remote
                    ),
                ),
                ClaimError::Remote(GitError::Unreachable(why)) => (
                    Code::Refused,
                    format!(
                        "cannot claim '{stream}': remote '{}' is unreachable ({why}). The round is shared across machines, so the claim is not made. When the remote is back run claim {stream} again, or claim {stream} --offline to claim here only",
                        cfg.remote
                    ),
                ),
                ClaimError::Remote(e @ GitError::NoSuchRemote(..)) => (
                    Code::Usage,
                    format!(
                        "cannot claim '{stream}': leases.remote in session-lock/config.json: {e}; set it to one of them or to a URL"
                    ),
                ),
                ClaimError::Io(e) => (Code::Failure, format!("cannot claim '{stream}': {e}")),
                ClaimError::Remote(GitError::Refused(why)) => (
                    Code::Refused,
                    format!(
                        "cannot claim '{stream}': remote '{}' refuses refs under refs/session-lock/ ({why}); allow them on the server or set leases.remote in session-lock/config.json to a remote that accepts them",
                        cfg.remote
                    ),
                ),
                other => (
                    Code::Failure,
                    format!(
                        "cannot claim '{stream}' on remote '{}': {other}",
                        cfg.remote
                    ),
                ),
            };
            Err(fail(code, msg))
        }
    }
}

/// Removes this session's local lock of a stream whose lease was not taken, if this clone
/// never held that lease.
fn take_back(layout: &Layout, held: &Held) {
    let stream = held.record.stream.as_str();
    if ops::read_pushed(layout, stream)
        .is_some_and(|p| p.lease.session_id == held.record.session_id)
    {
        return;
    }
    let Ok(Some(_state)) = layout.lock_state(Duration::from_secs(10)) else {
        return;
    };
    if let Ok(Some(now)) = layout.read_lock(stream)
        && now.record.session_id == held.record.session_id
        && !now.done
    {
        let index = crate::round_index::Index::before_write(layout);
        let _ = std::fs::remove_file(layout.lock_path(stream));
        crate::round_index::Index::after_write(layout, index, &[stream]);
    }
}

/// `release`'s step after the done marker: the lease of `session_id` marked done on the
/// remote. The release stands whatever happens here; the message says what the remote knows.
/// An error: the lease may still be live on the remote and nothing will end it by itself (the
/// record of it cannot be read and the remote could not be asked).
pub fn release(
    root: &Path,
    layout: &Layout,
    cfg: &LeasesConfig,
    stream: &str,
    session_id: &str,
) -> anyhow::Result<String> {
    Ok(match ops::release(root, layout, cfg, stream, session_id) {
        Ok(true) => format!("lease on remote '{}' marked done\n", cfg.remote),
        Ok(false) => String::new(),
        Err(ClaimError::Unrecorded(why)) => {
            return Err(fail(
                Code::Failure,
                format!(
                    "released '{stream}' here, but its lease on remote '{}' may still be live: {why}. Run release {stream} again once the remote answers",
                    cfg.remote
                ),
            ));
        }
        Err(ClaimError::Remote(GitError::Unreachable(why))) => format!(
            "warning: remote '{}' is unreachable ({why}); the lease is marked done there when it is back\n",
            cfg.remote
        ),
        Err(ClaimError::Held(l)) => format!(
            "warning: the lease of '{stream}' moved on to {}; the remote was not changed\n",
            l.describe(time::now_ms())
        ),
        Err(e) => format!("warning: the lease on remote '{}': {e}\n", cfg.remote),
    })
}

/// Where status's answer about other machines came from.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorState {
    pub remote: String,
    /// Seconds since the remote last answered; `None`: never.
    pub age_s: Option<u64>,
    /// Why the last refresh failed.
    pub error: Option<String>,
}

/// Refreshes the mirror for status (its failure is reported, not fatal).
pub fn status_mirror(root: &Path, layout: &Layout, cfg: &LeasesConfig) -> (Mirror, MirrorState) {
    let _ = ops::refresh(root, layout, cfg);
    let mirror = Mirror::read(layout).unwrap_or_default();
    let state = MirrorState {
        remote: cfg.remote.clone(),
        age_s: mirror.age_ms(time::now_ms()).map(|ms| ms / 1000),
        error: mirror.error.clone(),
    };
    (mirror, state)
}

/// How long a refresher waits for the one running before it.
const REFRESHER_WAIT: Duration = Duration::from_secs(30);

/// Who started a refresher pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefreshRun {
    /// A person or script (`status --refresh-leases`): it waits for a pass already running.
    Asked,
    /// The guard, detached (`--background`): it waits only if no other one is waiting, and
    /// leaves at once otherwise, so a remote that never answers holds two refreshers at most.
    Background,
}

/// The refresher's whole run (`status --refresh-leases`): one sync pass, quiet.
pub fn refresher(
    root: &Path,
    layout: &Layout,
    config: &Config,
    run: RefreshRun,
) -> anyhow::Result<Code> {
    let Some(cfg) = &config.leases else {
        return Ok(Code::Success);
    };
    // One pass at a time per clone. A second one waits and then runs its own pass: the one
    // before it may have fetched before a claim's push that this one was started to see. A
    // third detached one has nothing to add to the one waiting and leaves.
    let held = match run {
        RefreshRun::Asked => crate::leases::lock(layout, "refresh.lock", REFRESHER_WAIT),
        RefreshRun::Background => crate::leases::lock(layout, "refresh.lock", Duration::ZERO)
            .or_else(|| {
                let _waiting = crate::leases::lock(layout, "refresh.queue", Duration::ZERO)?;
                crate::leases::lock(layout, "refresh.lock", REFRESHER_WAIT)
            }),
    };
    match (held, run) {
        (Some(_held), _) => match ops::sync(root, layout, config, cfg) {
            Ok(_) => Ok(Code::Success),
            Err(e) => Err(fail(Code::Failure, format!("lease refresh: {e}"))),
        },
        (None, RefreshRun::Background) => Ok(Code::Success),
        (None, RefreshRun::Asked) => Err(fail(
            Code::Failure,
            format!(
                "lease refresh: another refresh of remote '{}' held {} for {}s and did not finish; run status --refresh-leases again later",
                cfg.remote,
                crate::leases::dir(layout).join("refresh.lock").display(),
                REFRESHER_WAIT.as_secs()
            ),
        )),
    }
}
