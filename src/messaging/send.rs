//! `send`: resolve → authorize → limits → ledger → route, one function per stage, each
//! returning `Result<_, Refusal>` (a refusal is the answer, not an error).
//!
//! The message is on disk (the sender's outbox, fsynced, and the target's inbound ledger)
//! before any delivery is tried. Then it moves `queued` → `accepted` (the target's client took
//! it) → `delivered` (it is in a model request's input), by the target's one route:
//!
//! - live, with a messaging socket: the framed line on the socket ([`super::socket`]);
//! - live, without one: the suite's hook hands it over at the target's next tool call
//!   ([`super::hook`]);
//! - not running: a detached wake resumes it with the message ([`super::wake`]).
//!
//! Every command first moves the messages it can see on ([`super::recover`]), so a crash
//! neither loses nor duplicates one.

use super::address::{self, Resolved};
use super::directory::{self, Live, Target};
use super::frame;
use super::identity::Caller;
use super::ledger::{Durability, Entry, Ledger, Op, Record, Size, Via};
use super::socket::Attempt;
use super::{Ctx, Error, SendResult, SendStatus, TargetRef, hold, io, limits};
use crate::config::{InboundPolicy, MessagingConfig};
use crate::filelock::FileLock;
use crate::time;
use std::path::{Path, PathBuf};

/// Set to a step name to make `send` (or a wake) abort there (tests of crash recovery use it).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_MESSAGING_CRASH_AT";

pub(crate) fn crash_point(step: &str) {
    if std::env::var(CRASH_SWITCH).is_ok_and(|v| v == step) {
        std::process::abort();
    }
}

/// What to send.
#[derive(Clone, Debug, Default)]
pub struct SendRequest {
    pub to: String,
    pub text: String,
    pub summary: Option<String>,
    /// False with `--no-dedupe`.
    pub dedupe: bool,
}

/// Why `send` stopped before delivery: the answer to give, or an error.
pub enum Refusal {
    Answer(Box<SendResult>),
    Failed(Error),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::Failed(e)
    }
}

