//! The round's report: one row per stream from plans and locks (and, with leases, other
//! machines' leases from the mirror), the problems and warnings beside them. `status` prints it,
//! `status --wait` waits on it and `status --watch` redraws it; each reads it from here.

use crate::config::Config;
use crate::leases::LeasesConfig;
use crate::leases::ops;
use crate::state::{Held, Layout, StreamState};
use crate::tools::leases::{MirrorState, status_mirror};
use crate::{plans, time};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::Path;

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
    /// For a corrupt lock or a broken plan: the file and what is wrong with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// With leases: the machine holding it, and whether the answer is this clone's lock
    /// (`local`) or another machine's lease from the mirror (`remote`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub round: u32,
    pub streams: Vec<Row>,
    pub problems: Vec<String>,
    /// Not errors, but worth a look: plans whose `owns` overlap.
    pub warnings: Vec<String>,
    /// With leases: where other machines' rows come from and how old that answer is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases: Option<MirrorState>,
    /// With leases: states that need a person's eye but are not broken files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Calls the guard blocked, per stream, made by the session that holds it now (from
    /// session-lock/blocks.jsonl; `guard log` shows them).
    pub blocks: std::collections::BTreeMap<String, usize>,
}

fn row_for(
    h: &Held,
    milestone: Option<u32>,
    cfg: &Config,
    now: u64,
    look: &mut crate::liveness::Look,
) -> Row {
    Row {
        stream: h.record.stream.clone(),
        milestone: milestone.or(Some(h.record.milestone)),
        state: h.state(now, cfg.heartbeat_stale_ms()),
        session_id: Some(h.record.session_id.clone()),
        heartbeat_age_s: Some(h.age_ms(now) / 1000),
        round: Some(h.record.round),
        orphaned: !h.done && h.orphaned_in(look),
        abandoned: !h.done && h.age_ms(now) >= cfg.round_stale_ms(),
        problem: None,
        host: None,
        source: None,
    }
}

fn problem_row(stream: String, milestone: Option<u32>, state: StreamState, why: String) -> Row {
    Row {
        stream,
        milestone,
        state,
        session_id: None,
        heartbeat_age_s: None,
        round: None,
        orphaned: false,
        abandoned: false,
        problem: Some(why),
        host: None,
        source: None,
    }
}

/// Pairs of plans whose `owns` may match the same files (a literal pattern is tested exactly;
/// otherwise one pattern's fixed prefix lies inside the other's). The earlier claim keeps such
/// files, so the later stream cannot edit them.
pub fn overlaps(streams: &[plans::Stream], ci: bool) -> Vec<String> {
    let sets: Vec<crate::globs::OverlapSet> = streams
        .iter()
        .map(|s| crate::globs::OverlapSet::new(&s.owns, ci))
        .collect();
    crate::globs::overlapping(&sets)
        .into_iter()
        .map(|(i, j, pa, pb)| {
            format!(
                "plans of '{}' ({pa}) and '{}' ({pb}) own overlapping files; while both are live the earlier claim keeps them",
                streams[i].name, streams[j].name
            )
        })
        .collect()
}

/// Reads plans and locks into the table: the plans' streams in milestone order, then plans that
/// cannot be read, corrupt locks, and locks no plan declares.
pub fn report(root: &Path, cfg: &Config, layout: &Layout) -> Report {
    let now = time::now_ms();
    let mut problems = Vec::new();
    let (streams, broken) = crate::plan_cache::load_each(root, &cfg.plan_glob, layout)
        .unwrap_or_else(|e| {
            problems.push(e.to_string());
            (Vec::new(), Vec::new())
        });
    let (locks, bad) = layout.read_locks();
    problems.extend(broken.iter().map(|b| b.to_string()));
    problems.extend(bad.iter().map(|b| b.to_string()));
    // Each name once: a lock file per stream, a plan per stream (a name declared twice is
    // neither's), so the rows are joined by name, not by scanning the other list per row.
    let lock_of: HashMap<&str, &Held> = locks
        .iter()
        .map(|h| (h.record.stream.as_str(), h))
        .collect();
    let plan_of: HashMap<&str, &plans::Stream> =
        streams.iter().map(|s| (s.name.as_str(), s)).collect();
    let bad_names: HashSet<String> = bad.iter().map(|b| b.stream()).collect();
    let mut look = crate::liveness::Look::default();
    let mut rows: Vec<Row> = Vec::new();
    for s in &streams {
        if bad_names.contains(&s.name) {
            continue;
        }
        match lock_of.get(s.name.as_str()) {
            Some(h) => rows.push(row_for(h, Some(s.milestone), cfg, now, &mut look)),
            None => rows.push(Row {
                stream: s.name.clone(),
                milestone: Some(s.milestone),
                state: StreamState::Unclaimed,
                session_id: None,
                heartbeat_age_s: None,
                round: None,
                orphaned: false,
                abandoned: false,
                problem: None,
                host: None,
                source: None,
            }),
        }
    }
    // A broken plan's row, named by its folder, unless the stream already has one.
    let mut broken_named: HashSet<String> = HashSet::new();
    for b in &broken {
        if let plans::PlanError::Malformed { path, .. } = b {
            let folder = path.rsplit('/').nth(1).unwrap_or_default();
            if let Some((ms, name)) = plans::parse_folder(folder) {
                let has_row = (plan_of.contains_key(name.as_str()) && !bad_names.contains(&name))
                    || broken_named.contains(&name);
                if !has_row {
                    broken_named.insert(name.clone());
                    rows.push(problem_row(
                        name,
                        Some(ms),
                        StreamState::Broken,
                        b.to_string(),
                    ));
                }
            }
        }
    }
    for b in &bad {
        let stream = b.stream();
        let milestone = plan_of.get(stream.as_str()).map(|s| s.milestone);
        rows.push(problem_row(
            stream,
            milestone,
            StreamState::Corrupt,
            format!("{b}; fix or delete {}", b.path.display()),
        ));
    }
    for h in &locks {
        if !plan_of.contains_key(h.record.stream.as_str()) {
            rows.push(row_for(h, None, cfg, now, &mut look));
        }
    }
    let blocks = block_counts(root, &rows);
    let warnings = overlaps(&streams, cfg.case_insensitive());
    let mut report = Report {
        round: layout.round(),
        streams: rows,
        problems,
        warnings,
        blocks,
        leases: None,
        notes: Vec::new(),
    };
    if let Some(lc) = &cfg.leases {
        add_remote_rows(root, layout, cfg, lc, &locks, &mut report, now);
    }
    report
}

