//! Moving messages on after the fact. Every `send`, `list` and `status` (and `send --wait`)
//! looks at the messages it can see and moves each as far as the facts allow:
//!
//! | now | seen | becomes |
//! |---|---|---|
//! | queued, in the sender's outbox only (its send was killed between the two lines) | — | in the target's inbound ledger too |
//! | queued or accepted | in a model request's input, answered | delivered |
//! | queued, written to a live process | the client took it | accepted |
//! | accepted | the process that took it stopped, its model never saw it | queued again |
//! | queued, the target runs with a socket | never written to this process (or long ago), and not in the prompt of a wake under way | written |
//! | queued, the target is not running | no wake under way | a detached wake starts |
//!
//! So a message accepted by a client that then stopped is delivered at the target's next run
//! or wake, and `allowColdWake: false` hands a message over as soon as anyone's command sees
//! the target running again. Best effort and bounded: at most [`MAX_OPEN`] messages per look.

use super::delivery::{mark, mark_line, needs_write};
use super::directory::{Live, Target};
use super::identity::Caller;
use super::ledger::{self, Entry, Ledger, Op, Record, State, Via};
use super::progress::{Seen, Tracker, seen_all};
use super::{Ctx, hold};
use crate::time;
use std::collections::{HashMap, HashSet};

/// The most open messages one look moves on.
pub const MAX_OPEN: usize = 20;

/// True while the process that took a message still runs.
fn taker_alive(e: &Entry) -> bool {
    e.taken.as_ref().is_some_and(|t| {
        t.pid
            .is_some_and(|pid| crate::liveness::is_alive(pid, t.proc_start.as_deref()))
    })
}

/// The last socket write to a process that still runs, if any.
fn live_attempt(e: &Entry) -> Option<&Record> {
    e.attempts.iter().rev().find(|a| {
        a.via == Some(Via::Socket)
            && a.pid
                .is_some_and(|pid| crate::liveness::is_alive(pid, a.proc_start.as_deref()))
    })
}

/// What a look may do besides confirming: `wake` false leaves cold targets to the caller (a
/// `send` to that target starts its own wake, which takes every queued message).
#[derive(Clone, Copy)]
pub struct Look<'a> {
    pub no_wake_for: Option<&'a str>,
}

/// Moves one open message on (see the table above). `seen` is what the whole transcript says.
pub fn advance(ctx: &Ctx, e: &Entry, start: &Record, t: &Target, seen: Seen, look: Look) {
    let home = &ctx.home;
    if seen == Seen::Consumed {
        let _ = mark(home, start, Op::Delivered, Via::Confirmed);
        return;
    }
    let mut state = e.state;
    if state == State::Accepted && !taker_alive(e) {
        let mut r = Record::new(Op::Returned, &e.id, time::now_ms());
        r.reason = Some(format!(
            "{} stopped before its model saw the message; it is delivered at its next run",
            t.name
        ));
        let _ = mark_line(home, start, r);
        state = State::Queued;
    }
    if state == State::Queued
        && let Some(a) = live_attempt(e)
        && let Some(path) = t.transcript.as_deref()
    {
        // Taken since that write?
        let mut tr = Tracker::new(path, vec![e.id.clone()], a.offset.unwrap_or(0));
        tr.poll();
        if tr.seen(0) >= Seen::Taken {
            let live = Live {
                pid: a.pid.unwrap_or(0),
                proc_start: a.proc_start.clone(),
                socket: None,
            };
            let _ = super::socket::record_taken(home, start, &live, Via::Confirmed);
            return;
        }
    }
    if state != State::Queued {
        return;
    }
    if e.client_hold() {
        expire_client_hold(ctx, e, start, t);
        return;
    }
    match &t.live {
        Some(live) => {
            let resend = ctx.m().resend_after_seconds * 1000;
            if let Some(sock) = &live.socket
                && needs_write(e, live, time::now_ms(), resend)
                && !super::wake::riding_a_wake(ctx, e, &t.id)
            {
                let _ = super::socket::attempt(ctx, t, live, sock, start, 0);
            }
        }
        None => {
            // Not again right after a wake that failed: the next try waits resendAfterSeconds.
            let recent =
                time::now_ms().saturating_sub(e.failure_ms) < ctx.m().resend_after_seconds * 1000;
            if ctx.m().allow_cold_wake && !recent && look.no_wake_for != Some(t.id.as_str()) {
                super::wake::spawn_if_idle(ctx, &t.id);
            }
        }
    }
}

/// A message the target's client held (it runs in bypassPermissions and the sender prompts) is
/// that client's to let in; no route hands it over past the hold. It ends as a review hold
/// does: past the target's `holdExpirySeconds` it expires and its text is deleted.
fn expire_client_hold(ctx: &Ctx, e: &Entry, start: &Record, t: &Target) {
    let cfg = hold::target_config(ctx, t);
    let now = time::now_ms();
    let held_at = e.client_hold_ms().unwrap_or(e.first_ms);
    if now.saturating_sub(held_at) <= cfg.hold_expiry_seconds * 1000 {
        return;
    }
    let mut r = Record::new(Op::Expired, &e.id, now);
    r.reason = Some(format!(
        "held by {}'s client (it runs in bypassPermissions and this sender does not) and never let in there within {}s",
        t.name, cfg.hold_expiry_seconds
    ));
    if mark_line(&ctx.home, start, r).is_ok()
        && let Some(outbox) = start
            .sender_id
            .as_deref()
            .and_then(|s| Ledger::outbox(&ctx.home, s).ok())
        && let Ok(lock) = outbox.lock()
    {
        let _ = outbox.compact_locked(&lock, now, ledger::RETAIN_MS);
    }
}

