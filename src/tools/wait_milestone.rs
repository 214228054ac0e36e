//! `wait-milestone <milestone|stream>`: waits until a milestone (every stream of it released) or
//! one stream is done. A wait is one long tool call with no heartbeat, so `--stream <mine>`
//! heartbeats the caller's own lock every poll; without it, waits over the limit are refused.

use super::progress::Progress;
use super::{check_stream_name, open};
use crate::exit::{Code, fail};
use crate::state::{Layout, short_id};
use crate::{plans, time};
use std::path::Path;
use std::time::{Duration, Instant};

pub struct Args<'a> {
    pub target: &'a str,
    pub stream: Option<&'a str>,
    pub timeout: Option<u64>,
    pub repo: Option<&'a Path>,
    pub json: bool,
    /// No progress on stderr.
    pub quiet: bool,
}

/// What is waited for.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    Milestone(u32),
    Stream(String),
}

/// `ms-03`, `MS03`, `3`, `03` → milestone 3; anything else is a stream name.
pub fn parse_target(text: &str) -> Target {
    let t = text.trim();
    let digits = t
        .strip_prefix("ms-")
        .or_else(|| t.strip_prefix("MS-"))
        .or_else(|| t.strip_prefix("ms"))
        .or_else(|| t.strip_prefix("MS"))
        .unwrap_or(t);
    match digits.parse::<u32>() {
        Ok(n) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Target::Milestone(n)
        }
        _ => Target::Stream(t.to_string()),
    }
}

/// Done yet? And what is still open (for progress lines).
fn check(
    root: &Path,
    glob: &str,
    layout: &Layout,
    target: &Target,
) -> anyhow::Result<(bool, Vec<String>)> {
    match target {
        Target::Stream(s) => Ok((layout.done_path(s).exists(), vec![s.clone()])),
        Target::Milestone(n) => {
            if layout.milestone_done(*n).exists() {
                return Ok((true, Vec::new()));
            }
            let streams = plans::load(root, glob).map_err(|e| fail(Code::Usage, e.to_string()))?;
            let open: Vec<String> = streams
                .iter()
                .filter(|s| s.milestone == *n && !layout.done_path(&s.name).exists())
                .map(|s| s.name.clone())
                .collect();
            Ok((open.is_empty(), open))
        }
    }
}

/// What is still open, for the progress line: each stream with its holder's session and
/// heartbeat age. The key changes when a stream finishes or changes hands.
fn describe_open(layout: &Layout, open: &[String], now: u64) -> (String, String) {
    let mut key = Vec::new();
    let mut detail = Vec::new();
    for s in open {
        match layout.read_lock(s) {
            Ok(Some(h)) => {
                key.push(format!("{s}={}", h.record.session_id));
                detail.push(format!(
                    "{s} (session {}, heartbeat {} ago)",
                    short_id(&h.record.session_id),
                    time::age(h.age_ms(now))
                ));
            }
            _ => {
                key.push(s.clone());
                detail.push(format!("{s} (not claimed)"));
            }
        }
    }
    (key.join(","), detail.join(", "))
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let (root, cfg, layout) = open(a.repo)?;
    let target = parse_target(a.target);
    match &target {
        Target::Stream(s) => {
            check_stream_name(s)?;
            // A misspelt stream would be waited for forever (with --stream there is no limit).
            let declared = plans::load(&root, &cfg.plan_glob)
                .map_err(|e| fail(Code::Usage, e.to_string()))?
                .iter()
                .any(|p| p.name == *s);
            if !declared && !layout.lock_path(s).exists() && !layout.done_path(s).exists() {
                return Err(fail(
                    Code::NotFound,
                    format!(
                        "no plan declares stream '{s}' ({}) and it has no lock",
                        cfg.plan_glob
                    ),
                ));
            }
        }
        Target::Milestone(n) => {
            let streams =
                plans::load(&root, &cfg.plan_glob).map_err(|e| fail(Code::Usage, e.to_string()))?;
            if !streams.iter().any(|s| s.milestone == *n) && !layout.milestone_done(*n).exists() {
                return Err(fail(
                    Code::NotFound,
                    format!("no plan belongs to milestone {n:02} ({})", cfg.plan_glob),
                ));
            }
        }
    }
    let limit_s = cfg.wait_limit_minutes * 60;
    let mine = match a.stream {
        Some(s) => {
            check_stream_name(s)?;
            let held =
                super::callers_lock(&layout, s, || "that stream is not claimed (no lock)".into())
                    .map_err(|e| e.context(format!("--stream {s}")))?;
            Some(held.record.session_id)
        }
        None => None,
    };
    let timeout = match (a.timeout, &mine) {
        (Some(t), None) if t > limit_s => {
            return Err(fail(
                Code::Refused,
                format!(
                    "a wait of {t}s without --stream is refused (limit {limit_s}s): one long tool call sends no heartbeat, so your lock would go stale and others could take your files. Add --stream <your stream>"
                ),
            ));
        }
        (Some(t), _) => Some(t),
        (None, None) => Some(limit_s),
        (None, Some(_)) => None,
    };
    let start = Instant::now();
    let mut progress = Progress::new("wait-milestone", a.quiet, timeout.map(Duration::from_secs));
    loop {
        if let (Some(s), Some(session)) = (a.stream, &mine) {
            let _ = layout.touch_heartbeat(s, session, time::now_ms(), Duration::from_secs(5));
        }
        let (done, open) = check(&root, &cfg.plan_glob, &layout, &target)?;
        if done {
            break;
        }
        let (key, detail) = describe_open(&layout, &open, time::now_ms());
        progress.update(&key, &format!("{}: {detail}", a.target));
        if let Some(t) = timeout
            && start.elapsed() >= Duration::from_secs(t)
        {
            return Err(fail(
                Code::Timeout,
                format!(
                    "{} is not done after {t}s; still open: {}",
                    a.target,
                    open.join(", ")
                ),
            ));
        }
        let mut pause = Duration::from_secs(cfg.poll_seconds);
        if let Some(t) = timeout {
            pause = pause.min(
                Duration::from_secs(t).saturating_sub(start.elapsed()) + Duration::from_millis(10),
            );
        }
        std::thread::sleep(pause);
    }
    progress.finish("");
    if a.json {
        crate::cli::print_json(
            &serde_json::json!({"target": a.target, "done": true, "waitedS": start.elapsed().as_secs()}),
        )?;
    } else {
        println!(
            "{} is done (waited {}s)",
            a.target,
            start.elapsed().as_secs()
        );
    }
    Ok(Code::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(parse_target("ms-03"), Target::Milestone(3));
        assert_eq!(parse_target("MS3"), Target::Milestone(3));
        assert_eq!(parse_target("07"), Target::Milestone(7));
        assert_eq!(parse_target("api"), Target::Stream("api".into()));
        assert_eq!(parse_target("ms-api"), Target::Stream("ms-api".into()));
    }
}
