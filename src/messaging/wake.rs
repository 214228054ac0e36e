//! Cold wake: a session that is not running is resumed headless with its waiting messages as
//! the prompt. `send` does not wait for it: it records the message, starts a detached
//! `send-message wake --target <id>` and answers `waking`. That process takes the target's
//! wake lock (one wake per target at a time; a second one waits, and hands its messages to the
//! woken process's socket if it comes up, or wakes next), runs the turn through run-agent's
//! library (the prompt goes on the client's stdin, never in its arguments), and then marks each
//! message `delivered` only if the woken turn reached the model and it answered; otherwise the
//! message stays `queued` with the failure recorded. A session that runs (per either registry)
//! is never resumed: the client does not stop two processes from writing one transcript.

use super::delivery::{append, content_of, crash_point, mark, needs_write, start_of};
use super::directory::{self, Target};
use super::ledger::{self, Ledger, Op, Record, State, Via};
use super::progress::{Seen, seen_all};
use super::socket::live_route;
use super::{Ctx, Error, SendStatus, io};
use crate::filelock::FileLock;
use crate::time;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One headless run: resume `session_id` (or start a new session when `None`) in `cwd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeRequest {
    pub session_id: Option<String>,
    pub cwd: PathBuf,
    pub prompt: String,
    /// The client's permission mode for the run (never above what the sender holds).
    pub mode: String,
    /// The model the session last used (`None`: run-agent's default).
    pub model: Option<String>,
    pub timeout_ms: u64,
    /// The prompt is other sessions' messages: who sent them and the class the run declares
    /// (`None`: no sender has an address the client takes; the prompt goes as plain text).
    pub origin: Option<crate::agent::PromptOrigin>,
}

/// What the run said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeResult {
    pub ok: bool,
    pub session_id: Option<String>,
    pub error: Option<String>,
}

/// Starts headless runs. [`AgentWaker`] (run-agent) is the real one; unit tests plug in fakes.
pub trait Waker: Send + Sync {
    fn wake(&self, req: &WakeRequest) -> WakeResult;
}

/// The suite's run-agent library: one headless turn (`--resume <id>` when waking), stopped at
/// the timeout, its process group cleaned up.
#[derive(Clone, Debug, Default)]
pub struct AgentWaker;

impl Waker for AgentWaker {
    fn wake(&self, req: &WakeRequest) -> WakeResult {
        let opts = crate::agent::RunAgentOptions {
            cwd: Some(req.cwd.to_string_lossy().to_string()),
            prompt: Some(req.prompt.clone()),
            plugin_id: Some("send-message".into()),
            session_id: req.session_id.clone(),
            model: req.model.clone(),
            mode: Some(req.mode.clone()),
            timeout_ms: Some(req.timeout_ms),
            prompt_origin: req.origin.clone(),
            ..Default::default()
        };
        let r = crate::agent::run_agent(&opts);
        let error = match (&r.error_detail, r.is_error) {
            (Some(e), _) => Some(e.clone()),
            (None, true) => Some(if r.text.is_empty() {
                "the run ended in an error".into()
            } else {
                r.text.clone()
            }),
            (None, false) => None,
        };
        WakeResult {
            ok: r.ok && !r.is_error,
            session_id: r.session_id.clone(),
            error,
        }
    }
}

/// The mode a wake runs in: the target's own, but never bypass for a message from a prompting
/// sender (the run would obey what the client itself would have held).
pub fn wake_mode(target_mode: Option<&str>, any_prompting_sender: bool) -> String {
    match target_mode {
        Some("bypassPermissions") if any_prompting_sender => "default".into(),
        Some(m) if !m.is_empty() && m != "auto" => m.into(),
        _ => "default".into(),
    }
}

/// The origin a woken run's prompt declares: the first sender with a socket address, and the
/// run's own permission class. The client honours a declared class only from its host on stdin
/// (the `from-mode` inside the text is a label there), and a bypass-mode client holds a peer
/// prompt that declares none: without it a bypass target woken for a bypass sender never saw
/// the message. The class is the run's, never more: [`wake_mode`] runs bypass only when every
/// sender is bypass, and a prompting run declares prompting.
pub fn origin<'a>(
    mut addresses: impl Iterator<Item = &'a str>,
    run_mode: &str,
) -> Option<crate::agent::PromptOrigin> {
    let class = super::frame::Mode::from_client(Some(run_mode));
    addresses.find_map(|a| crate::agent::PromptOrigin::new(a, class.as_str()))
}

fn lock_path(ctx: &Ctx, target: &str) -> Result<PathBuf, Error> {
    let dir = ledger::root(&ctx.home).join("wake");
    crate::private::create_dirs(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let name = ledger::safe_name(target)
        .ok_or_else(|| Error::Usage(format!("bad session id '{target}'")))?;
    Ok(dir.join(format!("{name}.lock")))
}

/// Starts a detached `send-message wake --target <id>` (it outlives this process).
fn spawn(ctx: &Ctx, target: &str) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut c = std::process::Command::new(exe);
    if let Some(root) = &ctx.repo_root {
        c.arg("--repo").arg(root);
    }
    c.args(["wake", "--target", target])
        .env("SESSION_LOCK_HOME", &ctx.home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    let mut child = c.spawn()?;
    // A long-running caller (the bus) reaps it; a short one exits first and leaves it be.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// True when a wake of `target` is under way (its lock is held).
fn under_way(ctx: &Ctx, target: &str) -> bool {
    lock_path(ctx, target).is_ok_and(|p| matches!(FileLock::try_exclusive(&p), Ok(None)))
}

/// True when the message's last attempt is a wake that is still under way: it is in that woken
/// run's prompt, and the wake settles it when the run ends. Writing it to the woken process's
/// socket as well would give its model the message twice.
pub fn riding_a_wake(ctx: &Ctx, e: &ledger::Entry, target: &str) -> bool {
    e.attempts.last().is_some_and(|a| a.via == Some(Via::Wake)) && under_way(ctx, target)
}

/// Starts a wake of `target` unless one holds its lock now (recovery's path).
pub fn spawn_if_idle(ctx: &Ctx, target: &str) {
    let Ok(path) = lock_path(ctx, target) else {
        return;
    };
    if let Ok(Some(l)) = FileLock::try_exclusive(&path) {
        drop(l);
        let _ = spawn(ctx, target);
    }
}

/// The cold route of `send`: a detached wake; the answer is `waking`.
pub fn begin(ctx: &Ctx, target: &Target, start: &Record) -> Result<(SendStatus, String), Error> {
    let name = &target.name;
    if let Some(live) = directory::live_now(&target.id) {
        return live_route(ctx, target, &live, start);
    }
    crash_point("before-wake");
    match spawn(ctx, &target.id) {
        Ok(()) => Ok((
            SendStatus::Waking,
            format!(
                "{name} is not running; it is being resumed with the message (send-message status <message_id>, or send --wait)"
            ),
        )),
        Err(e) => Ok((
            SendStatus::Queued,
            format!("{name} is not running and no wake could start ({e}); the message is kept"),
        )),
    }
}

/// Every queued message for `target`, with its text (from its sender's outbox).
fn waiting(ctx: &Ctx, target: &str) -> Result<Vec<Record>, Error> {
    let inbound = Ledger::inbound(&ctx.home, target).map_err(io("inbound ledger"))?;
    let mut starts = Vec::new();
    for e in inbound
        .entries_since(u64::MAX)
        .map_err(io("inbound ledger"))?
    {
        // A message a client held stays held: a wake would hand it over in another mode.
        if e.state != State::Queued || e.client_hold() {
            continue;
        }
        let full = e.sender_id().and_then(|s| start_of(&ctx.home, s, &e.id));
        if let Some(s) = full.filter(|s| s.text.is_some()) {
            starts.push(s);
        }
    }
    Ok(starts)
}

/// `send-message wake --target <id>`: waits for the target's wake lock (handing the messages to
/// the target's socket if it comes up meanwhile), then resumes it once with every queued
/// message and records what became of each.
pub fn run(ctx: &Ctx, target_id: &str) -> Result<(), Error> {
    let lock_path = lock_path(ctx, target_id)?;
    let limit = Duration::from_secs(ctx.m().wake_timeout_seconds + 30);
    let began = std::time::Instant::now();
    let target = || {
        directory::snapshot(&directory::Options {
            cold: true,
            subagents: false,
            repo_root: ctx.repo_root.clone(),
        })
        .into_iter()
        .find(|t| t.id == target_id)
    };
    let _lock: FileLock = loop {
        if let Some(live) = directory::live_now(target_id) {
            return hand_to_live(ctx, target(), &live);
        }
        if let Some(l) = FileLock::try_exclusive(&lock_path).map_err(io("wake lock"))? {
            break l;
        }
        if began.elapsed() > limit {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Under the lock: look again; a running session is never resumed.
    if let Some(live) = directory::live_now(target_id) {
        return hand_to_live(ctx, target(), &live);
    }
    let Some(target) = target() else {
        return Ok(());
    };
    let mut starts = waiting(ctx, target_id)?;
    let ids: Vec<String> = starts.iter().map(|s| s.message_id.clone()).collect();
    let seen = seen_all(target.transcript.as_deref(), &ids);
    for (s, seen) in starts.iter().zip(&seen) {
        if *seen == Seen::Consumed {
            mark(&ctx.home, s, Op::Delivered, Via::Confirmed)?;
        }
    }
    starts = starts
        .into_iter()
        .zip(seen)
        .filter(|(_, seen)| *seen != Seen::Consumed)
        .map(|(s, _)| s)
        .collect();
    if starts.is_empty() {
        return Ok(());
    }
    if let Some(why) = cannot_wake(&target) {
        return record_failure(ctx, &starts, &why);
    }
    resume(ctx, &target, &starts)
}

/// Why a target must not be woken (it fails closed: the messages stay queued).
fn cannot_wake(target: &Target) -> Option<String> {
    let readable = target
        .transcript
        .as_deref()
        .is_some_and(|p| std::fs::File::open(p).is_ok());
    if !readable {
        return Some(format!(
            "{}'s transcript cannot be read, so it is not woken",
            target.name
        ));
    }
    if !Path::new(&target.cwd).is_dir() {
        return Some(format!(
            "{}'s folder {} is gone, so it is not woken",
            target.name, target.cwd
        ));
    }
    None
}

/// An `unsent` line per message (the failure recorded; each stays queued).
fn record_failure(ctx: &Ctx, starts: &[Record], why: &str) -> Result<(), Error> {
    for s in starts {
        let mut un = Record::new(Op::Unsent, &s.message_id, time::now_ms());
        un.via = Some(Via::Wake);
        un.reason = Some(why.to_string());
        super::delivery::mark_line(&ctx.home, s, un)?;
    }
    Ok(())
}

/// One headless resume with every message as the prompt.
fn resume(ctx: &Ctx, target: &Target, starts: &[Record]) -> Result<(), Error> {
    let transcript = target.transcript.clone();
    let prompting = starts
        .iter()
        .any(|s| s.sender_mode != Some(super::frame::Mode::Bypass));
    let prompt = starts
        .iter()
        .filter_map(content_of)
        .collect::<Vec<_>>()
        .join("\n\n");
    let now = time::now_ms();
    for s in starts {
        let mut sent = Record::new(Op::Sent, &s.message_id, now);
        sent.via = Some(Via::Wake);
        append(
            Ledger::outbox(&ctx.home, s.sender_id.as_deref().unwrap_or("terminal")),
            std::slice::from_ref(&sent),
        )?;
        append(Ledger::inbound(&ctx.home, &target.id), &[sent])?;
    }
    crash_point("wake-before-run");
    let mode = wake_mode(target.permission_mode.as_deref(), prompting);
    let req = WakeRequest {
        session_id: Some(target.id.clone()),
        cwd: PathBuf::from(&target.cwd),
        prompt,
        origin: origin(
            starts.iter().filter_map(|s| s.sender_address.as_deref()),
            &mode,
        ),
        mode,
        model: transcript
            .as_deref()
            .and_then(directory::transcript_info)
            .and_then(|i| i.model),
        timeout_ms: ctx.m().wake_timeout_seconds * 1000,
    };
    let result = ctx.waker.wake(&req);
    crash_point("wake-after-run");
    let ids: Vec<String> = starts.iter().map(|s| s.message_id.clone()).collect();
    let seen = seen_all(transcript.as_deref(), &ids);
    let mut failed = Vec::new();
    for (s, seen) in starts.iter().zip(seen) {
        if seen == Seen::Consumed {
            mark(&ctx.home, s, Op::Delivered, Via::Wake)?;
        } else {
            failed.push(s.clone());
        }
    }
    let why = format!(
        "resuming {} did not bring the message to its model: {}",
        target.name,
        result
            .error
            .unwrap_or_else(|| "the turn never answered it".into())
    );
    record_failure(ctx, &failed, &why)
}

/// The target came up while this wake waited: its messages go to its socket, each unless it
/// rides the wake that runs it, or was already written to this process.
fn hand_to_live(
    ctx: &Ctx,
    target: Option<Target>,
    live: &super::directory::Live,
) -> Result<(), Error> {
    let Some(mut target) = target else {
        return Ok(());
    };
    target.live = Some(live.clone());
    let inbound = Ledger::inbound(&ctx.home, &target.id).map_err(io("inbound ledger"))?;
    let entries = inbound
        .entries_since(u64::MAX)
        .map_err(io("inbound ledger"))?;
    let resend = ctx.m().resend_after_seconds * 1000;
    for s in waiting(ctx, &target.id)? {
        let Some(e) = entries.iter().find(|e| e.id == s.message_id) else {
            continue;
        };
        if riding_a_wake(ctx, e, &target.id) || !needs_write(e, live, time::now_ms(), resend) {
            continue;
        }
        live_route(ctx, &target, live, &s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_never_runs_above_the_sender() {
        assert_eq!(wake_mode(Some("bypassPermissions"), true), "default");
        assert_eq!(
            wake_mode(Some("bypassPermissions"), false),
            "bypassPermissions"
        );
        assert_eq!(wake_mode(Some("acceptEdits"), true), "acceptEdits");
        assert_eq!(wake_mode(None, false), "default");
    }

    #[test]
    fn the_origin_declares_the_runs_class_from_the_first_takeable_address() {
        let o = origin(
            ["terminal", "uds:/tmp/cc-socks/1.sock", "uds:/tmp/2.sock"].into_iter(),
            "bypassPermissions",
        )
        .unwrap();
        assert_eq!(
            (o.from.as_str(), o.from_mode.as_str()),
            ("uds:/tmp/cc-socks/1.sock", "bypass")
        );
        let o = origin(["uds:/a.sock"].into_iter(), "acceptEdits").unwrap();
        assert_eq!(o.from_mode, "prompting");
        assert_eq!(origin(["terminal"].into_iter(), "default"), None);
        assert_eq!(origin(["uds:/a b.sock"].into_iter(), "default"), None);
    }
}