/// The sender's unfinished messages: moved on, and what target-side review decided mirrored.
/// Returns the ids it looked at ([`waiting_anywhere`] leaves them be).
pub fn outbox(ctx: &Ctx, caller: &Caller, targets: &[Target], look: Look) -> HashSet<String> {
    let mut looked = HashSet::new();
    let Ok(outbox) = Ledger::outbox(&ctx.home, &caller.id) else {
        return looked;
    };
    let Ok(entries) = outbox.entries_since(u64::MAX) else {
        return looked;
    };
    let open: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.state.is_open() || e.state == State::Held)
        .collect();
    let mut by_target: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in open.into_iter().rev().take(MAX_OPEN) {
        let Some(tid) = e.target_id() else { continue };
        let Some(t) = targets.iter().find(|t| t.id == tid) else {
            continue;
        };
        if e.state == State::Held {
            hold::sweep_target(&ctx.home, tid, &hold::target_config(ctx, t));
            hold::mirror_final(&ctx.home, &caller.id, tid, &e.id);
            continue;
        }
        by_target.entry(tid).or_default().push(e);
    }
    for (tid, list) in by_target {
        let Some(t) = targets.iter().find(|t| t.id == tid) else {
            continue;
        };
        finish_recording(ctx, &outbox, tid, &list);
        // One read of each target's transcript, however many messages wait for it.
        let ids: Vec<String> = list.iter().map(|e| e.id.clone()).collect();
        let seen = seen_all(t.transcript.as_deref(), &ids);
        for (e, s) in list.iter().zip(seen) {
            if let Some(start) = &e.start {
                advance(ctx, e, start, t, s, look);
                looked.insert(e.id.clone());
            }
        }
    }
    looked
}

/// A send killed between its two start lines (the sender's outbox, then the target's inbound
/// ledger) left its message in the outbox only, where no route sees it: the hook and a wake
/// read the inbound ledger. The missing line is written now, as the send would have written it
/// (without the text), under the outbox lock the send held across both lines and then the
/// inbound lock, so a send still under way is waited for, not doubled. When it cannot be
/// written, an `unsent` line in the outbox says why (`status` shows it).
fn finish_recording(ctx: &Ctx, outbox: &Ledger, target: &str, list: &[&Entry]) {
    let queued: Vec<&Entry> = list
        .iter()
        .copied()
        .filter(|e| e.state == State::Queued)
        .collect();
    if queued.is_empty() {
        return;
    }
    let recorded = |inbound: &Ledger| -> std::io::Result<HashSet<String>> {
        Ok(inbound
            .entries_since(u64::MAX)?
            .into_iter()
            .filter(|e| e.start.is_some())
            .map(|e| e.id)
            .collect())
    };
    let inbound = Ledger::inbound(&ctx.home, target);
    let missing = |have: &HashSet<String>| -> Vec<&Entry> {
        queued
            .iter()
            .copied()
            .filter(|e| !have.contains(&e.id))
            .collect()
    };
    let result = inbound.and_then(|inbound| {
        if missing(&recorded(&inbound)?).is_empty() {
            return Ok(());
        }
        let _olock = outbox.lock()?;
        let ilock = inbound.lock()?;
        let lines: Vec<Record> = missing(&recorded(&inbound)?)
            .into_iter()
            .filter_map(|e| e.start.clone())
            .map(|mut start| {
                start.text = None;
                start
            })
            .collect();
        inbound.append_locked(&ilock, &lines)
    });
    if let Err(e) = result {
        // Said once per message, not at every look.
        for m in queued.iter().filter(|m| m.failure.is_none()) {
            let mut un = Record::new(Op::Unsent, &m.id, time::now_ms());
            un.reason = Some(format!(
                "the target's inbound ledger could not record it: {e}"
            ));
            let _ = outbox.append(&[un]);
        }
    }
}

/// The start lines (with their text) of the unfinished messages in senders' outboxes, each
/// outbox read once however many of its messages wait.
#[derive(Default)]
struct Starts(HashMap<String, HashMap<String, Record>>);

impl Starts {
    fn of(&mut self, ctx: &Ctx, sender: &str, id: &str) -> Option<Record> {
        let starts = self.0.entry(sender.to_string()).or_insert_with(|| {
            Ledger::outbox(&ctx.home, sender)
                .and_then(|l| l.entries_since(u64::MAX))
                .map(|es| {
                    es.into_iter()
                        .filter_map(|e| Some((e.id, e.start?)))
                        .collect()
                })
                .unwrap_or_default()
        });
        starts.get(id).cloned()
    }
}

/// Messages waiting for any session, whoever sent them: confirmed from its transcript, handed
/// to its socket when it runs (a target that came back without the suite's hook still gets
/// them), woken when it does not. Only targets with an inbound ledger are looked at.
pub fn waiting_anywhere(ctx: &Ctx, targets: &[Target], look: Look, looked: &HashSet<String>) {
    let mut starts = Starts::default();
    for t in targets {
        let Some(inbound) = Ledger::existing_inbound(&ctx.home, &t.id) else {
            continue;
        };
        let Ok(entries) = inbound.entries_since(u64::MAX) else {
            continue;
        };
        let open: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.state.is_open() && !looked.contains(&e.id))
            .take(MAX_OPEN)
            .collect();
        if open.is_empty() {
            continue;
        }
        let ids: Vec<String> = open.iter().map(|e| e.id.clone()).collect();
        let seen = seen_all(t.transcript.as_deref(), &ids);
        for (e, s) in open.iter().zip(seen) {
            let Some(sender) = e.sender_id() else {
                continue;
            };
            // The inbound start line has no text: the sender's outbox has it.
            if let Some(start) = starts.of(ctx, sender, &e.id) {
                advance(ctx, e, &start, t, s, look);
            }
        }
    }
}
