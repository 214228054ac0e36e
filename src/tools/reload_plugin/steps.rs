//! The steps of the pipeline, named by [`Step`], and how each acting step runs: the two
//! commands, the copy, the bridge calls; and the tree comparison of `outside-writes`.

use super::copy::copy_tree;
use super::plan::Plan;
use crate::exit::Code;
use crate::tools::shell;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many lines of a failing command's output the report keeps.
const TAIL_LINES: usize = 20;

/// A step's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// `--dry-run`: what would run.
    Planned,
    Ok,
    Failed,
    /// The `check` step: a protocol rule said no.
    Refused,
    /// Not reached: an earlier step failed.
    Skipped,
}

/// A step of the pipeline, in order: the check, the actions, the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Check,
    Act(Action),
    OutsideWrites,
}

/// The steps that act, between the check and the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Typecheck,
    Emit,
    Copy,
    Toggle1,
    Toggle2,
    Broadcast,
}

impl Action {
    pub const ALL: [Action; 6] = [
        Action::Typecheck,
        Action::Emit,
        Action::Copy,
        Action::Toggle1,
        Action::Toggle2,
        Action::Broadcast,
    ];
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 8] = [
        Step::Check,
        Step::Act(Action::Typecheck),
        Step::Act(Action::Emit),
        Step::Act(Action::Copy),
        Step::Act(Action::Toggle1),
        Step::Act(Action::Toggle2),
        Step::Act(Action::Broadcast),
        Step::OutsideWrites,
    ];

    /// Its name in the report and the progress lines.
    pub fn name(self) -> &'static str {
        match self {
            Step::Check => "check",
            Step::Act(Action::Typecheck) => "typecheck",
            Step::Act(Action::Emit) => "emit",
            Step::Act(Action::Copy) => "copy",
            Step::Act(Action::Toggle1) => "toggle-1",
            Step::Act(Action::Toggle2) => "toggle-2",
            Step::Act(Action::Broadcast) => "broadcast",
            Step::OutsideWrites => "outside-writes",
        }
    }
}

/// One step of the report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    pub name: &'static str,
    pub status: StepStatus,
    pub duration_ms: u64,
    /// One line: what it did, or why it failed.
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The last lines a failing command printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

impl StepReport {
    pub(super) fn new(step: Step, status: StepStatus, detail: impl Into<String>) -> StepReport {
        StepReport {
            name: step.name(),
            status,
            duration_ms: 0,
            detail: detail.into(),
            command: None,
            exit_code: None,
            output: None,
            url: None,
            http_status: None,
        }
    }
}

/// What a step does, one line (the dry run's plan and the real run's announcement).
pub(super) fn describe(step: Step, plan: &Plan) -> String {
    match step {
        Step::Act(Action::Typecheck) => {
            format!("run `{}` in {}", plan.typecheck, plan.root.display())
        }
        Step::Act(Action::Emit) => format!("run `{}` in {}", plan.emit, plan.root.display()),
        Step::Act(Action::Copy) => format!(
            "copy {} -> {}",
            plan.source.display(),
            plan.target.display()
        ),
        Step::Act(Action::Toggle1 | Action::Toggle2) => {
            format!("POST {} {}", plan.toggle_url, plan.toggle_body)
        }
        Step::Act(Action::Broadcast) => {
            format!("POST {} {}", plan.broadcast_url, plan.broadcast_body)
        }
        Step::OutsideWrites => format!(
            "compare `git status --porcelain` before typecheck and after emit; list files changed outside {}/",
            plan.plugin_folder
        ),
        Step::Check => String::new(),
    }
}

