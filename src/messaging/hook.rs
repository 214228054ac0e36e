//! The hook route: at a session's tool calls (PostToolUse), prompts (UserPromptSubmit) and
//! starts (SessionStart), the suite's hook hands over the messages queued for it that its client
//! did not take — the client has no messaging socket, or the message was written to an earlier
//! process of the session — as additional context, and tells it how many held messages wait for
//! its review. Messages its client would hold (a prompting sender, this session in bypass mode)
//! are not handed over this way: the hook does not talk past the client.
//!
//! A handed-over message is `accepted` (the context goes into the client's next request) and
//! becomes `delivered` once the transcript shows the model answered that request (checked at the
//! next call, or by any later command), like every other route. One accepted by a process of
//! the session that stopped before that is handed over again by the next process.

use super::delivery::{content_of, needs_write, start_of};
use super::directory;
use super::frame::{self, Mode};
use super::ledger::{self, Entry, Ledger, Op, Record, State, Via};
use super::progress::{Seen, seen_all};
use crate::config::Config;
use crate::time;
use crate::words::{HookEvent, PermissionMode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The events whose additional context reaches the model.
const EVENTS: [HookEvent; 3] = [
    HookEvent::PostToolUse,
    HookEvent::UserPromptSubmit,
    HookEvent::SessionStart,
];

fn notice_path(home: &Path, session: &str) -> Option<PathBuf> {
    Some(
        ledger::root(home)
            .join("notice")
            .join(format!("{}.json", ledger::safe_name(session)?)),
    )
}

/// True when the set of held ids differs from what this session was last told.
fn notice_due(home: &Path, session: &str, held: &[String]) -> bool {
    let Some(path) = notice_path(home, session) else {
        return false;
    };
    let before: Vec<String> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if before == held {
        return false;
    }
    if let Some(dir) = path.parent() {
        let _ = crate::private::create_dirs(dir);
    }
    let text = serde_json::to_string(held).unwrap_or_default();
    let _ = crate::atomic::write_atomic(&path, text.as_bytes());
    !held.is_empty()
}

/// What the hook route needs to know of one hook call; the guard fills it in from its payload
/// and environment (messaging never reads the hook's own types).
#[derive(Clone, Copy, Debug)]
pub struct HookInput<'a> {
    /// `hook_event_name`.
    pub event: &'a HookEvent,
    pub session_id: &'a str,
    /// Set for a subagent's call: messages are for the session, not its subagents.
    pub agent_id: Option<&'a str>,
    pub transcript: Option<&'a Path>,
    /// The payload's `permission_mode` (SessionStart payloads carry none).
    pub mode: Option<&'a PermissionMode>,
    /// The suite's state folder.
    pub home: Option<&'a Path>,
    /// The client process (`CLAUDE_PID`), when the hook's environment names it.
    pub client_pid: Option<u32>,
}

