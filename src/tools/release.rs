//! `release <stream>`: the end-of-stream gate. Every configured check passes and every file the
//! stream owns is committed (modified, staged and untracked all count); then `<stream>.done` is
//! written, and `milestones/ms-NN.done` when the milestone's last stream is done.

use super::{acting_for, check_stream_name, open, shell};
use crate::exit::{Code, fail};
use crate::globs::Owns;
use crate::sessions::caller::Caller;
use crate::state::{DoneRecord, Layout};
use crate::{plans, time};
use serde_json::json;
use std::path::Path;
use std::process::Stdio;

pub struct Args<'a> {
    pub stream: &'a str,
    pub repo: Option<&'a Path>,
    pub json: bool,
}

/// One check's result.
#[derive(Debug, serde::Serialize)]
pub struct Check {
    pub command: String,
    pub ok: bool,
    pub status: Option<i32>,
    /// The last lines of its output, when it failed.
    pub tail: String,
}

fn run_check(root: &Path, command: &str) -> Check {
    match shell(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).to_string();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            let text = super::strip_ansi(&text);
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            Check {
                command: command.to_string(),
                ok: out.status.success(),
                status: out.status.code(),
                tail: if out.status.success() {
                    String::new()
                } else {
                    tail
                },
            }
        }
        Err(e) => Check {
            command: command.to_string(),
            ok: false,
            status: None,
            tail: format!("could not start: {e}"),
        },
    }
}

/// Files git reports as not committed (`XY path`), repo-relative POSIX; both paths of a rename.
pub fn uncommitted(root: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let changes = crate::git::status(root).map_err(|e| {
        fail(
            Code::Failure,
            match e {
                crate::git::StatusError::Spawn(e) => {
                    format!("cannot run git status in {}: {e}", root.display())
                }
                crate::git::StatusError::Failed(err) => {
                    format!("git status failed in {}: {}", root.display(), err.trim())
                }
            },
        )
    })?;
    Ok(changes
        .iter()
        .flat_map(|c| c.paths().map(|p| (c.status.clone(), p.to_string())))
        .collect())
}

/// Ends the stream's lease on the remote when leases are configured, saying on stderr what the
/// remote could not be told.
fn end_lease(
    root: &Path,
    layout: &Layout,
    config: &crate::config::Config,
    stream: &str,
    session_id: &str,
) -> anyhow::Result<()> {
    if let Some(cfg) = &config.leases {
        let said = crate::tools::leases::release(root, layout, cfg, stream, session_id)?;
        if !said.is_empty() {
            eprint!("release: {said}");
        }
    }
    Ok(())
}

