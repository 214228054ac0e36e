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
use super::delivery::crash_point;
use super::directory::{self, Target};
use super::identity::Caller;
use super::ledger::{Entry, Ledger, Op, Record, Size};
use super::{Ctx, Error, SendResult, SendStatus, TargetRef, hold, io, limits};
use crate::config::InboundPolicy;
use crate::filelock::FileLock;
use crate::time;

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

/// Delivers a recorded message along the target's one route.
pub fn route(ctx: &Ctx, target: &Target, start: &Record) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    if let Some(live) = &target.live {
        return super::socket::live_route(ctx, target, live, start);
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

/// Sends one message. Identity is `caller`, already verified.
pub fn send(ctx: &Ctx, caller: &Caller, req: &SendRequest) -> Result<SendResult, Error> {
    if address::normalize(&req.to).trim().is_empty() {
        return Err(Error::Usage(
            "--to is empty: give a session's name or id (see send-message list)".into(),
        ));
    }
    let id = crate::ids::new_uuid();
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
    let tcfg = hold::target_config(ctx, target);
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