/// Runs one step; a failed step comes back with the exit code it stands for.
pub(super) fn run_step(action: Action, plan: &Plan, json: bool) -> (StepReport, Code) {
    let step = Step::Act(action);
    match action {
        Action::Typecheck => command_step(step, &plan.typecheck, &plan.root, json),
        Action::Emit => command_step(step, &plan.emit, &plan.root, json),
        Action::Copy => match copy_tree(&plan.source, &plan.target) {
            Ok(c) => {
                let mut detail = format!(
                    "{} file(s), {} bytes to {}",
                    c.files,
                    c.bytes,
                    plan.target.display()
                );
                if c.extra > 0 {
                    detail.push_str(&format!(
                        "; {} file(s) only in the target were left in place",
                        c.extra
                    ));
                }
                (StepReport::new(step, StepStatus::Ok, detail), Code::Success)
            }
            Err(e) => (StepReport::new(step, StepStatus::Failed, e), Code::Failure),
        },
        Action::Toggle1 | Action::Toggle2 => {
            let (mut report, code) = post_step(step, &plan.toggle_url, &plan.toggle_body, plan);
            if report.status == StepStatus::Failed && action == Action::Toggle2 {
                report.detail.push_str(&format!(
                    "; the plugin may be left disabled: toggle '{}' back on in the app",
                    plan.plugin
                ));
            }
            (report, code)
        }
        Action::Broadcast => post_step(step, &plan.broadcast_url, &plan.broadcast_body, plan),
    }
}

fn command_step(step: Step, line: &str, root: &Path, json: bool) -> (StepReport, Code) {
    let result = run_teed(shell(line), root, json);
    let mut step = StepReport::new(step, StepStatus::Ok, format!("`{line}` exited 0"));
    step.command = Some(line.to_string());
    match result {
        Err(e) => {
            step.status = StepStatus::Failed;
            step.detail = format!("cannot start `{line}`: {e}");
            (step, Code::Failure)
        }
        Ok((status, tail)) => {
            step.exit_code = status.code();
            if status.success() {
                return (step, Code::Success);
            }
            step.status = StepStatus::Failed;
            step.output = Some(tail);
            match status.code() {
                Some(n) => {
                    step.detail = format!("`{line}` exited {n}");
                    (step, Code::GateFailed)
                }
                None => {
                    step.detail = format!("`{line}` was killed by a signal");
                    (step, Code::Failure)
                }
            }
        }
    }
}

/// Runs a command from `root` with its output passed through (to stderr under `--json`) and the
/// last lines kept for the report.
fn run_teed(
    mut cmd: Command,
    root: &Path,
    json: bool,
) -> std::io::Result<(std::process::ExitStatus, String)> {
    let mut child = cmd
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let tail = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let pump = |from: Box<dyn Read + Send>, to_stdout: bool| {
        let tail = Arc::clone(&tail);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut buf = Vec::new();
            while let Ok(n) = reader.read_until(b'\n', &mut buf) {
                if n == 0 {
                    break;
                }
                if to_stdout {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&buf);
                    let _ = out.flush();
                } else {
                    let _ = std::io::stderr().write_all(&buf);
                }
                if let Ok(mut t) = tail.lock() {
                    t.push_back(String::from_utf8_lossy(&buf).trim_end().to_string());
                    while t.len() > TAIL_LINES {
                        t.pop_front();
                    }
                }
                buf.clear();
            }
        })
    };
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(pump(Box::new(out), !json));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(pump(Box::new(err), false));
    }
    let status = child.wait()?;
    for p in pumps {
        let _ = p.join();
    }
    let text = tail
        .lock()
        .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    Ok((status, text))
}

/// What the copy did.
fn post_step(step: Step, url: &str, body: &Value, plan: &Plan) -> (StepReport, Code) {
    let mut step = StepReport::new(step, StepStatus::Ok, String::new());
    step.url = Some(url.to_string());
    match post(url, body, plan.http_timeout) {
        Ok((status, text)) => {
            step.http_status = Some(status);
            let snippet = one_line(&text, 200);
            if (200..300).contains(&status) {
                step.detail = if snippet.is_empty() {
                    format!("HTTP {status}")
                } else {
                    format!("HTTP {status}: {snippet}")
                };
                (step, Code::Success)
            } else {
                step.status = StepStatus::Failed;
                step.detail = format!("POST {url} answered HTTP {status}: {snippet}");
                (step, Code::Failure)
            }
        }
        Err(e) => {
            step.status = StepStatus::Failed;
            step.detail = format!("cannot reach the bridge at {url}: {e} (is the app running?)");
            (step, Code::Failure)
        }
    }
}

