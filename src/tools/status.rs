//! `status`: the round at a glance. `--wait` is the end-of-round barrier `[W]` uses: it returns
//! when every claimed stream is done (a lock stale past the round limit counts as finished);
//! `--archive` then moves the round into `history/`.

use super::open;
use super::report::{Report, Row, pending, report};
use crate::config::Config;
use crate::exit::{Code, fail};
use crate::state::short_id;
use crate::time;
use crate::tools::leases::MirrorState;
pub use crate::tools::leases::RefreshRun;
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
    /// The lease refresher's pass (the guard starts it detached), quiet.
    pub refresh_leases: Option<RefreshRun>,
    /// One line for the Claude Code status line of the session whose JSON is on stdin.
    pub statusline: bool,
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
            out.push_str(&render_hosts(r, m));
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

/// The host and source of each row, and the mirror's age, under status's table.
fn render_hosts(r: &Report, m: &MirrorState) -> String {
    let mut out = format!(
        "leases on remote '{}': {}\n",
        m.remote,
        match (m.age_s, &m.error) {
            (_, Some(e)) => format!(
                "unreachable ({e}); other machines' rows are from the mirror{}",
                m.age_s
                    .map(|a| format!(", {} old", time::age(a * 1000)))
                    .unwrap_or_else(|| " (never fetched)".into())
            ),
            (Some(a), None) => format!("fetched {} ago", time::age(a * 1000)),
            (None, None) => "never fetched".into(),
        }
    );
    for row in r.streams.iter().filter(|x| x.source.is_some()) {
        out.push_str(&format!(
            "  {:<20} {:<6} {}\n",
            row.stream,
            row.source.unwrap_or("-"),
            row.host.as_deref().unwrap_or("-")
        ));
    }
    out
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
    if let Some(run) = a.refresh_leases {
        return crate::tools::leases::refresher(&root, &layout, &cfg, run);
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