impl From<SendResult> for Refusal {
    fn from(r: SendResult) -> Refusal {
        Refusal::Answer(Box::new(r))
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

/// A live target right now, per either registry (a wake checks again before resuming).
pub fn live_now(session_id: &str) -> Option<Live> {
    let mut best: Option<(u64, Live)> = None;
    for e in crate::sessions::claude::entries() {
        if e.session_id == session_id && e.alive() {
            let at = e.started_at.unwrap_or(0);
            if best.as_ref().is_none_or(|(b, _)| at >= *b) {
                best = Some((
                    at,
                    Live {
                        pid: e.pid,
                        proc_start: e.proc_start.clone(),
                        socket: e.messaging_socket_path.as_ref().map(PathBuf::from),
                    },
                ));
            }
        }
    }
    if let Some((_, l)) = best {
        return Some(l);
    }
    let home = crate::sessions::state_home()?;
    let e = crate::sessions::registry::read(&home, session_id)?;
    let pid = e.pid?;
    crate::liveness::is_alive(pid, e.proc_start.as_deref()).then_some(Live {
        pid,
        proc_start: e.proc_start,
        socket: None,
    })
}

/// True when the message must be written (again) to this live process: never written to it,
/// or written long ago without the client ever taking it (and not held by its client).
pub fn needs_write(e: &Entry, live: &Live, now_ms: u64, resend_after_ms: u64) -> bool {
    let to_this = e.attempts.iter().rev().find(|a| {
        a.pid == Some(live.pid) && a.proc_start == live.proc_start && a.via != Some(Via::Wake)
    });
    match to_this {
        None => true,
        Some(a) => !a.client_hold && now_ms.saturating_sub(a.at_ms()) > resend_after_ms,
    }
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

/// Loads the config of the target's repo (its inbound policy); the caller's on any trouble.
pub fn target_config(ctx: &Ctx, t: &Target) -> MessagingConfig {
    let root = crate::state::git_top(Path::new(&t.cwd));
    match root.map(|r| crate::config::Config::load(&r)) {
        Some(Ok(c)) => c.messaging,
        _ => ctx.m().clone(),
    }
}

fn hold_detail(t: &Target) -> String {
    format!(
        "held by {}'s client: it runs in bypassPermissions mode and holds messages from sessions in a prompting mode (this sender); it is delivered only if accepted there, and never reported delivered before its model sees it",
        t.name
    )
}

/// Delivers a recorded message along the target's one route.
pub fn route(ctx: &Ctx, target: &Target, start: &Record) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    if let Some(live) = &target.live {
        return live_route(ctx, target, live, start);
    }
    if !ctx.m().allow_cold_wake {
        return Ok((
            SendStatus::Queued,
            format!(
                "{name} is not running and messaging.allowColdWake is off; it is handed over when {name} next runs (the next send-message command of anyone, or its hook)"
            ),
        ));
    }
    super::wake::begin(ctx, target, start)
}

/// The route of a target that runs: its socket, or its hook.
pub fn live_route(
    ctx: &Ctx,
    target: &Target,
    live: &Live,
    start: &Record,
) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    let Some(sock) = &live.socket else {
        return Ok((
            SendStatus::Queued,
            format!(
                "{name}'s client has no messaging socket; the suite's hook hands the message over at {name}'s next tool call"
            ),
        ));
    };
    let wait = ctx.m().confirm_milliseconds;
    Ok(
        match super::socket::attempt(&ctx.home, target, live, sock, start, wait)? {
            Attempt::Delivered => (
                SendStatus::Delivered,
                format!("delivered: {name}'s model has it in its input"),
            ),
            Attempt::Accepted => (
                SendStatus::Accepted,
                format!(
                    "accepted: {name}'s client took it; its model sees it at its next request (send-message status <message_id>)"
                ),
            ),
            Attempt::Waiting { client_hold: true } => (SendStatus::Held, hold_detail(target)),
            Attempt::Waiting { .. } => (
                SendStatus::Queued,
                format!(
                    "written to {name}'s messaging socket but its client has not taken it yet; it is confirmed (or written again) later"
                ),
            ),
            Attempt::Failed(e) => (
                SendStatus::Queued,
                format!(
                    "{name}'s messaging socket could not be written ({e}); the message is kept and retried"
                ),
            ),
        },
    )
}

/// Sends one message. Identity is `caller`, already verified.
pub fn send(ctx: &Ctx, caller: &Caller, req: &SendRequest) -> Result<SendResult, Error> {
    if address::normalize(&req.to).trim().is_empty() {
        return Err(Error::Usage(
            "--to is empty: give a session's name or id (see send-message list)".into(),
        ));
    }
    let id = frame::new_id();
    match stages(ctx, caller, req, &id) {
        Ok(r) => Ok(r),
        Err(Refusal::Answer(r)) => Ok(*r),
        Err(Refusal::Failed(e)) => Err(e),
    }
}

fn stages(ctx: &Ctx, caller: &Caller, req: &SendRequest, id: &str) -> Result<SendResult, Refusal> {
    let summary = check_args(ctx, req, id)?;
    let (target, targets) = resolve(ctx, caller, req, id)?;
    let look = super::recover::Look {
        no_wake_for: Some(&target.id),
    };
    let looked = super::recover::outbox(ctx, caller, &targets, look);
    super::recover::waiting_anywhere(ctx, &targets, look, &looked);
    let book = Book::open(ctx, caller)?;
    within_limits(ctx, req, summary, &target, &book, id)?;
    let start = record(ctx, caller, req, summary, &target, book, id)?;
    let (status, detail) = route(ctx, &target, &start)?;
    Ok(SendResult::new(status, id, detail).to(&target))
}

/// The message and summary themselves.
fn check_args<'a>(ctx: &Ctx, req: &'a SendRequest, id: &str) -> Result<Option<&'a str>, Refusal> {
    let summary = limits::summary_of(req.summary.as_deref());
    limits::check_args(&req.text, summary, ctx.m())
        .map_err(|why| SendResult::new(SendStatus::Refused, id, why))?;
    Ok(summary)
}

/// The address → one authorized target (and the snapshot it came from).
fn resolve(
    ctx: &Ctx,
    caller: &Caller,
    req: &SendRequest,
    id: &str,
) -> Result<(Target, Vec<Target>), Refusal> {
    let targets = directory::snapshot(&directory::Options {
        cold: true,
        subagents: true,
        repo_root: ctx.repo_root.clone(),
    });
    let answer = match address::resolve(&req.to, &targets, caller, &ctx.policy()) {
        Resolved::One(t) => {
            let t = t.clone();
            return Ok((t, targets));
        }
        Resolved::NotFound => {
            SendResult::new(SendStatus::NotFound, id, super::not_found_detail(&req.to))
        }
        Resolved::Ambiguous(c) => {
            let mut r = SendResult::new(
                SendStatus::Ambiguous,
                id,
                format!(
                    "{} sessions answer to '{}'; send again with one of their ids",
                    c.len(),
                    address::normalize(&req.to)
                ),
            );
            r.candidates = Some(
                c.iter()
                    .map(|t| TargetRef {
                        name: t.name.clone(),
                        id: t.id.clone(),
                        cwd: Some(t.cwd.clone()),
                    })
                    .collect(),
            );
            r
        }
        Resolved::SelfTarget(t) => SendResult::new(
            SendStatus::SelfTarget,
            id,
            "that is this session; a message to it would be a message to yourself",
        )
        .to(t),
        Resolved::OwnSubagent(t) => SendResult::new(
            SendStatus::Refused,
            id,
            "that is a subagent of this session; reach it with the client's own SendMessage tool",
        )
        .to(t),
    };
    Err(answer.into())
}

/// The sender's outbox, locked from the limit checks until the message is recorded.
struct Book {
    outbox: Ledger,
    lock: FileLock,
    entries: Vec<Entry>,
    size: Size,
}

