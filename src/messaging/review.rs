//! `review` (the caller's held inbound messages: list, accept, refuse) and `status` (where one
//! message stands now, from the ledgers).

use super::auth::{Verdict, authorize};
use super::delivery::content_of;
use super::directory::{self, Target, workspace_of};
use super::identity::Caller;
use super::ledger::{self, Entry, Ledger, Op, Record, State, Via};
use super::{Ctx, Error, TargetRef, hold, io};
use crate::filelock::FileLock;
use crate::time;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Accept(String),
    Refuse(String),
}

/// A held message as the target sees it before deciding: who, the summary, the size. The text
/// enters the target's context only once it is accepted.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HeldView {
    pub message_id: String,
    pub from: TargetRef,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub bytes: usize,
    pub received_at: String,
    pub expires_at: String,
}

/// What became of a reviewed message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Accepted: shown in the answer, so it is in the reviewer's context.
    Delivered,
    Refused,
    /// No such held message (unknown, or already decided).
    NotFound,
}

impl ActionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Delivered => "delivered",
            ActionStatus::Refused => "refused",
            ActionStatus::NotFound => "not_found",
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ActionResult {
    pub message_id: String,
    pub status: ActionStatus,
    pub detail: String,
    /// The accepted message, framed: it is delivered by being shown here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ReviewResult {
    pub held: Vec<HeldView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionResult>,
}

fn view(e: &Entry, expiry_ms: u64) -> Option<HeldView> {
    let s = e.start.as_ref()?;
    let expires = s
        .expires_at
        .clone()
        .unwrap_or_else(|| time::iso(e.first_ms + expiry_ms));
    Some(HeldView {
        message_id: e.id.clone(),
        from: TargetRef {
            name: s.sender_name.clone().unwrap_or_default(),
            id: s.sender_id.clone().unwrap_or_default(),
            cwd: None,
        },
        summary: s.summary.clone(),
        bytes: s.text.as_deref().map(str::len).unwrap_or(0),
        received_at: s.at.clone(),
        expires_at: expires,
    })
}

/// The sender as the matrix sees it, from what the ledger recorded.
fn sender_of(s: &Record) -> Caller {
    let cwd = s.sender_cwd.clone().unwrap_or_default();
    let id = s.sender_id.clone().unwrap_or_else(|| "terminal".into());
    Caller {
        terminal: id == "terminal",
        workspace: workspace_of(&cwd),
        cwd,
        id,
        ..Caller::default()
    }
}

/// Lists the caller's held messages; accepts or refuses one.
pub fn review(ctx: &Ctx, caller: &Caller, action: Option<Action>) -> Result<ReviewResult, Error> {
    if caller.terminal {
        return Err(Error::NeedsSession("review"));
    }
    let cfg = ctx.m().clone();
    let inbound = Ledger::inbound(&ctx.home, &caller.id).map_err(io("inbound"))?;
    let lock = inbound.lock().map_err(io("inbound lock"))?;
    let mut updates = hold::sweep_locked(&inbound, &lock, &cfg, 0).map_err(io("inbound"))?;
    let entries = inbound.entries_since(u64::MAX).map_err(io("inbound"))?;
    let mut result = None;
    if let Some(action) = action {
        let id = match &action {
            Action::Accept(id) | Action::Refuse(id) => id.clone(),
        };
        let found = entries
            .iter()
            .find(|e| e.id == id && e.state == State::Held);
        result = Some(match (found, &action) {
            (None, _) => ActionResult {
                message_id: id.clone(),
                status: ActionStatus::NotFound,
                detail: format!("no held message {id} (it may have expired or been decided)"),
                message: None,
            },
            (Some(e), Action::Accept(_)) => {
                let start = e.start.clone().unwrap_or_default();
                let me = Target {
                    id: caller.id.clone(),
                    cwd: caller.cwd.clone(),
                    workspace: caller.workspace.clone(),
                    ..Target::default()
                };
                // Re-authorize: the policy may have changed since the message was held.
                let ok = authorize(&sender_of(&start), &me, &ctx.policy()) == Verdict::Allowed;
                let now = time::now_ms();
                if ok {
                    let mut r = Record::new(Op::Delivered, &id, now);
                    r.via = Some(Via::Review);
                    inbound
                        .append_locked(&lock, &[r.clone()])
                        .map_err(io("inbound"))?;
                    if let Some(s) = start.sender_id.clone() {
                        r.op = Op::Delivered;
                        updates.push((s, r));
                    }
                    ActionResult {
                        message_id: id.clone(),
                        status: ActionStatus::Delivered,
                        detail: "accepted; the message follows".into(),
                        message: content_of(&start),
                    }
                } else {
                    let r =
                        refuse_locked(&inbound, &lock, &id, now, "sender no longer authorized")?;
                    if let Some(s) = start.sender_id.clone() {
                        updates.push((s, r));
                    }
                    ActionResult {
                        message_id: id.clone(),
                        status: ActionStatus::Refused,
                        detail: "the sender may no longer message this session; refused".into(),
                        message: None,
                    }
                }
            }
            (Some(e), Action::Refuse(_)) => {
                let now = time::now_ms();
                let r = refuse_locked(&inbound, &lock, &id, now, "refused at review")?;
                if let Some(s) = e.sender_id() {
                    updates.push((s.to_string(), r));
                }
                ActionResult {
                    message_id: id.clone(),
                    status: ActionStatus::Refused,
                    detail: "refused; its text is deleted".into(),
                    message: None,
                }
            }
        });
    }
    let held: Vec<HeldView> = inbound
        .entries_since(u64::MAX)
        .map_err(io("inbound"))?
        .iter()
        .filter(|e| e.state == State::Held)
        .filter_map(|e| view(e, cfg.hold_expiry_seconds * 1000))
        .collect();
    drop(lock);
    hold::mirror(&ctx.home, updates);
    Ok(ReviewResult {
        held,
        action: result,
    })
}

