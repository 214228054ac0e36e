//! `status`: the round at a glance. `--wait` is the end-of-round barrier `[W]` uses: it returns
//! when every claimed stream is done (a lock stale past the round limit counts as finished);
//! `--archive` then moves the round into `history/`.

use super::open;
use crate::config::Config;
use crate::exit::{Code, fail};
use crate::state::{Held, Layout, StreamState, short_id};
use crate::{plans, time};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

pub struct Args<'a> {
    pub repo: Option<&'a Path>,
    pub json: bool,
    pub wait: bool,
    pub timeout: Option<u64>,
    pub archive: bool,
    /// No progress on stderr while waiting.
    pub quiet: bool,
    /// The live view of the round (`tools::watch`) until the person quits.
    pub watch: bool,
    /// Print one key of the effective config (for scripts) and nothing else.
    pub config_value: Option<&'a str>,
}

/// One row of the table.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub stream: String,
    pub milestone: Option<u32>,
    pub state: StreamState,
    pub session_id: Option<String>,
    pub heartbeat_age_s: Option<u64>,
    pub round: Option<u32>,
    /// The client process that claimed it is gone (the lock still protects until stale).
    pub orphaned: bool,
    /// Stale past the end-of-round limit: `--wait` no longer waits for it.
    pub abandoned: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub round: u32,
    pub streams: Vec<Row>,
    pub problems: Vec<String>,
    /// Calls the guard blocked, per stream, made by the session that holds it now (from
    /// session-lock/blocks.jsonl; `guard log` shows them).
    pub blocks: std::collections::BTreeMap<String, usize>,
}

fn row_for(h: &Held, milestone: Option<u32>, cfg: &Config, now: u64) -> Row {
    Row {
        stream: h.record.stream.clone(),
        milestone: milestone.or(Some(h.record.milestone)),
        state: h.state(now, cfg.heartbeat_stale_ms()),
        session_id: Some(h.record.session_id.clone()),
        heartbeat_age_s: Some(h.age_ms(now) / 1000),
        round: Some(h.record.round),
        orphaned: !h.done && h.orphaned(),
        abandoned: !h.done && h.age_ms(now) >= cfg.round_stale_ms(),
    }
}

/// Reads plans and locks into the table.
pub fn report(root: &Path, cfg: &Config, layout: &Layout) -> Report {
    let now = time::now_ms();
    let mut problems = Vec::new();
    let streams = plans::load(root, &cfg.plan_glob).unwrap_or_else(|e| {
        problems.push(e.to_string());
        Vec::new()
    });
    let (locks, bad) = layout.read_locks();
    problems.extend(bad.iter().map(|b| b.to_string()));
    let mut rows: Vec<Row> = Vec::new();
    for s in &streams {
        match locks.iter().find(|h| h.record.stream == s.name) {
            Some(h) => rows.push(row_for(h, Some(s.milestone), cfg, now)),
            None => rows.push(Row {
                stream: s.name.clone(),
                milestone: Some(s.milestone),
                state: StreamState::Unclaimed,
                session_id: None,
                heartbeat_age_s: None,
                round: None,
                orphaned: false,
                abandoned: false,
            }),
        }
    }
    for h in &locks {
        if !streams.iter().any(|s| s.name == h.record.stream) {
            rows.push(row_for(h, None, cfg, now));
        }
    }
    let blocks = block_counts(root, &rows);
    Report {
        round: layout.round(),
        streams: rows,
        problems,
        blocks,
    }
}

/// Denies in the block log per stream, counting those of the session that holds it now.
fn block_counts(root: &Path, rows: &[Row]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    let Ok(entries) = crate::hook::blocklog::read(root) else {
        return counts;
    };
    for e in entries
        .iter()
        .filter(|e| e.kind == crate::hook::blocklog::Kind::Deny)
    {
        if let Some(row) = rows
            .iter()
            .find(|r| r.session_id.as_deref() == Some(e.session.as_str()))
        {
            *counts.entry(row.stream.clone()).or_insert(0) += 1;
        }
    }
    counts
}

/// The table as text.
pub fn render(r: &Report) -> String {
    let mut out = format!("round {}\n", r.round);
    if r.streams.is_empty() {
        out.push_str("no streams: no plans and no locks\n");
    } else {
        out.push_str(&format!(
            "{:<20} {:>3}  {:<10} {:<9} {:>9}  {}\n",
            "STREAM", "MS", "STATE", "SESSION", "HEARTBEAT", "ROUND"
        ));
        for row in &r.streams {
            let mut state = row.state.as_str().to_string();
            if row.orphaned {
                state.push('*');
            }
            out.push_str(&format!(
                "{:<20} {:>3}  {:<10} {:<9} {:>9}  {}\n",
                row.stream,
                row.milestone.map_or("-".into(), |m| format!("{m:02}")),
                state,
                row.session_id.as_deref().map_or("-", short_id),
                row.heartbeat_age_s
                    .map_or("-".into(), |s| format!("{} ago", time::age(s * 1000))),
                row.round.map_or("-".into(), |n| n.to_string()),
            ));
        }
        if r.streams.iter().any(|x| x.orphaned) {
            out.push_str("* orphaned: the session's client process is gone; its lock protects until it goes stale\n");
        }
    }
    if !r.blocks.is_empty() {
        let list: Vec<String> = r.blocks.iter().map(|(s, n)| format!("{s} {n}")).collect();
        out.push_str(&format!(
            "blocked calls: {} (guard log shows them)\n",
            list.join(", ")
        ));
    }
    for p in &r.problems {
        out.push_str(&format!("problem: {p}\n"));
    }
    out
}

