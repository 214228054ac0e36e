//! `reload-plugin <id>`: reload one plugin's backend in the running app without restarting it
//! (a restart ends every session running inside the app).
//!
//! The pipeline, each step configured in the `reloadPlugin` section of the config:
//!
//! 1. `check`: the plugin is not protected (deactivating `ai-chat` ends every session), the
//!    bridge URL is loopback, the plugin's folder exists. Nothing runs before this passes.
//! 2. `typecheck`, 3. `emit`: commands from the repo root; each must exit 0.
//! 4. `copy`: `<pluginFolder>/<copyFrom>` into `<userData>/<copyTo>` (files overwritten, files
//!    only in the target left in place).
//! 5. `toggle-1`, `toggle-2`: the app's bridge toggles the plugin off and on again.
//! 6. `broadcast`: a reload on the plugin's own channel, so its open views reload.
//! 7. `outside-writes`: `git status --porcelain` before typecheck and after emit; every file
//!    that changed outside the plugin's folder is listed (the emit rewrites every plugin's
//!    output, including other sessions' work in progress).
//!
//! [`plan`] resolves and checks everything before anything runs; [`steps`] names the steps
//! ([`steps::Step`]) and runs each; [`copy`] copies the plugin's output; this module walks the
//! pipeline and reports.

mod copy;
mod plan;
mod steps;

pub use copy::{Copied, copy_tree};
pub use plan::{
    BRIDGE_ENV, BridgeUrlError, Plan, Refusal, check_bridge_url, check_id, default_user_data, fill,
    plan,
};
pub use steps::{Action, Snapshot, Step, StepReport, StepStatus, git_snapshot, outside_writes};

use crate::config::Config;
use crate::exit::{Code, fail};
use crate::tools::build_renderer::seconds;
use crate::tools::repo_root;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use steps::{describe, run_step};

const TOOL: &str = "reload-plugin";

/// What `reload-plugin` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub id: String,
    pub repo: Option<PathBuf>,
    pub json: bool,
    /// Show the plan; run nothing, write nothing, call nothing.
    pub dry_run: bool,
    /// The bridge's base URL (over `SESSION_LOCK_BRIDGE_URL` and `reloadPlugin.bridgeUrl`).
    pub bridge: Option<String>,
    /// The app's user-data folder (over `reloadPlugin.userDataDir` and the platform default).
    pub user_data: Option<PathBuf>,
}

/// What `--json` prints.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub plugin: String,
    pub dry_run: bool,
    pub ok: bool,
    /// The step that stopped the run.
    pub failed_step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    pub steps: Vec<StepReport>,
    /// Repo files that changed between before typecheck and after emit, outside the plugin's
    /// folder (repo-relative, `/`).
    pub outside_writes: Vec<String>,
}

/// Prints progress: stdout in text mode, stderr under `--json` (stdout then holds the report).
struct Progress {
    json: bool,
}

impl Progress {
    fn line(&self, text: &str) {
        if self.json {
            let _ = writeln!(std::io::stderr(), "{TOOL}: {text}");
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        }
    }

    fn begin(&self, name: &str, what: &str) {
        self.line(&format!("[{name}] {what}"));
    }

    fn end(&self, step: &StepReport) {
        let took = seconds(Duration::from_millis(step.duration_ms));
        let text = match step.status {
            StepStatus::Ok => format!("[{}] ok in {took}: {}", step.name, step.detail),
            // The reason is the error line the run ends with: printed once, there.
            StepStatus::Failed => format!("[{}] FAILED after {took}", step.name),
            StepStatus::Refused => format!("[{}] REFUSED", step.name),
            StepStatus::Skipped | StepStatus::Planned => return,
        };
        self.line(&text);
    }
}