/// One POST of a JSON body; the status and up to 64 KiB of the answer. No proxy, no redirects:
/// the request stays on loopback.
fn post(url: &str, body: &Value, timeout: Duration) -> Result<(u16, String), ureq::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .new_agent();
    let mut response = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body.to_string())?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(64 * 1024)
        .read_to_string()
        .unwrap_or_default();
    Ok((status, text))
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// `git status` of the tree: path → (status letters, content hash).
pub type Snapshot = BTreeMap<String, (String, Option<u64>)>;

/// Every path `git status --porcelain` lists (both paths of a rename), with a hash of its
/// content, so a file that was already modified and is rewritten again still counts as changed.
pub fn git_snapshot(root: &Path) -> Result<Snapshot, String> {
    let changes = crate::git::status(root).map_err(|e| match e {
        crate::git::StatusError::Failed(err) => {
            format!("git status failed: {}", one_line(&err, 200))
        }
        spawn => spawn.to_string(),
    })?;
    let mut snap = Snapshot::new();
    for change in &changes {
        for path in change.paths() {
            let hash = std::fs::read(root.join(path)).ok().map(|bytes| {
                use std::hash::{Hash, Hasher};
                let mut h = std::hash::DefaultHasher::new();
                bytes.hash(&mut h);
                h.finish()
            });
            snap.insert(path.to_string(), (change.status.clone(), hash));
        }
    }
    Ok(snap)
}

/// Paths that differ between two snapshots and lie outside `folder` (repo-relative, `/`).
pub fn outside_writes(before: &Snapshot, after: &Snapshot, folder: &str) -> Vec<String> {
    let prefix = format!("{}/", folder.trim_end_matches('/'));
    let mut out: BTreeSet<&String> = BTreeSet::new();
    for (path, state) in after {
        if before.get(path) != Some(state) {
            out.insert(path);
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            out.insert(path);
        }
    }
    out.into_iter()
        .filter(|p| !p.starts_with(&prefix))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_named_in_pipeline_order() {
        let names: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "check",
                "typecheck",
                "emit",
                "copy",
                "toggle-1",
                "toggle-2",
                "broadcast",
                "outside-writes"
            ]
        );
        let acting: Vec<Step> = Action::ALL.iter().map(|a| Step::Act(*a)).collect();
        assert_eq!(acting, Step::ALL[1..Step::ALL.len() - 1]);
    }

    #[test]
    fn outside_writes_catch_rewrites_of_dirty_files() {
        let s = |v: &[(&str, &str, u64)]| -> Snapshot {
            v.iter()
                .map(|(p, xy, h)| (p.to_string(), (xy.to_string(), Some(*h))))
                .collect()
        };
        let before = s(&[
            ("plugins-library/other/main/a.ts", " M", 1),
            ("plugins-library/other/main/a.js", " M", 2),
            ("docs/x.md", " M", 3),
        ]);
        let after = s(&[
            ("plugins-library/other/main/a.ts", " M", 1),
            ("plugins-library/other/main/a.js", " M", 9),
            ("plugins-library/notes/main/index.js", " M", 4),
            ("plugins-library/third/main/b.js", "??", 5),
            ("docs/x.md", " M", 3),
        ]);
        assert_eq!(
            outside_writes(&before, &after, "plugins-library/notes"),
            vec![
                "plugins-library/other/main/a.js".to_string(),
                "plugins-library/third/main/b.js".to_string()
            ]
        );
    }
}