/// Appends the refusal of held message `id` to the inbound ledger and compacts it; returns the
/// record, to be mirrored to the sender's outbox.
fn refuse_locked(
    inbound: &Ledger,
    lock: &FileLock,
    id: &str,
    now: u64,
    reason: &str,
) -> Result<Record, Error> {
    let mut r = Record::new(Op::Refused, id, now);
    r.reason = Some(reason.into());
    inbound
        .append_locked(lock, &[r.clone()])
        .map_err(io("inbound"))?;
    inbound
        .compact_locked(lock, now, ledger::RETAIN_MS)
        .map_err(io("inbound"))?;
    Ok(r)
}

/// Where a message stands.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StatusView {
    pub message_id: String,
    /// queued | held | delivered | accepted | expired | refused | unknown
    pub state: String,
    /// sent (the caller's outbox) or received (the caller's inbound ledger)
    pub direction: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<TargetRef>,
    pub sent_at: String,
    /// When it came to its state (its latest line).
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    pub detail: String,
}

fn describe(e: &Entry) -> (String, String) {
    let why = |r: &Option<String>| {
        r.clone()
            .map(|w| format!("; last try: {w}"))
            .unwrap_or_default()
    };
    match e.state {
        State::Queued if e.client_hold() => (
            "held".into(),
            "written to the target, whose client holds it: it runs in bypassPermissions mode and this sender does not".into(),
        ),
        State::Queued if !e.attempts.is_empty() => (
            "queued".into(),
            format!("handed to the target, not yet taken by its client{}", why(&e.failure)),
        ),
        State::Queued => (
            "queued".into(),
            format!("waiting to be delivered{}", why(&e.failure)),
        ),
        State::Accepted => (
            "accepted".into(),
            "the target's client took it; its model sees it at its next request".into(),
        ),
        State::Held => ("held".into(), "waiting for the target's review".into()),
        s => (
            s.as_str().into(),
            e.end
                .as_ref()
                .and_then(|r| r.reason.clone())
                .unwrap_or_default(),
        ),
    }
}

fn to_view(e: &Entry, direction: &str) -> StatusView {
    let (state, detail) = describe(e);
    let s = e.start.clone().unwrap_or_default();
    StatusView {
        message_id: e.id.clone(),
        state,
        direction: direction.into(),
        target: s.target_id.clone().map(|id| TargetRef {
            name: s.target_name.clone().unwrap_or_default(),
            id,
            cwd: None,
        }),
        from: (direction == "received").then(|| TargetRef {
            name: s.sender_name.clone().unwrap_or_default(),
            id: s.sender_id.clone().unwrap_or_default(),
            cwd: None,
        }),
        sent_at: time::iso(e.first_ms),
        updated_at: time::iso(e.last_ms),
        via: e.end.as_ref().and_then(|r| r.via.clone()),
        detail,
    }
}

/// Where the message `id` stands, as sender or as target. Confirms a queued message from the
/// target's transcript and applies hold expiry first.
pub fn status(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Option<StatusView>, Error> {
    let outbox = Ledger::outbox(&ctx.home, &caller.id).map_err(io("outbox"))?;
    let find = |l: &Ledger| -> Result<Option<Entry>, Error> {
        Ok(l.entries()
            .map_err(io("ledger"))?
            .into_iter()
            .find(|e| e.id == id))
    };
    if let Some(e) = find(&outbox)? {
        if let Some(tid) = e.target_id() {
            let targets = directory::snapshot(&directory::Options {
                cold: true,
                repo_root: ctx.repo_root.clone(),
                ..Default::default()
            });
            match e.state {
                State::Queued | State::Accepted => {
                    let look = super::recover::Look { no_wake_for: None };
                    let looked = super::recover::outbox(ctx, caller, &targets, look);
                    super::recover::waiting_anywhere(ctx, &targets, look, &looked);
                }
                State::Held => {
                    let cfg = match targets.iter().find(|t| t.id == tid) {
                        Some(t) => hold::target_config(ctx, t),
                        None => ctx.m().clone(),
                    };
                    hold::sweep_target(&ctx.home, tid, &cfg);
                    hold::mirror_final(&ctx.home, &caller.id, tid, id);
                }
                _ => {}
            }
        }
        return Ok(find(&outbox)?.map(|e| to_view(&e, "sent")));
    }
    if caller.terminal {
        return Ok(None);
    }
    let inbound = Ledger::inbound(&ctx.home, &caller.id).map_err(io("inbound"))?;
    Ok(find(&inbound)?.map(|e| to_view(&e, "received")))
}

/// Waits until the sender's message `id` is delivered (or final otherwise), up to `limit`,
/// moving it on as it goes; `progress` hears each change of state. Returns where it stands.
pub fn wait_delivered(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    limit: std::time::Duration,
    mut progress: impl FnMut(&StatusView),
) -> Result<StatusView, Error> {
    let until = std::time::Instant::now() + limit;
    let mut last = String::new();
    loop {
        let v = status(ctx, caller, id)?
            .ok_or_else(|| Error::Usage(format!("no message {id} in your ledgers")))?;
        // A held message can still move on (a review, a client taking it late).
        let done = matches!(v.state.as_str(), "delivered" | "expired" | "refused");
        if v.state != last {
            last = v.state.clone();
            if !done {
                progress(&v);
            }
        }
        if done || std::time::Instant::now() >= until {
            return Ok(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}
