//! The socket route: a target that runs with a messaging socket gets the framed line there
//! (the client answers nothing), and the sender watches the target's transcript for the client
//! taking it. Watching is a tight bounded poll that reads only what the transcript gained, and
//! the `taken` lines it then writes are not synced ([`record_taken`]), so `send` returns within
//! about a millisecond of the client's own write.

use super::delivery::{append, content_of, crash_point, mark, mark_line_as, needs_write};
use super::directory::{Live, Target};
use super::frame;
use super::ledger::{Durability, Ledger, Op, Record, State, Via};
use super::progress::{Seen, Tracker};
use super::{Ctx, Error, SendStatus, directory, io};
use crate::time;
use std::path::Path;
use std::time::{Duration, Instant};

/// What one write to a client's socket came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    /// In a model request's input already (an idle client answers at once).
    Delivered,
    /// The client took it into its queue.
    Accepted,
    /// Written; not (yet) taken. `client_hold`: the client holds it for the sender's mode.
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

/// Watches `tracker` for its first id for up to `wait_ms`: one look per 200 µs, each a `stat`
/// and a read of what was appended. Not an inotify watch: measured on Linux 6.18, closing an
/// inotify instance that held a watch costs about 8 ms (the kernel waits out a grace period),
/// and a `send` pays it at exit; the poll finds the client's line within 0.2 ms for about
/// 200 `stat`s over the client's 40 ms.
pub fn watch(tracker: &mut Tracker, wait_ms: u64, want: Seen) -> Seen {
    let until = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        tracker.poll();
        let seen = tracker.seen(0);
        if seen >= want || Instant::now() >= until {
            return seen;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Records in both ledgers that the process `live` took the message (its client's queue line
/// is in its transcript).
///
/// Written, not synced ([`Durability::Restated`]): the line restates two facts already on disk,
/// the synced `sent` line (which process, from which transcript offset) and the client's own
/// line in its transcript, and every later look reads them again when no `taken` is there
/// ([`super::recover::advance`]). A killed sender loses nothing (the kernel has the line); only
/// a machine crash can, and after one the taker no longer runs, so the message would be
/// `queued` again either way (`returned` otherwise). Syncing it cost `send` two `fdatasync`s
/// after the client's write: 3 ms each at the median on a busy disk.
pub fn record_taken(home: &Path, start: &Record, live: &Live, via: Via) -> Result<(), Error> {
    let mut r = Record::new(Op::Taken, &start.message_id, time::now_ms());
    r.via = Some(via);
    r.pid = Some(live.pid);
    r.proc_start = live.proc_start.clone();
    mark_line_as(home, start, r, Durability::Restated)
}

fn hold_detail(t: &Target) -> String {
    format!(
        "held by {}'s client: it runs in bypassPermissions mode and holds messages from sessions in a prompting mode (this sender); it is delivered only if accepted there, and never reported delivered before its model sees it",
        t.name
    )
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
    Ok(match attempt(ctx, target, live, sock, start, wait)? {
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
    })
}

/// Writes the message on the target's socket, records the attempt, watches the transcript for
/// the client taking it (up to `wait_ms`).
///
/// Whether this process needs the message is decided again under the target's write lock, from
/// its inbound ledger, and the `sent` lines are recorded under it: commands that look at once
/// (ten senders, each moving the others' messages on) write a message to a process once. One
/// that finds it written there already only watches for it.
pub fn attempt(
    ctx: &Ctx,
    target: &Target,
    live: &Live,
    sock: &Path,
    start: &Record,
    wait_ms: u64,
) -> Result<Attempt, Error> {
    let home = &ctx.home;
    let Some(content) = content_of(start) else {
        return Ok(Attempt::Failed(
            "the message text is gone from the ledger".into(),
        ));
    };
    let transcript = target
        .transcript
        .clone()
        .or_else(|| directory::find_transcript(&target.id, &target.cwd));
    let inbound = Ledger::inbound(home, &target.id).map_err(io("inbound ledger"))?;
    let lock = inbound
        .write_lock()
        .map_err(io(format!("cannot lock {}", inbound.path.display())))?;
    let resend = ctx.m().resend_after_seconds * 1000;
    let now_entry = inbound
        .entries_since(u64::MAX)
        .map_err(io(format!("cannot read {}", inbound.path.display())))?
        .into_iter()
        .find(|e| e.id == start.message_id);
    if let Some(e) = &now_entry {
        if e.client_hold() {
            return Ok(Attempt::Waiting { client_hold: true });
        }
        match e.state {
            State::Queued | State::Unknown => {}
            State::Delivered => return Ok(Attempt::Delivered),
            State::Accepted => return Ok(Attempt::Accepted),
            s => return Ok(Attempt::Failed(format!("the message is {}", s.as_str()))),
        }
        if !needs_write(e, live, time::now_ms(), resend) {
            let earlier = e.attempts.iter().rev().find(|a| {
                a.pid == Some(live.pid)
                    && a.proc_start == live.proc_start
                    && a.via != Some(Via::Wake)
            });
            let (offset, client_hold) =
                earlier.map_or((0, false), |a| (a.offset.unwrap_or(0), a.client_hold));
            drop(lock);
            return Ok(watch_only(
                transcript.as_deref(),
                start,
                offset,
                client_hold,
                wait_ms,
            ));
        }
    }
    let offset = transcript.as_deref().map(directory::file_len).unwrap_or(0);
    let sender_mode = start.sender_mode.unwrap_or(frame::Mode::Prompting);
    let client_hold = frame::receiver_holds(sender_mode, target.permission_mode.as_deref());
    let mut sent = Record::new(Op::Sent, &start.message_id, time::now_ms());
    sent.via = Some(Via::Socket);
    sent.pid = Some(live.pid);
    sent.proc_start = live.proc_start.clone();
    sent.client_hold = client_hold;
    sent.offset = transcript.is_some().then_some(offset);
    let sender = start.sender_id.as_deref().unwrap_or("terminal");
    append(Ledger::outbox(home, sender), std::slice::from_ref(&sent))?;
    append(Ok(inbound.clone()), std::slice::from_ref(&sent))?;
    drop(lock);
    crash_point("before-write");
    let line = frame::socket_line(
        &start.message_id,
        &content,
        start.sender_address.as_deref().unwrap_or("terminal"),
    );
    if let Err(e) = write_line(sock, &line) {
        let mut un = Record::new(Op::Unsent, &start.message_id, time::now_ms());
        un.via = sent.via.clone();
        un.pid = sent.pid;
        un.reason = Some(e.to_string());
        append(Ledger::outbox(home, sender), std::slice::from_ref(&un))?;
        append(Ok(inbound), &[un])?;
        return Ok(Attempt::Failed(e.to_string()));
    }
    crash_point("after-write");
    let Some(path) = transcript else {
        return Ok(Attempt::Waiting { client_hold });
    };
    let mut tracker = Tracker::new(&path, vec![start.message_id.clone()], offset);
    match watch(&mut tracker, wait_ms, Seen::Taken) {
        Seen::Nothing => Ok(Attempt::Waiting { client_hold }),
        Seen::Taken => {
            record_taken(home, start, live, Via::Socket)?;
            crash_point("after-taken");
            Ok(Attempt::Accepted)
        }
        Seen::Consumed => {
            mark(home, start, Op::Delivered, Via::Socket)?;
            Ok(Attempt::Delivered)
        }
    }
}

/// Another command wrote the message to this process: what the transcript shows of it within
/// `wait_ms`. That command (or the next look) records it; this one records nothing.
fn watch_only(
    transcript: Option<&Path>,
    start: &Record,
    offset: u64,
    client_hold: bool,
    wait_ms: u64,
) -> Attempt {
    let Some(path) = transcript else {
        return Attempt::Waiting { client_hold };
    };
    let mut tracker = Tracker::new(path, vec![start.message_id.clone()], offset);
    match watch(&mut tracker, wait_ms, Seen::Taken) {
        Seen::Nothing => Attempt::Waiting { client_hold },
        Seen::Taken => Attempt::Accepted,
        Seen::Consumed => Attempt::Delivered,
    }
}