/// The context to add for this hook call, if any. Called by the guard on every event but
/// PreToolUse; cheap when the session has no inbound ledger.
pub fn hook_context(p: &HookInput, config: &Config) -> Option<String> {
    if !EVENTS.contains(p.event) || p.agent_id.is_some() || p.session_id.is_empty() {
        return None;
    }
    let home = p.home?;
    let inbound = Ledger::existing_inbound(home, p.session_id)?;
    let cfg = &config.messaging;
    // The write lock first (the socket route decides and records under it too), then the
    // ledger's: a message is handed over here or written to the socket, never both.
    let _writing = inbound.write_lock_within(Duration::from_secs(2)).ok()??;
    let lock = inbound.lock_within(Duration::from_secs(2)).ok()??;
    let mut updates = super::hold::sweep_locked(&inbound, &lock, cfg, 0).unwrap_or_default();
    let entries = inbound.entries_since(u64::MAX).ok()?;
    let transcript = p.transcript.map(Path::to_path_buf);
    let now = time::now_ms();
    let live = p.client_pid.map(|pid| directory::Live {
        pid,
        proc_start: crate::liveness::start_time(pid),
        socket: None,
    });
    // This session's mode: the payload's, else the last one recorded (SessionStart payloads
    // carry none). Unknown, a prompting sender's message is not handed over here.
    let recorded = p
        .mode
        .is_none()
        .then(|| {
            crate::sessions::registry::read(home, p.session_id)
                .and_then(|e| e.permission_mode)
                .or_else(|| {
                    transcript
                        .as_deref()
                        .and_then(directory::transcript_info)
                        .and_then(|i| i.permission_mode)
                })
        })
        .flatten();
    let my_mode = p.mode.map(PermissionMode::as_str).or(recorded.as_deref());
    let mut parts = Vec::new();
    let mut lines: Vec<Record> = Vec::new();
    let mut by_sender: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    let open: Vec<&Entry> = entries.iter().filter(|e| e.state.is_open()).collect();
    // One read of the transcript, and only when something waits.
    let ids: Vec<String> = open.iter().map(|e| e.id.clone()).collect();
    let seen = if ids.is_empty() {
        Vec::new()
    } else {
        seen_all(transcript.as_deref(), &ids)
    };
    for (e, seen) in open.into_iter().zip(seen) {
        let Some(sender) = e.sender_id().map(str::to_string) else {
            continue;
        };
        let mut note = |r: Record, lines: &mut Vec<Record>| {
            lines.push(r.clone());
            by_sender.entry(sender.clone()).or_default().push(r);
        };
        if seen == Seen::Consumed {
            let mut r = Record::new(Op::Delivered, &e.id, now);
            r.via = Some(Via::Confirmed);
            note(r, &mut lines);
            continue;
        }
        if e.state == State::Accepted {
            let alive = e.taken.as_ref().is_some_and(|t| {
                t.pid == live.as_ref().map(|l| l.pid)
                    && t.proc_start == live.as_ref().and_then(|l| l.proc_start.clone())
            });
            if alive {
                continue;
            }
            let mut r = Record::new(Op::Returned, &e.id, now);
            r.reason = Some("the process that took it stopped before its model saw it".into());
            note(r, &mut lines);
        }
        let due = match &live {
            Some(l) => {
                e.state == State::Accepted
                    || needs_write(e, l, now, cfg.resend_after_seconds * 1000)
            }
            None => e.attempts.is_empty(),
        };
        if !due {
            continue;
        }
        let Some(start) = start_of(home, &sender, &e.id) else {
            continue;
        };
        let sender_mode = start.sender_mode.unwrap_or(Mode::Prompting);
        if frame::receiver_holds(sender_mode, my_mode)
            || (my_mode.is_none() && sender_mode == Mode::Prompting)
        {
            continue;
        }
        let Some(content) = content_of(&start) else {
            continue;
        };
        parts.push(content);
        let mut r = Record::new(Op::Sent, &e.id, now);
        r.via = Some(Via::Hook);
        r.pid = live.as_ref().map(|l| l.pid);
        r.proc_start = live.as_ref().and_then(|l| l.proc_start.clone());
        note(r.clone(), &mut lines);
        // The hook's context goes into the client's next request: taken.
        r.op = Op::Taken;
        note(r, &mut lines);
    }
    if !lines.is_empty() {
        let _ = inbound.append_locked(&lock, &lines);
    }
    let held: Vec<String> = inbound
        .entries_since(u64::MAX)
        .unwrap_or_default()
        .iter()
        .filter(|e| e.state == State::Held)
        .map(|e| e.id.clone())
        .collect();
    drop(lock);
    for (sender, recs) in by_sender {
        updates.extend(recs.into_iter().map(|r| (sender.clone(), r)));
    }
    super::hold::mirror(home, updates);
    let mut text = String::new();
    if !parts.is_empty() {
        text.push_str(
            "Messages from other sessions (delivered by session-lock's send-message):\n\n",
        );
        text.push_str(&parts.join("\n\n"));
    }
    if notice_due(home, p.session_id, &held) {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "{} message{} from other sessions wait{} for your review: run `send-message review` to see who sent them, then `send-message review --accept <id>` or `--refuse <id>`.",
            held.len(),
            if held.len() == 1 { "" } else { "s" },
            if held.len() == 1 { "s" } else { "" },
        ));
    }
    (!text.is_empty()).then_some(text)
}