/// Streams `--wait` still waits for: claimed, not done, not abandoned.
pub fn pending(r: &Report) -> Vec<&Row> {
    r.streams
        .iter()
        .filter(|row| {
            matches!(row.state, StreamState::Active | StreamState::Stale) && !row.abandoned
        })
        .collect()
}

fn describe_pending(rows: &[&Row]) -> String {
    rows.iter()
        .map(|r| {
            format!(
                "{} ({}, session {}, heartbeat {} ago)",
                r.stream,
                r.state.as_str(),
                r.session_id.as_deref().map_or("-", short_id),
                time::age(r.heartbeat_age_s.unwrap_or(0) * 1000)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One key of the effective config as scripts read it: strings bare, anything else as JSON.
pub fn config_value(cfg: &Config, key: &str) -> anyhow::Result<String> {
    let all = serde_json::to_value(cfg)?;
    match all.get(key) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(v) => Ok(v.to_string()),
        None => Err(fail(
            Code::Usage,
            format!("--config-value: no config key '{key}'"),
        )),
    }
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let (root, cfg, layout) = open(a.repo)?;
    if let Some(key) = a.config_value {
        println!("{}", config_value(&cfg, key)?);
        return Ok(Code::Success);
    }
    if a.watch {
        return super::watch::run(&root, &cfg, &layout);
    }
    if a.wait {
        let start = Instant::now();
        let limit = a.timeout.map(Duration::from_secs);
        let mut progress = super::progress::Progress::new("status", a.quiet, limit);
        loop {
            let r = report(&root, &cfg, &layout);
            let waiting = pending(&r);
            if waiting.is_empty() {
                break;
            }
            let now_text = describe_pending(&waiting);
            let key: Vec<String> = waiting
                .iter()
                .map(|r| format!("{}={}", r.stream, r.session_id.as_deref().unwrap_or("")))
                .collect();
            progress.update(
                &key.join(","),
                &format!("{} stream(s): {now_text}", waiting.len()),
            );
            if let Some(limit) = limit
                && start.elapsed() >= limit
            {
                return Err(fail(
                    Code::Timeout,
                    format!(
                        "gave up after {}s; still waiting for: {now_text}",
                        limit.as_secs()
                    ),
                ));
            }
            let mut pause = Duration::from_secs(cfg.poll_seconds);
            if let Some(limit) = limit {
                pause =
                    pause.min(limit.saturating_sub(start.elapsed()) + Duration::from_millis(10));
            }
            std::thread::sleep(pause);
        }
        progress.finish("every claimed stream is done");
    }
    let r = report(&root, &cfg, &layout);
    let mut archived = None;
    if a.archive {
        let _guard = layout
            .lock_state(Duration::from_secs(30))
            .map_err(|e| {
                fail(
                    Code::Failure,
                    format!(
                        "cannot lock {}: {e}",
                        layout.dir.join(".state.lock").display()
                    ),
                )
            })?
            .ok_or_else(|| fail(Code::Busy, "the session-lock folder stayed locked for 30s"))?;
        // Archiving a live lock would take its protection away mid-round; looked at again
        // under the state lock, so a claim that came in after the wait is seen.
        let now = report(&root, &cfg, &layout);
        let open = pending(&now);
        if !open.is_empty() {
            return Err(fail(
                Code::Refused,
                format!(
                    "will not archive while {} stream(s) are open: {}. Archive when every claimed stream is done: status --wait --archive",
                    open.len(),
                    describe_pending(&open)
                ),
            ));
        }
        archived = layout
            .archive(time::now_ms())
            .map_err(|e| fail(Code::Failure, format!("cannot archive the round: {e}")))?;
    }
    if a.json {
        let mut v = serde_json::to_value(&r)?;
        if let Some(dir) = &archived {
            v["archivedTo"] = serde_json::Value::String(dir.display().to_string());
        }
        crate::cli::print_json(&v)?;
    } else {
        print!("{}", render(&r));
        match &archived {
            Some(dir) => println!("archived the round to {}", dir.display()),
            None if a.archive => println!("nothing to archive"),
            None => {}
        }
    }
    Ok(if r.problems.is_empty() {
        Code::Success
    } else {
        Code::Failure
    })
}
