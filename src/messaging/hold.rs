//! Inbound review (§14.3): a target's policy is accept, hold or refuse (`messaging.inbound`,
//! per session in `messaging.inboundSessions`). A held message waits in the target's inbound
//! ledger — its text there and nowhere else — until the target accepts or refuses it
//! (`send-message review`), it expires (`holdExpirySeconds`), or newer ones push it out
//! (`maxHeldPerTarget`, oldest first). Expiry and capacity are applied lazily: before a new hold,
//! at review, and at the target's tool calls (the hook). Refused and expired text is scrubbed.

use super::directory::Target;
use super::ledger::{self, Entry, Ledger, Op, Record, State, Via};
use super::{Ctx, Error, SendResult, SendStatus, io};
use crate::config::{InboundPolicy, MessagingConfig};
use crate::filelock::FileLock;
use crate::time;
use std::path::Path;

/// The target's policy: a per-session entry (by id or any of its names), else the repo's.
pub fn policy_for(cfg: &MessagingConfig, t: &Target) -> InboundPolicy {
    for (key, p) in &cfg.inbound_sessions {
        if key == &t.id || t.names.iter().any(|n| n.eq_ignore_ascii_case(key)) {
            return *p;
        }
    }
    cfg.inbound
}

/// Loads the config of the target's repo (its inbound policy); the caller's on any trouble.
pub fn target_config(ctx: &Ctx, t: &Target) -> MessagingConfig {
    let root = crate::state::git_top(Path::new(&t.cwd));
    match root.map(|r| crate::config::Config::load(&r)) {
        Some(Ok(c)) => c.messaging,
        _ => ctx.m().clone(),
    }
}

fn expires_ms(e: &Entry, expiry_ms: u64) -> u64 {
    e.start
        .as_ref()
        .and_then(|r| r.expires_at.as_deref())
        .and_then(time::parse_iso)
        .unwrap_or(e.first_ms + expiry_ms)
}

/// Which held messages must go now: expired ones, then the oldest past capacity (counting
/// `adding` new ones). Pure.
pub fn sweep(
    entries: &[Entry],
    now_ms: u64,
    cfg: &MessagingConfig,
    adding: usize,
) -> Vec<(String, &'static str)> {
    let expiry = cfg.hold_expiry_seconds * 1000;
    let mut out = Vec::new();
    let mut kept: Vec<&Entry> = Vec::new();
    for e in entries.iter().filter(|e| e.state == State::Held) {
        if expires_ms(e, expiry) <= now_ms {
            out.push((e.id.clone(), "expired"));
        } else {
            kept.push(e);
        }
    }
    kept.sort_by_key(|e| e.first_ms);
    let over = (kept.len() + adding).saturating_sub(cfg.max_held_per_target);
    for e in kept.iter().take(over) {
        out.push((e.id.clone(), "capacity"));
    }
    out
}

/// Applies [`sweep`] to the target's inbound ledger (lock held): `expired` lines, the texts
/// scrubbed. Returns the lines the senders' outboxes must get (append them after letting the
/// inbound lock go: [`mirror`]).
pub fn sweep_locked(
    inbound: &Ledger,
    lock: &FileLock,
    cfg: &MessagingConfig,
    adding: usize,
) -> std::io::Result<Vec<(String, Record)>> {
    let now = time::now_ms();
    let entries = inbound.entries_since(u64::MAX)?;
    let gone = sweep(&entries, now, cfg, adding);
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = Vec::new();
    let mut mirror = Vec::new();
    for (id, why) in gone {
        let mut r = Record::new(Op::Expired, &id, now);
        r.reason = Some(why.into());
        let sender = entries
            .iter()
            .find(|e| e.id == id)
            .and_then(|e| e.sender_id().map(str::to_string));
        if let Some(s) = sender {
            mirror.push((s, r.clone()));
        }
        lines.push(r);
    }
    inbound.append_locked(lock, &lines)?;
    inbound.compact_locked(lock, now, ledger::RETAIN_MS)?;
    Ok(mirror)
}

/// Appends final lines to senders' outboxes (each under its own lock, one at a time).
pub fn mirror(home: &Path, updates: Vec<(String, Record)>) {
    for (sender, r) in updates {
        if let Ok(l) = Ledger::outbox(home, &sender) {
            let _ = l.append(&[r]);
        }
    }
}

/// Applies expiry and capacity to a target's held messages now (lock, sweep, mirror).
pub fn sweep_target(home: &Path, target: &str, cfg: &MessagingConfig) {
    let Ok(inbound) = Ledger::inbound(home, target) else {
        return;
    };
    if !inbound.path.exists() {
        return;
    }
    let updates = match inbound.lock() {
        Ok(lock) => sweep_locked(&inbound, &lock, cfg, 0).unwrap_or_default(),
        Err(_) => return,
    };
    mirror(home, updates);
}