fn head(root: &Path) -> String {
    crate::git::command(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Writes `milestones/ms-NN.done` when every stream of the milestone is done. An error says why
/// the marker could not be decided or written; the release itself stands.
fn mark_milestone(
    root: &Path,
    layout: &Layout,
    glob: &str,
    milestone: u32,
    now: u64,
) -> Result<(), String> {
    let streams = plans::load(root, glob)
        .map_err(|e| format!("cannot tell whether milestone {milestone:02} is done: {e}"))?;
    let all_done = streams
        .iter()
        .filter(|s| s.milestone == milestone)
        .all(|s| layout.done_path(&s.name).exists());
    if all_done {
        let path = layout.milestone_done(milestone);
        let text = json!({"milestone": milestone, "doneAt": time::iso(now)}).to_string();
        crate::atomic::create_dirs(layout.milestones())
            .and_then(|()| crate::atomic::write_atomic(&path, text.as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    check_stream_name(a.stream)?;
    let (root, config, layout) = open(a.repo)?;
    let (held, caller) = acting_for(&layout, a.stream, || {
        format!(
            "stream '{}' is not claimed in {} (no lock)",
            a.stream,
            layout.dir.display()
        )
    })?;
    // Outside every session's tree (a person at a terminal): say whose stream this was.
    let whose = match caller {
        Caller::Terminal => format!(
            " (session {}'s stream, released from outside every session)",
            crate::state::short_id(&held.record.session_id)
        ),
        Caller::Session { .. } | Caller::Detached { .. } => String::new(),
    };
    if held.done {
        // A lease the first release could not end (its record unreadable, the remote away) is
        // ended now; one marked already, or pending for the refresher, is left as it is.
        end_lease(&root, &layout, &config, a.stream, &held.record.session_id)?;
        if a.json {
            crate::cli::print_json(
                &json!({"stream": a.stream, "released": true, "already": true}),
            )?;
        } else {
            println!("stream '{}' is already released", a.stream);
        }
        return Ok(Code::Success);
    }
    let owns = Owns::new(&held.record.owns, config.case_insensitive()).map_err(|e| {
        fail(
            Code::Failure,
            format!("{}: {e}", layout.lock_path(a.stream).display()),
        )
    })?;
    let dirty: Vec<(String, String)> = uncommitted(&root)?
        .into_iter()
        .filter(|(_, path)| owns.is_match(path.trim_end_matches('/')))
        .collect();
    let mut checks = Vec::new();
    for command in &super::release_checks::chosen(&root, &config).checks {
        if let Some(missing) = super::missing_project_tool(&root, command, "releaseChecks") {
            checks.push(Check {
                command: command.clone(),
                ok: false,
                status: None,
                tail: missing,
            });
            continue;
        }
        if !a.json {
            eprintln!("release: running {command}");
        }
        checks.push(run_check(&root, command));
    }
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.ok).collect();
    let passed = dirty.is_empty() && failed.is_empty();
    let now = time::now_ms();
    if passed {
        let done = DoneRecord {
            stream: a.stream.to_string(),
            session_id: held.record.session_id.clone(),
            released_at: time::iso(now),
            head: head(&root),
        };
        {
            // Under the state lock, so the round index moves with the done marker.
            let _state = layout.lock_state(std::time::Duration::from_secs(30))?;
            let index = crate::round_index::Index::before_write(&layout);
            layout.write_done(&done)?;
            crate::round_index::Index::after_write(&layout, index, &[a.stream]);
        }
        end_lease(&root, &layout, &config, a.stream, &held.record.session_id)?;
        if let Err(e) = mark_milestone(
            &root,
            &layout,
            &config.plan_glob,
            held.record.milestone,
            now,
        ) {
            eprintln!("release: warning: {e}");
        }
    }
    if a.json {
        let dirty_json: Vec<_> = dirty
            .iter()
            .map(|(code, path)| json!({"status": code, "path": path}))
            .collect();
        crate::cli::print_json(&json!({
            "stream": a.stream,
            "released": passed,
            "heldBy": held.record.session_id,
            "fromTerminal": caller == Caller::Terminal,
            "uncommitted": dirty_json,
            "checks": checks,
        }))?;
        return Ok(if passed {
            Code::Success
        } else {
            Code::GateFailed
        });
    }
    if passed {
        println!(
            "released '{}'{whose}: {} check(s) passed, every owned file is committed; wrote {}",
            a.stream,
            checks.len(),
            layout.done_path(a.stream).display()
        );
        return Ok(Code::Success);
    }
    let mut msg = format!("stream '{}' is not released:", a.stream);
    for c in &failed {
        let status = c
            .status
            .map_or("no status".to_string(), |s| format!("exit {s}"));
        msg.push_str(&format!("\n  check failed ({status}): {}", c.command));
        for line in c.tail.lines() {
            msg.push_str(&format!("\n    | {line}"));
        }
    }
    if !dirty.is_empty() {
        msg.push_str(&format!("\n  {} owned file(s) not committed:", dirty.len()));
        for (code, path) in &dirty {
            msg.push_str(&format!("\n    {code} {path}"));
        }
        msg.push_str("\n  commit them (git add <path> && git commit), then run release again");
    }
    Err(fail(Code::GateFailed, msg))
}
