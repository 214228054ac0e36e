//! `send`: resolve → authorize → limits → ledger → deliver.
//!
//! The message is on disk (the sender's outbox, fsynced, and the target's inbound ledger)
//! before any delivery is tried, and it is `delivered` only once its id shows in the target's
//! transcript. Delivery routes, one per target:
//!
//! - live, with a messaging socket: the framed line on the socket; watch the transcript;
//! - live, without one: the suite's hook hands it over at the target's next tool call;
//! - not running: a headless resume with the message as its prompt (one wake per target).
//!
//! Every `send` first retries the sender's own queued messages (confirm from the transcript,
//! write again where the last write never arrived), so a crash neither loses nor duplicates.

use super::address::{self, Resolved};
use super::directory::{self, Live, Target};
use super::frame::{self, Mode};
use super::identity::Caller;
use super::ledger::{self, Entry, Ledger, Record, State};
use super::wake::{self, WakeRequest};
use super::{Ctx, Error, SendResult, SendStatus, TargetRef, hold, io, limits};
use crate::config::InboundPolicy;
use crate::filelock::FileLock;
use crate::time;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Set to a step name to make `send` abort there (tests of crash recovery use it).
pub const CRASH_SWITCH: &str = "SESSION_LOCK_MESSAGING_CRASH_AT";

fn crash_point(step: &str) {
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

/// The framed content of a message from its start line.
pub fn content_of(start: &Record) -> Option<String> {
    let text = start.text.as_deref()?;
    let sender_id = start.sender_id.as_deref().unwrap_or("terminal");
    let name = start.sender_name.as_deref().unwrap_or(sender_id);
    let mode = Mode::parse(start.sender_mode.as_deref().unwrap_or("prompting"));
    let from = start.sender_address.as_deref().unwrap_or("terminal");
    Some(frame::wrap(
        from,
        name,
        mode,
        &frame::body(&start.message_id, name, sender_id, text),
    ))
}

/// Appends to a ledger, taking its lock.
fn append(ledger: std::io::Result<Ledger>, recs: &[Record]) -> Result<(), Error> {
    let l = ledger.map_err(io("ledger"))?;
    l.append(recs)
        .map_err(io(format!("cannot append to {}", l.path.display())))
}

/// Records a final op in both ledgers.
pub fn mark(home: &Path, start: &Record, op: &str, via: &str) -> Result<(), Error> {
    let mut r = Record::new(op, &start.message_id, time::now_ms());
    r.via = Some(via.into());
    if let Some(s) = start.sender_id.as_deref() {
        append(Ledger::outbox(home, s), std::slice::from_ref(&r))?;
    }
    if let Some(t) = start.target_id.as_deref() {
        append(Ledger::inbound(home, t), &[r])?;
    }
    Ok(())
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
/// or written long ago without ever showing in its transcript (and not held by its client).
pub fn needs_write(e: &Entry, live: &Live, now_ms: u64, resend_after_ms: u64) -> bool {
    let to_this = e.attempts.iter().rev().find(|a| {
        a.pid == Some(live.pid)
            && a.proc_start == live.proc_start
            && a.via.as_deref() != Some("wake")
    });
    match to_this {
        None => true,
        Some(a) => !a.client_hold && now_ms.saturating_sub(a.at_ms()) > resend_after_ms,
    }
}

/// What one write to a client's socket came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    Delivered,
    /// Written; not (yet) in the transcript. `client_hold`: the client holds it for the
    /// sender's permission mode.
    Waiting {
        client_hold: bool,
    },
    Failed(String),
}

#[cfg(not(unix))]
fn write_line(sock: &Path, _line: &str) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "{}: the client's messaging socket is a Unix domain socket",
            sock.display()
        ),
    ))
}

#[cfg(unix)]
fn write_line(sock: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut s = std::os::unix::net::UnixStream::connect(sock)?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(line.as_bytes())?;
    s.write_all(b"\n")?;
    s.flush()?;
    let _ = s.shutdown(std::net::Shutdown::Both);
    Ok(())
}

/// Waits up to `wait_ms` for `id` to show in the transcript after `offset`.
pub fn confirm(transcript: Option<&Path>, id: &str, offset: u64, wait_ms: u64) -> bool {
    let Some(path) = transcript else {
        return false;
    };
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if directory::transcript_mentions(path, id, offset) {
            return true;
        }
        if start.elapsed() >= Duration::from_millis(wait_ms) {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(40));
    }
}

