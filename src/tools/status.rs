//! `status`: the round at a glance. `--wait` is the end-of-round barrier `[W]` uses: it returns
//! when every claimed stream is done (a lock stale past the round limit counts as finished);
//! `--archive` then moves the round into `history/`.

use super::open;
use crate::config::Config;
use crate::exit::{Code, fail};
use crate::state::{Held, Layout, StreamState, short_id};
use crate::{plans, time};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
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
    /// The detached lease refresher's pass (started by the guard), quiet.
    pub refresh_leases: bool,
    /// One line for the Claude Code status line of the session whose JSON is on stdin.
    pub statusline: bool,
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
    pub leases: Option<crate::tools::leases::MirrorState>,
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
        crate::tools::leases::add_remote_rows(root, layout, cfg, lc, &locks, &mut report, now);
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

/// The table as text.
pub fn render(r: &Report) -> String {
    let mut out = format!("round {}\n", r.round);
    if r.streams.is_empty() {
        out.push_str("no streams: no plans and no locks\n");
    } else {
        out.reserve(r.streams.len() * 64);
        table_line(
            &mut out,
            ["STREAM", "MS", "STATE", "SESSION", "HEARTBEAT", "ROUND"],
        );
        let mut cells = [const { String::new() }; 4];
        for row in &r.streams {
            let [ms, state, heartbeat, round] = &mut cells;
            for c in [&mut *ms, &mut *state, &mut *heartbeat, &mut *round] {
                c.clear();
            }
            let _ = match row.milestone {
                Some(m) => write!(ms, "{m:02}"),
                None => write!(ms, "-"),
            };
            state.push_str(row.state.as_str());
            if row.orphaned {
                state.push('*');
            }
            let _ = match row.heartbeat_age_s {
                Some(s) => write!(heartbeat, "{} ago", time::age(s * 1000)),
                None => write!(heartbeat, "-"),
            };
            let _ = match row.round {
                Some(n) => write!(round, "{n}"),
                None => write!(round, "-"),
            };
            let session = row.session_id.as_deref().map_or("-", short_id);
            table_line(
                &mut out,
                [&row.stream, ms, state, session, heartbeat, round],
            );
        }
        if let Some(m) = &r.leases {
            out.push_str(&crate::tools::leases::render_hosts(r, m));
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
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// One line of the table: `{:<20} {:>3}  {:<10} {:<9} {:>9}  {}`, padded by hand (the
/// formatting machinery costs more than the rest of a row; widths count chars, as it does).
fn table_line(out: &mut String, [stream, ms, state, session, heartbeat, round]: [&str; 6]) {
    fn pad(out: &mut String, n: usize) {
        out.extend(std::iter::repeat_n(' ', n));
    }
    let width = |s: &str| s.chars().count();
    out.push_str(stream);
    pad(out, 20usize.saturating_sub(width(stream)) + 1);
    pad(out, 3usize.saturating_sub(width(ms)));
    out.push_str(ms);
    out.push_str("  ");
    out.push_str(state);
    pad(out, 10usize.saturating_sub(width(state)) + 1);
    out.push_str(session);
    pad(out, 9usize.saturating_sub(width(session)) + 1);
    pad(out, 9usize.saturating_sub(width(heartbeat)));
    out.push_str(heartbeat);
    out.push_str("  ");
    out.push_str(round);
    out.push('\n');
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

fn describe_pending(rows: &[&Row]) -> String {
    rows.iter()
        .map(|r| match &r.problem {
            Some(why) => format!("{} (corrupt: {why})", r.stream),
            None => format!(
                "{} ({}, session {}, heartbeat {} ago)",
                r.stream,
                r.state.as_str(),
                r.session_id.as_deref().map_or("-", short_id),
                time::age(r.heartbeat_age_s.unwrap_or(0) * 1000)
            ),
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
    if a.statusline {
        return super::statusline::run(a.repo);
    }
    let (root, cfg, layout) = open(a.repo)?;
    if let Some(key) = a.config_value {
        println!("{}", config_value(&cfg, key)?);
        return Ok(Code::Success);
    }
    if a.refresh_leases {
        return crate::tools::leases::refresher(&root, &layout, &cfg);
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
        crate::round_index::Index::after_write(&layout, None, &[]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_line_is_padded_as_the_format_string_pads_it() {
        for cells in [
            ["STREAM", "MS", "STATE", "SESSION", "HEARTBEAT", "ROUND"],
            ["api", "01", "active*", "3f2a9c1e", "4m ago", "0"],
            [
                "a-very-long-stream-name-indeed",
                "123",
                "unclaimed",
                "-",
                "-",
                "-",
            ],
            ["é-stream", "-", "corrupt", "sessionü", "1h05m ago", "12"],
            ["", "", "", "", "", ""],
        ] {
            let [a, b, c, d, e, f] = cells;
            let mut out = String::new();
            table_line(&mut out, cells);
            assert_eq!(
                out,
                format!("{a:<20} {b:>3}  {c:<10} {d:<9} {e:>9}  {f}\n"),
                "{cells:?}"
            );
        }
    }
}
