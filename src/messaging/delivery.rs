//! The lines a message's delivery writes, in both its ledgers: the line about one message in
//! the sender's outbox and the target's inbound ledger, the start line read back with its text,
//! the framed content made from it, and when a live process must get it (again). Every route
//! ([`super::socket`], [`super::wake`], [`super::hook`]) and recovery ([`super::recover`]) write
//! through here; none of them imports another route to do it.

use super::directory::Live;
use super::frame;
use super::ledger::{Durability, Entry, Ledger, Op, Record, Via};
use super::{Error, io};
use crate::time;
use std::path::Path;

/// Set to a step name to make `send` (or a wake) abort there (tests of crash recovery use it).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_MESSAGING_CRASH_AT";

pub(crate) fn crash_point(step: &str) {
    if std::env::var(CRASH_SWITCH).is_ok_and(|v| v == step) {
        std::process::abort();
    }
}

/// The framed content of a message from its start line.
pub fn content_of(start: &Record) -> Option<String> {
    let text = start.text.as_deref()?;
    let sender_id = start.sender_id.as_deref().unwrap_or("terminal");
    let name = start.sender_name.as_deref().unwrap_or(sender_id);
    let mode = start.sender_mode.unwrap_or(frame::Mode::Prompting);
    let from = start.sender_address.as_deref().unwrap_or("terminal");
    Some(frame::wrap(
        from,
        name,
        mode,
        &frame::body(&start.message_id, name, sender_id, text),
    ))
}

/// Appends durably to a ledger, taking its lock.
pub fn append(ledger: std::io::Result<Ledger>, recs: &[Record]) -> Result<(), Error> {
    append_as(ledger, recs, Durability::Synced)
}

fn append_as(
    ledger: std::io::Result<Ledger>,
    recs: &[Record],
    durability: Durability,
) -> Result<(), Error> {
    let l = ledger.map_err(io("ledger"))?;
    l.append_as(recs, durability)
        .map_err(io(format!("cannot append to {}", l.path.display())))
}

/// Appends one line about a message to both its ledgers, durably.
pub fn mark_line(home: &Path, start: &Record, r: Record) -> Result<(), Error> {
    mark_line_as(home, start, r, Durability::Synced)
}

/// [`mark_line`], synced or not.
pub fn mark_line_as(
    home: &Path,
    start: &Record,
    r: Record,
    durability: Durability,
) -> Result<(), Error> {
    if let Some(s) = start.sender_id.as_deref() {
        append_as(
            Ledger::outbox(home, s),
            std::slice::from_ref(&r),
            durability,
        )?;
    }
    if let Some(t) = start.target_id.as_deref() {
        append_as(Ledger::inbound(home, t), &[r], durability)?;
    }
    Ok(())
}

/// Records an op (a final one, mostly) in both ledgers.
pub fn mark(home: &Path, start: &Record, op: Op, via: Via) -> Result<(), Error> {
    let mut r = Record::new(op, &start.message_id, time::now_ms());
    r.via = Some(via);
    mark_line(home, start, r)
}

/// The start line of a message from its sender's outbox.
pub fn start_of(home: &Path, sender: &str, id: &str) -> Option<Record> {
    let l = Ledger::outbox(home, sender).ok()?;
    l.entries_since(u64::MAX)
        .ok()?
        .into_iter()
        .find(|e| e.id == id)
        .and_then(|e| e.start)
}

/// True when the message must be written (again) to this live process: never written to it,
/// or written long ago without the client ever taking it. Never once a client held it (for the
/// sender's mode): not to that process, nor to a later one of the session.
pub fn needs_write(e: &Entry, live: &Live, now_ms: u64, resend_after_ms: u64) -> bool {
    if e.client_hold() {
        return false;
    }
    let to_this = e.attempts.iter().rev().find(|a| {
        a.pid == Some(live.pid) && a.proc_start == live.proc_start && a.via != Some(Via::Wake)
    });
    match to_this {
        None => true,
        Some(a) => !a.client_hold && now_ms.saturating_sub(a.at_ms()) > resend_after_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_with(attempts: Vec<Record>) -> Entry {
        let mut lines = vec![Record::new(Op::Queued, "m", 0)];
        lines.extend(attempts);
        crate::messaging::ledger::fold(lines).remove(0)
    }

    fn sent(pid: u32, start: &str, at: u64, hold: bool) -> Record {
        let mut r = Record::new(Op::Sent, "m", at);
        r.via = Some(Via::Socket);
        r.pid = Some(pid);
        r.proc_start = Some(start.into());
        r.client_hold = hold;
        r
    }

    #[test]
    fn write_again_only_when_this_process_never_took_it() {
        let live = Live {
            pid: 7,
            proc_start: Some("100".into()),
            socket: None,
        };
        let base = 1_000_000_000;
        assert!(needs_write(&entry_with(vec![]), &live, base, 30_000));
        // Written to an earlier process with the same pid: write to this one.
        assert!(needs_write(
            &entry_with(vec![sent(7, "99", base, false)]),
            &live,
            base,
            30_000
        ));
        // Written to this one just now: wait for the transcript.
        let e = entry_with(vec![sent(7, "100", base, false)]);
        assert!(!needs_write(&e, &live, base + 1000, 30_000));
        // Long ago and never seen: the client did not take it.
        assert!(needs_write(&e, &live, base + 31_000, 30_000));
        // Held by the client for its mode: never again, not to a later process either.
        let h = entry_with(vec![sent(7, "100", base, true)]);
        assert!(!needs_write(&h, &live, base + 3_600_000, 30_000));
        let earlier = entry_with(vec![sent(7, "99", base, true)]);
        assert!(!needs_write(&earlier, &live, base, 30_000));
    }

    #[test]
    fn content_carries_the_frame() {
        let mut s = Record::new(Op::Queued, "m-1", 0);
        s.sender_id = Some("s-1".into());
        s.sender_name = Some("alpha".into());
        s.sender_mode = Some(frame::Mode::Bypass);
        s.sender_address = Some("uds:/tmp/a.sock".into());
        s.text = Some("do it".into());
        let c = content_of(&s).unwrap();
        assert!(c.starts_with("<cross-session-message from=\"uds:/tmp/a.sock\" from-name=\"alpha\" from-mode=\"bypass\">\nSession message m-1 from alpha (s-1):\ndo it"));
        s.text = None;
        assert!(content_of(&s).is_none());
    }
}