/// Runs `reload-plugin`.
pub fn run(opts: &Options) -> anyhow::Result<Code> {
    let root = repo_root(opts.repo.as_deref())?;
    let config = Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let env_bridge = std::env::var(BRIDGE_ENV).ok();
    let progress = Progress { json: opts.json };
    let mut report = Report {
        plugin: opts.id.clone(),
        dry_run: opts.dry_run,
        ok: false,
        failed_step: None,
        plan: None,
        steps: Vec::new(),
        outside_writes: Vec::new(),
    };
    let plan = match plan(opts, &root, &config.reload_plugin, env_bridge) {
        Ok(p) => p,
        Err(refusal) => {
            let status = if refusal.code == Code::Refused {
                StepStatus::Refused
            } else {
                StepStatus::Failed
            };
            let step = StepReport::new(Step::Check, status, refusal.message.clone());
            progress.end(&step);
            report.steps.push(step);
            skip_rest(&mut report);
            report.failed_step = Some(Step::Check.name().into());
            if opts.json {
                crate::cli::print_json(&report)?;
            }
            return Err(fail(refusal.code, refusal.message));
        }
    };
    let check_detail = if plan.bridge == plan::NO_BRIDGE {
        format!(
            "plugin '{}' is not protected; no bridge url ({})",
            plan.plugin, plan.bridge_from
        )
    } else {
        format!(
            "plugin '{}' is not protected; bridge {} (from {}) is loopback",
            plan.plugin, plan.bridge, plan.bridge_from
        )
    };
    if opts.dry_run {
        return dry_run(plan, check_detail, report, &progress);
    }
    let mut check = StepReport::new(Step::Check, StepStatus::Ok, check_detail);
    progress.end(&check);
    check.duration_ms = 0;
    report.steps.push(check);

    let before = git_snapshot(&plan.root);
    let mut after: Option<Result<Snapshot, String>> = None;
    let mut failure: Option<(Code, String)> = None;
    for action in Action::ALL {
        let name = Step::Act(action).name();
        if failure.is_some() {
            report.steps.push(StepReport::new(
                Step::Act(action),
                StepStatus::Skipped,
                "not run",
            ));
            continue;
        }
        progress.begin(name, &describe(Step::Act(action), &plan));
        let started = Instant::now();
        let (mut step, code) = run_step(action, &plan, opts.json);
        step.duration_ms = started.elapsed().as_millis() as u64;
        progress.end(&step);
        if action == Action::Emit || (step.status == StepStatus::Failed && after.is_none()) {
            after = Some(git_snapshot(&plan.root));
        }
        if step.status == StepStatus::Failed {
            let message = format!("step '{name}' failed: {}", step.detail);
            failure = Some((code, message));
            report.failed_step = Some(name.into());
        }
        report.steps.push(step);
    }

    let started = Instant::now();
    let mut changes = match (before, after) {
        (Ok(b), Some(Ok(a))) => {
            report.outside_writes = outside_writes(&b, &a, &plan.plugin_folder);
            let n = report.outside_writes.len();
            let detail = if n == 0 {
                format!("no file outside {}/ changed", plan.plugin_folder)
            } else {
                format!(
                    "{n} file(s) outside {}/ changed while typecheck and emit ran (other sessions' work may be among them): {}",
                    plan.plugin_folder,
                    report.outside_writes.join(", ")
                )
            };
            StepReport::new(Step::OutsideWrites, StepStatus::Ok, detail)
        }
        (Err(e), _) | (_, Some(Err(e))) => StepReport::new(
            Step::OutsideWrites,
            StepStatus::Skipped,
            format!("cannot compare: {e}"),
        ),
        (Ok(_), None) => StepReport::new(Step::OutsideWrites, StepStatus::Skipped, "not run"),
    };
    changes.duration_ms = started.elapsed().as_millis() as u64;
    if changes.status == StepStatus::Ok && !report.outside_writes.is_empty() {
        progress.line(&format!(
            "[outside-writes] {} file(s) outside {}/ changed while typecheck and emit ran (other sessions' work may be among them):",
            report.outside_writes.len(),
            plan.plugin_folder
        ));
        for path in &report.outside_writes {
            progress.line(&format!("  {path}"));
        }
    } else if changes.detail != "not run" {
        progress.line(&format!("[outside-writes] {}", changes.detail));
    }
    report.steps.push(changes);

    report.ok = failure.is_none();
    if opts.json {
        crate::cli::print_json(&report)?;
    }
    match failure {
        Some((code, message)) => Err(fail(code, message)),
        None => {
            if !opts.json {
                progress.line(&format!(
                    "{TOOL}: plugin '{}' reloaded from {}",
                    plan.plugin,
                    plan.source.display()
                ));
            }
            Ok(Code::Success)
        }
    }
}

fn skip_rest(report: &mut Report) {
    for step in &Step::ALL[report.steps.len()..] {
        report
            .steps
            .push(StepReport::new(*step, StepStatus::Skipped, "not run"));
    }
}

fn dry_run(
    plan: Plan,
    check_detail: String,
    mut report: Report,
    progress: &Progress,
) -> anyhow::Result<Code> {
    report.steps.push(StepReport::new(
        Step::Check,
        StepStatus::Ok,
        check_detail.clone(),
    ));
    progress.line(&format!(
        "{TOOL}: dry run for plugin '{}'; nothing runs",
        plan.plugin
    ));
    progress.line(&format!("[check] ok: {check_detail}"));
    for planned in &Step::ALL[1..] {
        let what = describe(*planned, &plan);
        progress.begin(planned.name(), &what);
        let mut step = StepReport::new(*planned, StepStatus::Planned, what);
        match planned {
            Step::Act(Action::Typecheck) => step.command = Some(plan.typecheck.clone()),
            Step::Act(Action::Emit) => step.command = Some(plan.emit.clone()),
            Step::Act(Action::Toggle1 | Action::Toggle2) => {
                step.url = Some(plan.toggle_url.clone())
            }
            Step::Act(Action::Broadcast) => step.url = Some(plan.broadcast_url.clone()),
            Step::Check | Step::OutsideWrites | Step::Act(Action::Copy) => {}
        }
        report.steps.push(step);
    }
    report.ok = true;
    if progress.json {
        report.plan = Some(plan);
        crate::cli::print_json(&report)?;
    }
    Ok(Code::Success)
}