/// If the target's inbound ledger has finished a message the sender's outbox still shows as
/// held, copies the final line over.
pub fn mirror_final(home: &Path, sender: &str, target: &str, id: &str) {
    let Ok(inbound) = Ledger::inbound(home, target) else {
        return;
    };
    let Ok(entries) = inbound.entries() else {
        return;
    };
    let Some(e) = entries.iter().find(|e| e.id == id) else {
        return;
    };
    if !e.state.is_final() {
        return;
    }
    let op = match e.state {
        State::Accepted | State::Delivered => Op::Delivered,
        State::Expired => Op::Expired,
        _ => Op::Refused,
    };
    let mut r = Record::new(op, id, time::now_ms());
    r.via = Some(Via::Review);
    r.reason = e.end.as_ref().and_then(|x| x.reason.clone());
    mirror(home, vec![(sender.to_string(), r)]);
}

/// Holds a message for the target's review. The caller holds the sender's outbox lock.
pub fn hold(
    ctx: &Ctx,
    tcfg: &MessagingConfig,
    outbox: &Ledger,
    olock: &FileLock,
    target: &Target,
    mut start: Record,
) -> Result<SendResult, Error> {
    let id = start.message_id.clone();
    let inbound = Ledger::inbound(&ctx.home, &target.id).map_err(io("inbound"))?;
    let ilock = inbound.lock().map_err(io("inbound lock"))?;
    let updates = sweep_locked(&inbound, &ilock, tcfg, 1).map_err(io("inbound"))?;
    let now = time::now_ms();
    start.op = Op::Held;
    start.expires_at = Some(time::iso(now + tcfg.hold_expiry_seconds * 1000));
    // The text goes to the target's ledger only.
    let mut public = start.clone();
    public.text = None;
    inbound
        .append_locked(&ilock, std::slice::from_ref(&start))
        .map_err(io("inbound"))?;
    outbox
        .append_locked(olock, &[public])
        .map_err(io("outbox"))?;
    drop(ilock);
    let (mine, others): (Vec<_>, Vec<_>) = updates
        .into_iter()
        .partition(|(s, _)| Some(s.as_str()) == start.sender_id.as_deref());
    let mine: Vec<Record> = mine.into_iter().map(|(_, r)| r).collect();
    if !mine.is_empty() {
        outbox.append_locked(olock, &mine).map_err(io("outbox"))?;
    }
    mirror(&ctx.home, others);
    Ok(SendResult::new(
        SendStatus::Held,
        &id,
        format!(
            "{} reviews inbound messages; it is held until {} accepts it (send-message review) or it expires in {}s",
            target.name, target.name, tcfg.hold_expiry_seconds
        ),
    )
    .to(target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::ledger::fold;

    fn held(id: &str, at: u64) -> Record {
        let mut r = Record::new(Op::Held, id, at);
        r.sender_id = Some("s".into());
        r.text = Some(format!("text of {id}"));
        r
    }

    #[test]
    fn policy_by_session_then_repo() {
        let mut cfg = MessagingConfig::default();
        let t = Target {
            id: "abc".into(),
            names: vec!["Api".into()],
            ..Target::default()
        };
        assert_eq!(policy_for(&cfg, &t), InboundPolicy::Accept);
        cfg.inbound = InboundPolicy::Hold;
        assert_eq!(policy_for(&cfg, &t), InboundPolicy::Hold);
        cfg.inbound_sessions
            .insert("api".into(), InboundPolicy::Refuse);
        assert_eq!(policy_for(&cfg, &t), InboundPolicy::Refuse);
    }

    #[test]
    fn expiry_then_capacity_oldest_first() {
        let cfg = MessagingConfig {
            hold_expiry_seconds: 300,
            max_held_per_target: 3,
            ..MessagingConfig::default()
        };
        let base = 10_000_000;
        let mut lines = vec![held("old", base - 301_000)];
        for i in 0..3 {
            lines.push(held(&format!("h{i}"), base + i * 1000));
        }
        lines.push(held("done", base));
        lines.push(Record::new(Op::Delivered, "done", base + 1));
        let e = fold(lines);
        let gone = sweep(&e, base + 5000, &cfg, 0);
        assert_eq!(gone, vec![("old".to_string(), "expired")]);
        let gone = sweep(&e, base + 5000, &cfg, 1);
        assert_eq!(
            gone,
            vec![
                ("old".to_string(), "expired"),
                ("h0".to_string(), "capacity")
            ]
        );
    }

    #[test]
    fn sweep_expires_scrubs_and_reports_senders() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::inbound(dir.path(), "t").unwrap();
        let lock = l.lock().unwrap();
        let now = time::now_ms();
        l.append_locked(&lock, &[held("a", now - 400_000), held("b", now)])
            .unwrap();
        let cfg = MessagingConfig::default();
        let m = sweep_locked(&l, &lock, &cfg, 0).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, "s");
        assert_eq!(m[0].1.op, Op::Expired);
        let text = std::fs::read_to_string(&l.path).unwrap();
        assert!(!text.contains("text of a"), "expired text is scrubbed");
        assert!(text.contains("text of b"));
    }
}