/// Writes the message on the target's socket, records the attempt, watches the transcript.
pub fn socket_attempt(
    home: &Path,
    target: &Target,
    live: &Live,
    sock: &Path,
    start: &Record,
    wait_ms: u64,
) -> Result<Attempt, Error> {
    let Some(content) = content_of(start) else {
        return Ok(Attempt::Failed(
            "the message text is gone from the ledger".into(),
        ));
    };
    let transcript = target
        .transcript
        .clone()
        .or_else(|| directory::find_transcript(&target.id, &target.cwd));
    let offset = transcript.as_deref().map(directory::file_len).unwrap_or(0);
    let sender_mode = Mode::parse(start.sender_mode.as_deref().unwrap_or("prompting"));
    let client_hold = frame::receiver_holds(sender_mode, target.permission_mode.as_deref());
    let mut sent = Record::new(ledger::SENT, &start.message_id, time::now_ms());
    sent.via = Some("socket".into());
    sent.pid = Some(live.pid);
    sent.proc_start = live.proc_start.clone();
    sent.client_hold = client_hold;
    let sender = start.sender_id.as_deref().unwrap_or("terminal");
    append(Ledger::outbox(home, sender), std::slice::from_ref(&sent))?;
    append(
        Ledger::inbound(home, &target.id),
        std::slice::from_ref(&sent),
    )?;
    crash_point("before-write");
    let line = frame::socket_line(
        &start.message_id,
        &content,
        start.sender_address.as_deref().unwrap_or("terminal"),
    );
    if let Err(e) = write_line(sock, &line) {
        let mut un = Record::new(ledger::UNSENT, &start.message_id, time::now_ms());
        un.via = sent.via.clone();
        un.pid = sent.pid;
        un.reason = Some(e.to_string());
        append(Ledger::outbox(home, sender), std::slice::from_ref(&un))?;
        append(Ledger::inbound(home, &target.id), &[un])?;
        return Ok(Attempt::Failed(e.to_string()));
    }
    crash_point("after-write");
    if confirm(transcript.as_deref(), &start.message_id, offset, wait_ms) {
        mark(home, start, ledger::DELIVERED, "socket")?;
        return Ok(Attempt::Delivered);
    }
    Ok(Attempt::Waiting { client_hold })
}

fn hold_detail(t: &Target) -> String {
    format!(
        "held by {}'s client: it runs in bypassPermissions mode and holds messages from sessions in a prompting mode (this sender); it is delivered only if accepted there, and never reported delivered before it shows in {}'s transcript",
        t.name, t.name
    )
}

/// Delivers a recorded message along the target's one route.
fn route(ctx: &Ctx, target: &Target, start: &Record) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    if let Some(live) = &target.live {
        return live_route(ctx, target, live, start);
    }
    if !ctx.m().allow_cold_wake {
        return Ok((
            SendStatus::Queued,
            format!(
                "{name} is not running and messaging.allowColdWake is off; it is handed over when {name} next runs"
            ),
        ));
    }
    deliver_cold(ctx, target, start)
}