impl Book {
    fn open(ctx: &Ctx, caller: &Caller) -> Result<Book, Error> {
        let outbox = Ledger::outbox(&ctx.home, &caller.id).map_err(io("outbox"))?;
        let lock = outbox.lock().map_err(io("outbox lock"))?;
        let window = (ctx.m().dedupe_window_seconds * 1000).max(60_000);
        let (entries, size) = outbox
            .scan(time::now_ms().saturating_sub(window))
            .map_err(io("outbox"))?;
        Ok(Book {
            outbox,
            lock,
            entries,
            size,
        })
    }
}

/// Duplicates and the rate per sender → target.
fn within_limits(
    ctx: &Ctx,
    req: &SendRequest,
    summary: Option<&str>,
    target: &Target,
    book: &Book,
    id: &str,
) -> Result<(), Refusal> {
    let m = ctx.m();
    let now = time::now_ms();
    let window = m.dedupe_window_seconds * 1000;
    if req.dedupe
        && let Some(orig) =
            limits::duplicate_of(&book.entries, &target.id, &req.text, summary, now, window)
    {
        return Err(SendResult::new(
            SendStatus::Duplicate,
            orig,
            format!(
                "the same message went to {} {}s ago or less; this is its id (--no-dedupe sends it again)",
                target.name, m.dedupe_window_seconds
            ),
        )
        .to(target)
        .into());
    }
    if limits::sent_last_minute(&book.entries, &target.id, now) >= m.rate_per_minute {
        return Err(SendResult::new(
            SendStatus::Refused,
            id,
            format!(
                "{} messages to {} in the last minute is the limit (messaging.ratePerMinute); combine them into one",
                m.rate_per_minute, target.name
            ),
        )
        .to(target)
        .into());
    }
    Ok(())
}

/// The start line of a new message.
fn start_line(
    caller: &Caller,
    target: &Target,
    summary: Option<&str>,
    id: &str,
    now: u64,
) -> Record {
    let mut start = Record::new(Op::Queued, id, now);
    start.sender_id = Some(caller.id.clone());
    start.sender_name = Some(caller.name.clone());
    start.sender_cwd = Some(caller.cwd.clone());
    start.sender_mode = Some(caller.mode());
    start.sender_address = Some(caller.address.clone());
    start.target_id = Some(target.id.clone());
    start.target_name = Some(target.name.clone());
    start.summary = summary.map(str::to_string);
    start
}

/// The target's inbound policy, its pending cap, then both ledgers. Returns the start line with
/// the text, as the outbox has it.
fn record(
    ctx: &Ctx,
    caller: &Caller,
    req: &SendRequest,
    summary: Option<&str>,
    target: &Target,
    book: Book,
    id: &str,
) -> Result<Record, Refusal> {
    let now = time::now_ms();
    let mut start = start_line(caller, target, summary, id, now);
    let tcfg = target_config(ctx, target);
    match hold::policy_for(&tcfg, target) {
        InboundPolicy::Refuse => {
            let mut r = start.clone();
            r.op = Op::Refused;
            r.reason = Some("inbound policy".into());
            book.outbox
                .append_locked(&book.lock, &[r])
                .map_err(io("outbox"))?;
            return Err(SendResult::new(
                SendStatus::Refused,
                id,
                format!(
                    "{} does not accept messages (its inbound policy is refuse)",
                    target.name
                ),
            )
            .to(target)
            .into());
        }
        InboundPolicy::Hold => {
            start.text = Some(req.text.clone());
            let r = hold::hold(ctx, &tcfg, &book.outbox, &book.lock, target, start)?;
            return Err(r.into());
        }
        InboundPolicy::Accept => {}
    }
    let inbound = Ledger::inbound(&ctx.home, &target.id).map_err(io("inbound"))?;
    let ilock = inbound.lock().map_err(io("inbound lock"))?;
    let (waiting, isize) = inbound.scan(u64::MAX).map_err(io("inbound"))?;
    let pending = limits::pending(&waiting);
    if pending >= ctx.m().max_pending_per_target {
        return Err(SendResult::new(
            SendStatus::Refused,
            id,
            format!(
                "{} has {pending} undelivered messages waiting (messaging.maxPendingPerTarget); it is busy, try later",
                target.name
            ),
        )
        .to(target)
        .into());
    }
    let mut with_text = start.clone();
    with_text.text = Some(req.text.clone());
    book.outbox
        .append_locked(&book.lock, std::slice::from_ref(&with_text))
        .map_err(io("outbox"))?;
    crash_point("after-queued");
    inbound
        .append_locked(&ilock, &[start])
        .map_err(io("inbound"))?;
    let _ = inbound.maybe_compact_locked(&ilock, &isize, now);
    let _ = book
        .outbox
        .maybe_compact_locked(&book.lock, &book.size, now);
    Ok(with_text)
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
        // Held by the client for its mode: never again.
        let h = entry_with(vec![sent(7, "100", base, true)]);
        assert!(!needs_write(&h, &live, base + 3_600_000, 30_000));
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
