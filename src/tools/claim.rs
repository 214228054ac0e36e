//! `claim <stream>`: the first command of every session. It never writes the lock (only the
//! guard hook knows the session id and writes it when it sees this command); it reads the lock
//! back, checks it is this session's, and prints the rules and who owns what.

use super::{acting_for, check_stream_name, open, protocol_text};
use crate::exit::Code;
use crate::exit::fail;
use crate::sessions::caller::Caller;
use crate::state::{Layout, short_id};
use crate::time;
use serde_json::json;
use std::path::Path;

pub struct Args<'a> {
    pub stream: &'a str,
    pub repo: Option<&'a Path>,
    pub json: bool,
    pub quiet: bool,
    /// With leases configured and the remote down: claim here only.
    pub offline: bool,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    check_stream_name(a.stream)?;
    let (root, config, layout) = open(a.repo)?;
    undeclared(&root, &config.plan_glob, &layout, a.stream)?;
    let (held, caller) = acting_for(&layout, a.stream, || {
        format!(
            "no lock for stream '{}' in {}: the guard hook did not record the claim. Run claim from the Bash tool of a Claude Code session started at the repo root (the client reads the repo's .claude/settings.json only when it starts there), with guard wired as its PreToolUse hook (guard install <repo>)",
            a.stream,
            layout.dir.display()
        )
    })?;
    let lease = match &config.leases {
        Some(cfg) => crate::tools::leases::claim(&root, &layout, &config, cfg, &held, a.offline)?,
        None => String::new(),
    };
    let now = time::now_ms();
    let stale = config.heartbeat_stale_ms();
    let (locks, _) = layout.read_locks();
    let others: Vec<_> = locks
        .iter()
        .filter(|h| h.record.stream != a.stream)
        .collect();
    if a.json {
        let others: Vec<_> = others
            .iter()
            .map(|h| {
                json!({
                    "stream": h.record.stream,
                    "sessionId": h.record.session_id,
                    "state": h.state(now, stale).as_str(),
                    "owns": h.record.owns,
                })
            })
            .collect();
        crate::cli::print_json(&json!({
            "stream": held.record.stream,
            "sessionId": held.record.session_id,
            "milestone": held.record.milestone,
            "plan": held.record.plan,
            "round": held.record.round,
            "owns": held.record.owns,
            "others": others,
            "lease": (!lease.is_empty()).then(|| lease.trim()),
        }))?;
        return Ok(Code::Success);
    }
    let mut out = String::new();
    if !a.quiet {
        out.push_str(&protocol_text(&layout));
        out.push_str("\n---\n");
    }
    let whose = match caller {
        Caller::Session { .. } => "this session",
        Caller::Terminal => "session",
    };
    out.push_str(&format!(
        "Stream '{}' (milestone {:02}, round {}) is held by {whose} {}.\n",
        held.record.stream,
        held.record.milestone,
        held.record.round,
        short_id(&held.record.session_id)
    ));
    out.push_str(match caller {
        Caller::Session { .. } => "You own:\n",
        Caller::Terminal => "(this command runs outside every session) It owns:\n",
    });
    for o in &held.record.owns {
        out.push_str(&format!("  {o}\n"));
    }
    out.push_str(&lease);
    if others.is_empty() {
        out.push_str("No other stream is claimed.\n");
    } else {
        out.push_str("Other streams (do not edit what they own):\n");
        for h in others {
            out.push_str(&format!(
                "  {} — session {}, {} (heartbeat {} ago): {}\n",
                h.record.stream,
                short_id(&h.record.session_id),
                h.state(now, stale).as_str(),
                time::age(h.age_ms(now)),
                h.record.owns.join(", ")
            ));
        }
    }
    print!("{out}");
    Ok(Code::Success)
}

/// A stream no plan declares is the real cause of a missing lock: say so, with the streams
/// that are declared (and the plans that could not be read). Read through the plan cache, as
/// the guard's claim reads it: the declaring plan's line and the other plans' heads, and every
/// plan only for the message.
fn undeclared(root: &Path, glob: &str, layout: &Layout, stream: &str) -> anyhow::Result<()> {
    let usage = |e: crate::plans::PlanError| fail(Code::Usage, e.to_string());
    if crate::plan_cache::declaring(root, glob, layout, stream)
        .map_err(usage)?
        .is_some()
    {
        return Ok(());
    }
    let (streams, broken) = crate::plan_cache::load_each(root, glob, layout).map_err(usage)?;
    if streams.iter().any(|s| s.name == stream) {
        return Ok(());
    }
    Err(fail(
        Code::NotFound,
        crate::plans::undeclared(stream, &streams, &broken, "\n  "),
    ))
}