fn live_route(
    ctx: &Ctx,
    target: &Target,
    live: &Live,
    start: &Record,
) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    let Some(sock) = &live.socket else {
        return Ok((
            SendStatus::Accepted,
            format!(
                "{name}'s client has no messaging socket; the suite's hook hands the message over at {name}'s next tool call"
            ),
        ));
    };
    Ok(
        match socket_attempt(
            &ctx.home,
            target,
            live,
            sock,
            start,
            ctx.m().confirm_milliseconds,
        )? {
            Attempt::Delivered => (
                SendStatus::Delivered,
                format!("delivered: the message is in {name}'s transcript"),
            ),
            Attempt::Waiting { client_hold: true } => (SendStatus::Held, hold_detail(target)),
            Attempt::Waiting { .. } => (
                SendStatus::Queued,
                format!(
                    "written to {name}'s messaging socket but not yet in its transcript; it is confirmed (or written again) later: send-message status <message_id>"
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

/// The start line of a message from its sender's outbox.
pub fn start_of(home: &Path, sender: &str, id: &str) -> Option<Record> {
    let l = Ledger::outbox(home, sender).ok()?;
    l.entries_since(u64::MAX)
        .ok()?
        .into_iter()
        .find(|e| e.id == id)
        .and_then(|e| e.start)
}

/// Wakes a target that is not running, once, with every message waiting for it.
fn deliver_cold(ctx: &Ctx, target: &Target, start: &Record) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    let dir = ledger::root(&ctx.home).join("wake");
    std::fs::create_dir_all(&dir).map_err(io("wake folder"))?;
    let lock_path = dir.join(format!("{}.lock", target.id));
    let limit = Duration::from_secs(ctx.m().wake_timeout_seconds + 30);
    let began = std::time::Instant::now();
    let transcript = target.transcript.clone();
    // The message is new: only what the transcript gains from now on can hold it.
    let offset = transcript.as_deref().map(directory::file_len).unwrap_or(0);
    let _lock: FileLock = loop {
        if confirm(transcript.as_deref(), &start.message_id, offset, 0) {
            mark(&ctx.home, start, ledger::DELIVERED, "wake")?;
            return Ok((
                SendStatus::Delivered,
                format!("delivered: {name} was woken and the message is in its transcript"),
            ));
        }
        if let Some(live) = live_now(&target.id) {
            return live_route(ctx, target, &live, start);
        }
        if let Some(l) = FileLock::try_exclusive(&lock_path).map_err(io("wake lock"))? {
            break l;
        }
        if began.elapsed() > limit {
            return Ok((
                SendStatus::Queued,
                format!("a wake of {name} is under way; the message is kept for it"),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Under the lock: look again; a running session is never resumed.
    if confirm(transcript.as_deref(), &start.message_id, offset, 0) {
        mark(&ctx.home, start, ledger::DELIVERED, "wake")?;
        return Ok((SendStatus::Delivered, format!("delivered to {name}")));
    }
    if let Some(live) = live_now(&target.id) {
        return live_route(ctx, target, &live, start);
    }
    let readable = transcript
        .as_deref()
        .is_some_and(|p| std::fs::File::open(p).is_ok());
    if !readable {
        return Ok((
            SendStatus::Queued,
            format!("{name}'s transcript cannot be read, so it is not woken; the message is kept"),
        ));
    }
    if !Path::new(&target.cwd).is_dir() {
        return Ok((
            SendStatus::Queued,
            format!(
                "{name}'s folder {} is gone, so it is not woken; the message is kept",
                target.cwd
            ),
        ));
    }
    // Every message waiting for the target rides this one wake.
    let inbound = Ledger::inbound(&ctx.home, &target.id).map_err(io("inbound ledger"))?;
    let mut starts: Vec<Record> = Vec::new();
    for e in inbound
        .entries_since(u64::MAX)
        .map_err(io("inbound ledger"))?
    {
        if e.state != State::Queued {
            continue;
        }
        let full = if e.id == start.message_id {
            Some(start.clone())
        } else {
            e.sender_id().and_then(|s| start_of(&ctx.home, s, &e.id))
        };
        if let Some(s) = full.filter(|s| s.text.is_some()) {
            starts.push(s);
        }
    }
    if !starts.iter().any(|s| s.message_id == start.message_id) {
        starts.push(start.clone());
    }
    let prompting = starts
        .iter()
        .any(|s| s.sender_mode.as_deref() != Some("bypass"));
    let prompt = starts
        .iter()
        .filter_map(content_of)
        .collect::<Vec<_>>()
        .join("\n\n");
    let now = time::now_ms();
    for s in &starts {
        let mut sent = Record::new(ledger::SENT, &s.message_id, now);
        sent.via = Some("wake".into());
        append(
            Ledger::outbox(&ctx.home, s.sender_id.as_deref().unwrap_or("terminal")),
            std::slice::from_ref(&sent),
        )?;
        append(Ledger::inbound(&ctx.home, &target.id), &[sent])?;
    }
    let req = WakeRequest {
        session_id: Some(target.id.clone()),
        cwd: PathBuf::from(&target.cwd),
        prompt,
        mode: wake::wake_mode(target.permission_mode.as_deref(), prompting),
        model: transcript
            .as_deref()
            .and_then(directory::transcript_info)
            .and_then(|i| i.model),
        timeout_ms: ctx.m().wake_timeout_seconds * 1000,
    };
    let result = ctx.waker.wake(&req);
    let mut mine = false;
    for s in &starts {
        if confirm(transcript.as_deref(), &s.message_id, 0, 0) {
            mark(&ctx.home, s, ledger::DELIVERED, "wake")?;
            mine |= s.message_id == start.message_id;
        } else {
            let mut un = Record::new(ledger::UNSENT, &s.message_id, time::now_ms());
            un.via = Some("wake".into());
            un.reason = result.error.clone();
            append(
                Ledger::outbox(&ctx.home, s.sender_id.as_deref().unwrap_or("terminal")),
                std::slice::from_ref(&un),
            )?;
            append(Ledger::inbound(&ctx.home, &target.id), &[un])?;
        }
    }
    if mine {
        Ok((
            SendStatus::Delivered,
            format!("delivered: {name} was not running, so it was resumed with the message"),
        ))
    } else {
        Ok((
            SendStatus::Queued,
            format!(
                "{name} was not running; resuming it did not take the message ({}); it is kept and retried",
                result
                    .error
                    .unwrap_or_else(|| "no sign of it in the transcript".into())
            ),
        ))
    }
}

/// Retries the sender's unfinished messages: confirm from transcripts, write again where the
/// last write never arrived, mirror what target-side review decided. Best effort, bounded.
pub fn recover_outbox(ctx: &Ctx, caller: &Caller, targets: &[Target]) {
    let Ok(outbox) = Ledger::outbox(&ctx.home, &caller.id) else {
        return;
    };
    let Ok(entries) = outbox.entries_since(u64::MAX) else {
        return;
    };
    let now = time::now_ms();
    let resend = ctx.m().resend_after_seconds * 1000;
    let open: Vec<&Entry> = entries
        .iter()
        .filter(|e| matches!(e.state, State::Queued | State::Held))
        .collect();
    let mut texts: std::collections::HashMap<String, String> = Default::default();
    for e in open.into_iter().rev().take(20) {
        let Some(start) = &e.start else { continue };
        let Some(tid) = e.target_id() else { continue };
        let Some(t) = targets.iter().find(|t| t.id == tid) else {
            continue;
        };
        if e.state == State::Held {
            hold::sweep_target(&ctx.home, tid, &target_config(ctx, t));
            hold::mirror_final(&ctx.home, &caller.id, tid, &e.id);
            continue;
        }
        // One read of each target's transcript, however many messages wait for it.
        let text = texts.entry(tid.to_string()).or_insert_with(|| {
            t.transcript
                .as_deref()
                .and_then(|p| std::fs::read(p).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        });
        if text.contains(&e.id) {
            let _ = mark(&ctx.home, start, ledger::DELIVERED, "confirmed");
            continue;
        }
        if let Some(live) = &t.live
            && let Some(sock) = &live.socket
            && needs_write(e, live, now, resend)
        {
            let _ = socket_attempt(&ctx.home, t, live, sock, start, 0);
        }
    }
}

/// Loads the config of the target's repo (its inbound policy); the caller's on any trouble.
pub fn target_config(ctx: &Ctx, t: &Target) -> crate::config::MessagingConfig {
    let root = crate::state::git_top(Path::new(&t.cwd));
    match root.map(|r| crate::config::Config::load(&r)) {
        Some(Ok(c)) => c.messaging,
        _ => ctx.m().clone(),
    }
}

/// Sends one message. Identity is `caller`, already verified.
pub fn send(ctx: &Ctx, caller: &Caller, req: &SendRequest) -> Result<SendResult, Error> {
    if address::normalize(&req.to).trim().is_empty() {
        return Err(Error::Usage(
            "--to is empty: give a session's name or id (see send-message list)".into(),
        ));
    }
    let id = frame::new_id();
    let m = ctx.m().clone();
    let summary = limits::summary_of(req.summary.as_deref());
    if let Err(why) = limits::check_args(&req.text, summary, &m) {
        return Ok(SendResult::new(SendStatus::Refused, &id, why));
    }
    let targets = directory::snapshot(&directory::Options {
        cold: true,
        subagents: true,
        repo_root: ctx.repo_root.clone(),
    });
    let target = match address::resolve(&req.to, &targets, caller, &ctx.policy()) {
        Resolved::One(t) => t.clone(),
        Resolved::NotFound => {
            return Ok(SendResult::new(
                SendStatus::NotFound,
                &id,
                super::not_found_detail(&req.to),
            ));
        }
        Resolved::Ambiguous(c) => {
            let mut r = SendResult::new(
                SendStatus::Ambiguous,
                &id,
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
            return Ok(r);
        }
        Resolved::SelfTarget(t) => {
            return Ok(SendResult::new(
                SendStatus::SelfTarget,
                &id,
                "that is this session; a message to it would be a message to yourself",
            )
            .to(t));
        }
        Resolved::OwnSubagent(t) => {
            return Ok(SendResult::new(
                SendStatus::Refused,
                &id,
                "that is a subagent of this session; reach it with the client's own SendMessage tool",
            )
            .to(t));
        }
    };
    recover_outbox(ctx, caller, &targets);
    let outbox = Ledger::outbox(&ctx.home, &caller.id).map_err(io("outbox"))?;
    let olock = outbox.lock().map_err(io("outbox lock"))?;
    let now = time::now_ms();
    let window = (m.dedupe_window_seconds * 1000).max(60_000);
    let (entries, osize) = outbox
        .scan(now.saturating_sub(window))
        .map_err(io("outbox"))?;
    if req.dedupe
        && let Some(orig) = limits::duplicate_of(
            &entries,
            &target.id,
            &req.text,
            summary,
            now,
            m.dedupe_window_seconds * 1000,
        )
    {
        return Ok(SendResult::new(
            SendStatus::Duplicate,
            orig,
            format!(
                "the same message went to {} {}s ago or less; this is its id (--no-dedupe sends it again)",
                target.name, m.dedupe_window_seconds
            ),
        )
        .to(&target));
    }
    if limits::sent_last_minute(&entries, &target.id, now) >= m.rate_per_minute {
        return Ok(SendResult::new(
            SendStatus::Refused,
            &id,
            format!(
                "{} messages to {} in the last minute is the limit (messaging.ratePerMinute); combine them into one",
                m.rate_per_minute, target.name
            ),
        )
        .to(&target));
    }
    let mut start = Record::new(ledger::QUEUED, &id, now);
    start.sender_id = Some(caller.id.clone());
    start.sender_name = Some(caller.name.clone());
    start.sender_cwd = Some(caller.cwd.clone());
    start.sender_mode = Some(caller.mode().as_str().into());
    start.sender_address = Some(caller.address.clone());
    start.target_id = Some(target.id.clone());
    start.target_name = Some(target.name.clone());
    start.summary = summary.map(str::to_string);
    let tcfg = target_config(ctx, &target);
    match hold::policy_for(&tcfg, &target) {
        InboundPolicy::Refuse => {
            let mut r = start.clone();
            r.op = ledger::REFUSED.into();
            r.reason = Some("inbound policy".into());
            outbox.append_locked(&olock, &[r]).map_err(io("outbox"))?;
            return Ok(SendResult::new(
                SendStatus::Refused,
                &id,
                format!(
                    "{} does not accept messages (its inbound policy is refuse)",
                    target.name
                ),
            )
            .to(&target));
        }
        InboundPolicy::Hold => {
            start.text = Some(req.text.clone());
            let r = hold::hold(ctx, &tcfg, &outbox, &olock, &target, start)?;
            drop(olock);
            return Ok(r);
        }
        InboundPolicy::Accept => {}
    }
    let inbound = Ledger::inbound(&ctx.home, &target.id).map_err(io("inbound"))?;
    let ilock = inbound.lock().map_err(io("inbound lock"))?;
    let (waiting, isize) = inbound.scan(u64::MAX).map_err(io("inbound"))?;
    if limits::pending(&waiting) >= m.max_pending_per_target {
        return Ok(SendResult::new(
            SendStatus::Refused,
            &id,
            format!(
                "{} has {} undelivered messages waiting (messaging.maxPendingPerTarget); it is busy, try later",
                target.name,
                limits::pending(&waiting)
            ),
        )
        .to(&target));
    }
    let mut with_text = start.clone();
    with_text.text = Some(req.text.clone());
    outbox
        .append_locked(&olock, std::slice::from_ref(&with_text))
        .map_err(io("outbox"))?;
    crash_point("after-queued");
    inbound
        .append_locked(&ilock, &[start])
        .map_err(io("inbound"))?;
    let _ = inbound.maybe_compact_locked(&ilock, &isize, now);
    let _ = outbox.maybe_compact_locked(&olock, &osize, now);
    drop(ilock);
    drop(olock);
    let (status, detail) = route(ctx, &target, &with_text)?;
    Ok(SendResult::new(status, &id, detail).to(&target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_with(attempts: Vec<Record>) -> Entry {
        let mut lines = vec![Record::new(ledger::QUEUED, "m", 0)];
        lines.extend(attempts);
        ledger::fold(lines).remove(0)
    }

    fn sent(pid: u32, start: &str, at: u64, hold: bool) -> Record {
        let mut r = Record::new(ledger::SENT, "m", at);
        r.via = Some("socket".into());
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
        let mut s = Record::new(ledger::QUEUED, "m-1", 0);
        s.sender_id = Some("s-1".into());
        s.sender_name = Some("alpha".into());
        s.sender_mode = Some("bypass".into());
        s.sender_address = Some("uds:/tmp/a.sock".into());
        s.text = Some("do it".into());
        let c = content_of(&s).unwrap();
        assert!(c.starts_with("<cross-session-message from=\"uds:/tmp/a.sock\" from-name=\"alpha\" from-mode=\"bypass\">\nSession message m-1 from alpha (s-1):\ndo it"));
        s.text = None;
        assert!(content_of(&s).is_none());
    }
}
