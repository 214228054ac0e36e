//! `create` (§16): start a new root session in an authorized folder with the message as its
//! first prompt, through a headless run. The folder follows the same rule as messages (the
//! caller's workspace, or one `allowCrossWorkspace` / `allowlist` opens). Arguments are checked
//! before the rate limit, so a refused request spends no quota. The first message is not subject
//! to inbound review (it is like a person's first prompt). The new session's id is reported even
//! when its first turn fails; the session exists and can be messaged.

use super::auth;
use super::directory::{self, workspace_of};
use super::frame;
use super::identity::Caller;
use super::ledger::{Ledger, Op, Record, Via};
use super::wake::WakeRequest;
use super::{Ctx, Error, io, limits};
use crate::time;
use std::path::{Path, PathBuf};

/// The outbox's name for "a session this sender started".
pub const NEW_SESSION: &str = "new-session";

#[derive(Clone, Debug)]
pub struct CreateRequest {
    pub cwd: PathBuf,
    pub text: String,
    pub summary: Option<String>,
}

/// Where a `create` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CreateStatus {
    /// The first turn reached the model and it answered.
    Delivered,
    /// No session, or its first turn did not reach the model.
    Failed,
    Refused,
}

impl CreateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CreateStatus::Delivered => "delivered",
            CreateStatus::Failed => "failed",
            CreateStatus::Refused => "refused",
        }
    }

    /// The exit code of `send-message create`.
    pub fn code(self) -> crate::exit::Code {
        match self {
            CreateStatus::Delivered => crate::exit::Code::Success,
            CreateStatus::Failed => crate::exit::Code::Failure,
            CreateStatus::Refused => crate::exit::Code::Refused,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CreateResult {
    pub status: CreateStatus,
    pub message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub detail: String,
}

impl CreateResult {
    fn refused(id: &str, detail: impl Into<String>) -> CreateResult {
        CreateResult {
            status: CreateStatus::Refused,
            message_id: id.into(),
            session_id: None,
            detail: detail.into(),
        }
    }
}

pub fn create(ctx: &Ctx, caller: &Caller, req: &CreateRequest) -> Result<CreateResult, Error> {
    let id = crate::ids::new_uuid();
    let m = ctx.m().clone();
    let summary = limits::summary_of(req.summary.as_deref());
    if let Err(why) = limits::check_args(&req.text, summary, &m) {
        return Ok(CreateResult::refused(&id, why));
    }
    if !req.cwd.is_absolute() {
        return Ok(CreateResult::refused(
            &id,
            format!("--cwd {} must be an absolute path", req.cwd.display()),
        ));
    }
    let Ok(real) = std::fs::canonicalize(&req.cwd) else {
        return Ok(CreateResult::refused(
            &id,
            format!("no folder {}", req.cwd.display()),
        ));
    };
    if !real.is_dir() {
        return Ok(CreateResult::refused(
            &id,
            format!("{} is not a folder", real.display()),
        ));
    }
    let cwd = real.to_string_lossy().to_string();
    if !auth::authorize_cwd(caller, &cwd, &workspace_of(&cwd), &ctx.policy()) {
        return Ok(CreateResult::refused(
            &id,
            format!(
                "{cwd} is outside the workspaces this session may reach (messaging.allowCrossWorkspace, messaging.allowlist)"
            ),
        ));
    }
    let outbox = Ledger::outbox(&ctx.home, &caller.id).map_err(io("outbox"))?;
    let mut start = Record::new(Op::Queued, &id, time::now_ms());
    {
        let lock = outbox.lock().map_err(io("outbox lock"))?;
        let entries = outbox
            .entries_since(time::now_ms().saturating_sub(60_000))
            .map_err(io("outbox"))?;
        if limits::sent_last_minute(&entries, NEW_SESSION, time::now_ms()) >= m.rate_per_minute {
            return Ok(CreateResult::refused(
                &id,
                format!(
                    "{} new sessions in the last minute is the limit (messaging.ratePerMinute)",
                    m.rate_per_minute
                ),
            ));
        }
        start.sender_id = Some(caller.id.clone());
        start.sender_name = Some(caller.name.clone());
        start.sender_cwd = Some(caller.cwd.clone());
        start.sender_mode = Some(caller.mode());
        start.sender_address = Some(caller.address.clone());
        start.target_id = Some(NEW_SESSION.into());
        start.target_name = Some(cwd.clone());
        start.text = Some(req.text.clone());
        start.summary = summary.map(str::to_string);
        outbox
            .append_locked(&lock, std::slice::from_ref(&start))
            .map_err(io("outbox"))?;
    }
    let prompt = super::delivery::content_of(&start).unwrap_or_default();
    let mode = match caller.mode() {
        frame::Mode::Bypass => "bypassPermissions",
        frame::Mode::Prompting => "default",
    };
    let result = ctx.waker.wake(&WakeRequest {
        session_id: None,
        cwd: real.clone(),
        prompt,
        mode: mode.into(),
        model: None,
        timeout_ms: m.wake_timeout_seconds * 1000,
        origin: super::wake::origin(std::iter::once(caller.address.as_str()), mode),
    });
    let transcript = result
        .session_id
        .as_deref()
        .and_then(|s| directory::find_transcript(s, &cwd));
    // Delivered only if the first turn reached the model and it answered.
    let landed = super::progress::seen_all(transcript.as_deref(), std::slice::from_ref(&id))[0]
        == super::progress::Seen::Consumed;
    let mut end = Record::new(
        if landed { Op::Delivered } else { Op::Refused },
        &id,
        time::now_ms(),
    );
    end.via = Some(Via::Create);
    end.reason = (!landed).then(|| {
        format!(
            "the new session's first turn failed: {}",
            result
                .error
                .clone()
                .unwrap_or_else(|| "the message is not in its transcript".into())
        )
    });
    end.session_id = result.session_id.clone();
    outbox.append(&[end.clone()]).map_err(io("outbox"))?;
    let where_ = Path::new(&cwd).display().to_string();
    Ok(CreateResult {
        status: if landed {
            CreateStatus::Delivered
        } else {
            CreateStatus::Failed
        },
        message_id: id,
        session_id: result.session_id.clone(),
        detail: if landed {
            format!("started a new session in {where_} with the message as its first prompt")
        } else {
            match &result.session_id {
                Some(s) => format!(
                    "the session {s} exists but its first turn failed ({}); message it with send-message send --to {s}",
                    result.error.unwrap_or_default()
                ),
                None => format!(
                    "no session could be started in {where_}: {}",
                    result.error.unwrap_or_default()
                ),
            }
        },
    })
}