/// Denies in the block log per stream, counting those of the session that holds it now.
fn block_counts(root: &Path, rows: &[Row]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    let Ok(denies) = crate::hook::blocklog::denies_by_session(root) else {
        return counts;
    };
    if denies.is_empty() {
        return counts;
    }
    // The first row naming a session is the one its denies count for.
    let mut seen: HashSet<&str> = HashSet::new();
    for r in rows {
        if let Some(session) = r.session_id.as_deref()
            && seen.insert(session)
            && let Some(&n) = denies.get(session)
        {
            *counts.entry(r.stream.clone()).or_insert(0) += n;
        }
    }
    counts
}

/// Streams `--wait` still waits for: claimed, not done, not abandoned; and a corrupt lock,
/// which is never counted finished (nobody can tell whether its stream is).
pub fn pending(r: &Report) -> Vec<&Row> {
    r.streams
        .iter()
        .filter(|row| {
            (matches!(row.state, StreamState::Active | StreamState::Stale) && !row.abandoned)
                || row.state == StreamState::Corrupt
        })
        .collect()
}

/// Status with leases: the mirror refreshed, other machines' leases as rows (`remote`), this
/// clone's locks marked `local`, and notes for states a claim left half-done.
fn add_remote_rows(
    root: &Path,
    layout: &Layout,
    config: &Config,
    cfg: &LeasesConfig,
    locks: &[Held],
    report: &mut Report,
    now: u64,
) {
    let (mirror, state) = status_mirror(root, layout, cfg);
    let me = crate::leases::host();
    let clone_id = mirror.clone_id.clone();
    for row in report.streams.iter_mut() {
        if locks.iter().any(|h| h.record.stream == row.stream) {
            row.host = Some(me.clone());
            row.source = Some("local");
        }
    }
    for m in &mirror.leases {
        let l = &m.lease;
        if l.clone_id == clone_id {
            continue;
        }
        let local = locks.iter().find(|h| h.record.stream == l.stream);
        if let Some(h) = local {
            if l.is_live(now, config.heartbeat_stale_ms()) && !h.done {
                report.notes.push(format!(
                    "stream '{}': held here by session {} and on the remote by {}; the remote's lease wins",
                    l.stream,
                    crate::state::short_id(&h.record.session_id),
                    l.describe(now)
                ));
            }
            continue;
        }
        let held = crate::leases::mirror::as_held(l);
        let row = Row {
            stream: l.stream.clone(),
            milestone: report
                .streams
                .iter()
                .find(|r| r.stream == l.stream)
                .and_then(|r| r.milestone),
            state: held.state(now, config.heartbeat_stale_ms()),
            session_id: Some(l.session_id.clone()),
            heartbeat_age_s: Some(held.age_ms(now) / 1000),
            round: None,
            orphaned: false,
            abandoned: !l.done && held.age_ms(now) >= config.round_stale_ms(),
            problem: None,
            host: Some(l.host.clone()),
            source: Some("remote"),
        };
        match report.streams.iter_mut().find(|r| r.stream == l.stream) {
            Some(r) => *r = row,
            None => report.streams.push(row),
        }
    }
    // A claim killed between its push and its local record, or one never pushed.
    for h in locks.iter().filter(|h| !h.done) {
        let pushed = ops::read_pushed(layout, &h.record.stream);
        let remote = mirror.find(&h.record.stream);
        let ours = remote.is_some_and(|m| m.lease.clone_id == clone_id);
        match (&pushed, ours) {
            (None, true) => report.notes.push(format!(
                "stream '{}': the remote's lease is this clone's but its local record is missing (a claim was interrupted); run claim {} again to repair it",
                h.record.stream, h.record.stream
            )),
            (None, false) if remote.is_none() => report.notes.push(format!(
                "stream '{}': claimed here, not on remote '{}' (the claim did not finish); run claim {} again",
                h.record.stream, cfg.remote, h.record.stream
            )),
            (Some(p), _) if p.sha.is_none() => report.notes.push(format!(
                "stream '{}': claimed offline; not yet on remote '{}'",
                h.record.stream, cfg.remote
            )),
            _ => {}
        }
    }
    report.leases = Some(state);
}
