//! The session's own state, kept current by every guard call: its entry in the suite's session
//! registry, the heartbeats of its locks, and what it must hear about them (a lock that had gone
//! stale, or was taken over).

use super::Payload;
use super::context::{Ctx, Env};
use super::notices::Notice;
use crate::state::Held;
use crate::{liveness, time};
use std::time::Duration;

/// How long the guard waits for the state lock before giving up on a write (it never hangs).
pub const STATE_LOCK_WAIT: Duration = Duration::from_secs(3);

/// Keeps the suite's registry entry of this session current (throttled).
pub fn register(ctx_now: u64, p: &Payload, env: &Env, throttle_ms: u64) {
    let (Some(home), Some(pid)) = (env.state_home.as_deref(), env.client_pid) else {
        return;
    };
    if p.session_id.is_empty() {
        return;
    }
    use crate::sessions::registry;
    if let Some(old) = registry::read(home, &p.session_id) {
        let fresh = time::parse_iso(&old.updated_at)
            .is_some_and(|t| ctx_now.saturating_sub(t) < throttle_ms);
        if fresh && old.pid == Some(pid) && old.cwd == p.cwd {
            return;
        }
    }
    let entry = registry::Entry {
        session_id: p.session_id.clone(),
        cwd: p.cwd.clone(),
        pid: Some(pid),
        proc_start: liveness::start_time(pid),
        transcript_path: (!p.transcript_path.is_empty()).then(|| p.transcript_path.clone()),
        permission_mode: (!p.permission_mode.is_empty()).then(|| p.permission_mode.to_string()),
        updated_at: time::iso(ctx_now),
    };
    let _ = registry::write(home, &entry);
}

/// Moves this session's heartbeats forward (at most once per throttle interval). A lock that
/// names another client process than `client_pid` (the session was resumed in a new process) is
/// due at once and is made to name this one.
///
/// Returns one line per heartbeat that could not be written (a read-only or full folder).
pub fn heartbeat(
    ctx: &Ctx,
    session_id: &str,
    client_pid: Option<u32>,
    locks: &mut [Held],
) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    let due: Vec<usize> = locks
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            let moved = client_pid.is_some() && h.record.client_pid != client_pid;
            h.record.session_id == session_id && !h.done && (moved || h.age_ms(ctx.now) >= throttle)
        })
        .map(|(i, _)| i)
        .collect();
    for i in due {
        let stream = locks[i].record.stream.clone();
        match ctx.layout.touch_heartbeat_from(
            &stream,
            session_id,
            client_pid,
            ctx.now,
            STATE_LOCK_WAIT,
        ) {
            Ok(true) => match ctx.layout.read_lock(&stream) {
                Ok(Some(fresh)) => locks[i] = fresh,
                _ => {
                    locks[i].heartbeat_ms = ctx.now;
                    locks[i].record.heartbeat_at = time::iso(ctx.now);
                }
            },
            Ok(false) => {}
            Err(e) => failed.push((
                stream.clone(),
                format!(
                    "cannot write the heartbeat of stream '{stream}' to {}: {e}. The lock goes stale {} min after its last heartbeat and stops protecting its files; make session-lock/ writable",
                    ctx.layout.lock_path(&stream).display(),
                    ctx.config.heartbeat_stale_minutes
                ),
            )),
        }
    }
    failed
}

/// What this session must hear about its own locks: one that had gone stale (revived by this
/// call, or since taken over by another session, whose files are then no longer its own).
/// `own`: the caller's locks; `taken`: locks taken over from the caller.
pub fn stale_notices(ctx: &Ctx, p: &Payload, own: &[Held], taken: &[Held]) -> Vec<Notice> {
    let stale_ms = ctx.config.heartbeat_stale_ms();
    let mut out = Vec::new();
    for h in own.iter().chain(taken).filter(|h| !h.done) {
        if h.record.session_id == p.session_id && !h.is_live(ctx.now, stale_ms) {
            out.push(Notice::new(
                format!("stale:{}:{}", h.record.stream, h.record.heartbeat_at),
                format!(
                    "your lock on stream '{}' had gone stale (heartbeat {} ago, limit {} min), so its files were unprotected; this call renews it. Keep the lock fresh with wait-milestone --stream {} when you wait",
                    h.record.stream,
                    crate::time::age(h.age_ms(ctx.now)),
                    ctx.config.heartbeat_stale_minutes,
                    h.record.stream
                ),
            ));
        }
        if h.record.taken_from.as_deref() == Some(p.session_id.as_str()) {
            out.push(Notice::new(
                format!("taken:{}:{}", h.record.stream, h.record.claimed_at),
                format!(
                    "your lock on stream '{}' went stale and session {} has claimed the stream since; its files are no longer yours (your writes to them are blocked). Pick another stream",
                    h.record.stream,
                    crate::state::short_id(&h.record.session_id)
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::state::LockRecord;

    fn lock(ctx: &Ctx, heartbeat_ms: u64, client_pid: u32) -> LockRecord {
        let record = LockRecord {
            cwd: ctx.root.display().to_string(),
            client_pid: Some(client_pid),
            client_start: liveness::start_time(client_pid),
            ..crate::state::tests::record("api", heartbeat_ms)
        };
        ctx.layout.write_lock(&record).unwrap();
        record
    }

    #[test]
    fn heartbeat_is_throttled_unless_the_client_process_changed() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::new(dir.path().to_path_buf(), Config::default());
        let me = std::process::id();
        let recent = ctx.now - 5_000;
        let record = lock(&ctx, recent, me);
        let (mut locks, _) = ctx.layout.read_locks();
        heartbeat(&ctx, &record.session_id, Some(me), &mut locks);
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(
            held.heartbeat_ms, recent,
            "same process, within the throttle"
        );

        // The session was resumed: a new client process, 5 s after the last heartbeat.
        lock(&ctx, recent, u32::MAX - 1);
        let (mut locks, _) = ctx.layout.read_locks();
        assert!(locks[0].orphaned());
        heartbeat(&ctx, &record.session_id, Some(me), &mut locks);
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.heartbeat_ms, ctx.now);
        assert_eq!(held.record.client_pid, Some(me));
        assert!(!held.orphaned());
        assert_eq!(
            locks[0].record.client_pid,
            Some(me),
            "the caller's copy too"
        );
        assert!(!locks[0].orphaned());
    }
}
