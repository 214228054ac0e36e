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

use crate::config::{Config, ReloadPluginConfig};
use crate::exit::{Code, fail};
use crate::tools::build_renderer::seconds;
use crate::tools::{repo_root, shell};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOOL: &str = "reload-plugin";

/// The environment variable naming the bridge when `--bridge` is not given.
pub const BRIDGE_ENV: &str = "SESSION_LOCK_BRIDGE_URL";

/// How many lines of a failing command's output the report keeps.
const TAIL_LINES: usize = 20;

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

/// Why a bridge URL is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeUrlError {
    /// Not `http://…` (the bridge speaks plain HTTP on loopback).
    NotHttp {
        url: String,
    },
    Malformed {
        url: String,
        reason: String,
    },
    /// The host is not 127.0.0.0/8, ::1 or localhost.
    NotLoopback {
        url: String,
        host: String,
    },
}

impl std::fmt::Display for BridgeUrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeUrlError::NotHttp { url } => {
                write!(
                    f,
                    "bridge url '{url}' is not http:// (the bridge is plain http on loopback)"
                )
            }
            BridgeUrlError::Malformed { url, reason } => {
                write!(f, "bridge url '{url}' is malformed: {reason}")
            }
            BridgeUrlError::NotLoopback { url, host } => write!(
                f,
                "bridge url '{url}' is not loopback (host '{host}'); only 127.0.0.0/8, ::1 and localhost are allowed"
            ),
        }
    }
}

impl std::error::Error for BridgeUrlError {}

impl BridgeUrlError {
    /// Malformed input is a usage error; a well-formed URL pointing off the machine is refused.
    pub fn code(&self) -> Code {
        match self {
            BridgeUrlError::NotLoopback { .. } => Code::Refused,
            _ => Code::Usage,
        }
    }
}

/// Checks a bridge base URL and returns it without a trailing `/`.
pub fn check_bridge_url(url: &str) -> Result<String, BridgeUrlError> {
    let malformed = |reason: &str| BridgeUrlError::Malformed {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let trimmed = url.trim();
    let rest = match trimmed.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &trimmed[7..],
        _ => {
            return Err(BridgeUrlError::NotHttp {
                url: url.to_string(),
            });
        }
    };
    if rest.contains(['?', '#']) {
        return Err(malformed("a query or fragment is not allowed"));
    }
    if rest.chars().any(|c| c.is_whitespace() || c == '\\') {
        return Err(malformed("spaces and backslashes are not allowed"));
    }
    let (authority, _path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(malformed("credentials are not allowed"));
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']').ok_or_else(|| malformed("unclosed '['"))?;
        let after = &inner[end + 1..];
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| malformed("text after ']'"))?,
            ),
        };
        (&inner[..end], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(malformed("no host"));
    }
    if let Some(p) = port
        && p.parse::<u16>().map_or(true, |n| n == 0)
    {
        return Err(malformed(&format!("port '{p}' is not 1-65535")));
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => ip.is_loopback(),
            Ok(IpAddr::V6(ip)) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            Err(_) => false,
        };
    if !loopback {
        return Err(BridgeUrlError::NotLoopback {
            url: url.to_string(),
            host: host.to_string(),
        });
    }
    Ok(trimmed.trim_end_matches('/').to_string())
}

/// A plugin id is one folder name.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("plugin id is empty".into());
    }
    if id.starts_with('.') || id.starts_with('-') {
        return Err(format!("plugin id '{id}' must not start with '.' or '-'"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(format!(
            "plugin id '{id}' may hold only letters, digits, '.', '_', '-' and '@'"
        ));
    }
    Ok(())
}

/// Replaces `{id}` in every string of a JSON template.
pub fn fill(template: &Value, id: &str) -> Value {
    match template {
        Value::String(s) => Value::String(s.replace("{id}", id)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, id)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, id))).collect())
        }
        other => other.clone(),
    }
}

/// The app's user-data folder for `app_name` on this platform: `%APPDATA%/<app>` (Windows),
/// `~/Library/Application Support/<app>` (macOS), `$XDG_CONFIG_HOME/<app>` or
/// `~/.config/<app>` (elsewhere).
pub fn default_user_data(app_name: &str) -> Option<PathBuf> {
    if cfg!(windows) {
        return std::env::var_os("APPDATA")
            .filter(|v| !v.is_empty())
            .map(|d| PathBuf::from(d).join(app_name));
    }
    let home = crate::sessions::home_dir();
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Application Support").join(app_name));
    }
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join(app_name));
    }
    home.map(|h| h.join(".config").join(app_name))
}

/// A configured path: `{appName}` filled in, a leading `~/` is the home folder.
fn expand(path: &str, app_name: &str) -> PathBuf {
    let path = path.replace("{appName}", app_name);
    match (path.strip_prefix("~/"), crate::sessions::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// Everything the run will do, resolved before anything runs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub plugin: String,
    pub root: PathBuf,
    pub typecheck: String,
    pub emit: String,
    /// The plugin's folder, repo-relative with `/`.
    pub plugin_folder: String,
    pub source: PathBuf,
    pub target: PathBuf,
    pub bridge: String,
    /// Where the bridge URL came from: `--bridge`, the environment variable, or the config.
    pub bridge_from: String,
    pub toggle_url: String,
    pub toggle_body: Value,
    pub broadcast_url: String,
    pub broadcast_body: Value,
    #[serde(skip)]
    pub http_timeout: Duration,
}

/// Why the `check` step stopped the run.
#[derive(Debug)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

fn refuse(code: Code, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

/// Resolves the plan, refusing what the protocol forbids. Reads the config's values and checks
/// that the plugin's folder exists; runs and writes nothing.
pub fn plan(
    opts: &Options,
    root: &Path,
    cfg: &ReloadPluginConfig,
    env_bridge: Option<String>,
) -> Result<Plan, Refusal> {
    let id = opts.id.as_str();
    check_id(id).map_err(|m| refuse(Code::Usage, m))?;
    if cfg.protected.iter().any(|p| p.eq_ignore_ascii_case(id)) {
        return Err(refuse(
            Code::Refused,
            format!(
                "plugin '{id}' is protected: deactivating it ends every session running inside the app (this one too). Its backend cannot be reloaded during a round; commit the change and check it after the end-of-round restart"
            ),
        ));
    }
    let (bridge_raw, bridge_from) = if let Some(b) = opts.bridge.clone() {
        (b, "--bridge".to_string())
    } else if let Some(b) = env_bridge.filter(|b| !b.trim().is_empty()) {
        (b, BRIDGE_ENV.to_string())
    } else if let Some(b) = cfg.bridge_url.clone() {
        (b, "config reloadPlugin.bridgeUrl".to_string())
    } else {
        return Err(refuse(
            Code::Usage,
            format!(
                "no bridge url: pass --bridge http://127.0.0.1:PORT, set {BRIDGE_ENV}, or set reloadPlugin.bridgeUrl in session-lock/config.json"
            ),
        ));
    };
    let bridge = check_bridge_url(&bridge_raw).map_err(|e| refuse(e.code(), e.to_string()))?;

    let plugin_folder = cfg
        .plugin_folder
        .replace("{id}", id)
        .replace('\\', "/")
        .trim_end_matches('/')
        .to_string();
    if Path::new(&plugin_folder).is_absolute() || plugin_folder.split('/').any(|part| part == "..")
    {
        return Err(refuse(
            Code::Usage,
            format!("reloadPlugin.pluginFolder '{plugin_folder}' must stay inside the repo"),
        ));
    }
    let folder = root.join(&plugin_folder);
    if !folder.is_dir() {
        return Err(refuse(
            Code::NotFound,
            format!("no plugin '{id}': {plugin_folder}/ does not exist"),
        ));
    }
    let source = if cfg.copy_from.is_empty() {
        folder.clone()
    } else {
        folder.join(cfg.copy_from.replace("{id}", id))
    };
    if !source.is_dir() {
        return Err(refuse(
            Code::NotFound,
            format!(
                "plugin '{id}' has no {} folder to copy",
                source.strip_prefix(root).unwrap_or(&source).display()
            ),
        ));
    }
    let user_data = match (&opts.user_data, &cfg.user_data_dir) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => expand(dir, &cfg.app_name),
        (None, None) => default_user_data(&cfg.app_name).ok_or_else(|| {
            refuse(
                Code::Usage,
                "cannot find the app's user-data folder (no APPDATA or HOME); pass --user-data DIR",
            )
        })?,
    };
    let target = user_data.join(cfg.copy_to.replace("{id}", id));
    let channel = cfg.broadcast_channel.replace("{id}", id);
    Ok(Plan {
        plugin: id.to_string(),
        root: root.to_path_buf(),
        typecheck: cfg.typecheck.replace("{id}", id),
        emit: cfg.emit.replace("{id}", id),
        plugin_folder,
        source,
        target,
        toggle_url: format!("{bridge}{}", cfg.toggle_path),
        toggle_body: fill(&cfg.toggle_body, id),
        broadcast_url: format!("{bridge}{}", cfg.broadcast_path),
        broadcast_body: serde_json::json!({
            "channel": channel,
            "payload": fill(&cfg.broadcast_payload, id),
        }),
        bridge,
        bridge_from,
        http_timeout: Duration::from_secs(cfg.http_timeout_seconds.max(1)),
    })
}

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

/// One step of the report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
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

impl Step {
    fn new(name: &'static str, status: StepStatus, detail: impl Into<String>) -> Step {
        Step {
            name,
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

/// The steps, in order.
pub const STEPS: [&str; 8] = [
    "check",
    "typecheck",
    "emit",
    "copy",
    "toggle-1",
    "toggle-2",
    "broadcast",
    "outside-writes",
];

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
    pub steps: Vec<Step>,
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

    fn end(&self, step: &Step) {
        let took = seconds(Duration::from_millis(step.duration_ms));
        let text = match step.status {
            StepStatus::Ok => format!("[{}] ok in {took}: {}", step.name, step.detail),
            StepStatus::Failed => format!("[{}] FAILED after {took}: {}", step.name, step.detail),
            StepStatus::Refused => format!("[{}] REFUSED: {}", step.name, step.detail),
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
            let step = Step::new("check", status, refusal.message.clone());
            progress.end(&step);
            report.steps.push(step);
            skip_rest(&mut report);
            report.failed_step = Some("check".into());
            if opts.json {
                crate::cli::print_json(&report)?;
            }
            return Err(fail(refusal.code, refusal.message));
        }
    };
    let check_detail = format!(
        "plugin '{}' is not protected; bridge {} (from {}) is loopback",
        plan.plugin, plan.bridge, plan.bridge_from
    );
    if opts.dry_run {
        return dry_run(plan, check_detail, report, &progress);
    }
    let mut check = Step::new("check", StepStatus::Ok, check_detail);
    progress.end(&check);
    check.duration_ms = 0;
    report.steps.push(check);

    let before = git_snapshot(&plan.root);
    let mut after: Option<Result<Snapshot, String>> = None;
    let mut failure: Option<(Code, String)> = None;
    for name in &STEPS[1..STEPS.len() - 1] {
        if failure.is_some() {
            report
                .steps
                .push(Step::new(name, StepStatus::Skipped, "not run"));
            continue;
        }
        progress.begin(name, &describe(name, &plan));
        let started = Instant::now();
        let (mut step, code) = run_step(name, &plan, opts.json);
        step.duration_ms = started.elapsed().as_millis() as u64;
        progress.end(&step);
        if *name == "emit" || (step.status == StepStatus::Failed && after.is_none()) {
            after = Some(git_snapshot(&plan.root));
        }
        if step.status == StepStatus::Failed {
            let message = format!("step '{name}' failed: {}", step.detail);
            failure = Some((code, message));
            report.failed_step = Some((*name).into());
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
            Step::new("outside-writes", StepStatus::Ok, detail)
        }
        (Err(e), _) | (_, Some(Err(e))) => Step::new(
            "outside-writes",
            StepStatus::Skipped,
            format!("cannot compare: {e}"),
        ),
        (Ok(_), None) => Step::new("outside-writes", StepStatus::Skipped, "not run"),
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
    for name in &STEPS[report.steps.len()..] {
        report
            .steps
            .push(Step::new(name, StepStatus::Skipped, "not run"));
    }
}

/// What a step does, one line (the dry run's plan and the real run's announcement).
fn describe(name: &str, plan: &Plan) -> String {
    match name {
        "typecheck" => format!("run `{}` in {}", plan.typecheck, plan.root.display()),
        "emit" => format!("run `{}` in {}", plan.emit, plan.root.display()),
        "copy" => format!(
            "copy {} -> {}",
            plan.source.display(),
            plan.target.display()
        ),
        "toggle-1" | "toggle-2" => format!("POST {} {}", plan.toggle_url, plan.toggle_body),
        "broadcast" => format!("POST {} {}", plan.broadcast_url, plan.broadcast_body),
        "outside-writes" => format!(
            "compare `git status --porcelain` before typecheck and after emit; list files changed outside {}/",
            plan.plugin_folder
        ),
        _ => String::new(),
    }
}

fn dry_run(
    plan: Plan,
    check_detail: String,
    mut report: Report,
    progress: &Progress,
) -> anyhow::Result<Code> {
    report
        .steps
        .push(Step::new("check", StepStatus::Ok, check_detail.clone()));
    progress.line(&format!(
        "{TOOL}: dry run for plugin '{}'; nothing runs",
        plan.plugin
    ));
    progress.line(&format!("[check] ok: {check_detail}"));
    for name in &STEPS[1..] {
        let what = describe(name, &plan);
        progress.begin(name, &what);
        let mut step = Step::new(name, StepStatus::Planned, what);
        match *name {
            "typecheck" => step.command = Some(plan.typecheck.clone()),
            "emit" => step.command = Some(plan.emit.clone()),
            "toggle-1" | "toggle-2" => step.url = Some(plan.toggle_url.clone()),
            "broadcast" => step.url = Some(plan.broadcast_url.clone()),
            _ => {}
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

/// Runs one step; a failed step comes back with the exit code it stands for.
fn run_step(name: &'static str, plan: &Plan, json: bool) -> (Step, Code) {
    match name {
        "typecheck" | "emit" => {
            let line = if name == "typecheck" {
                &plan.typecheck
            } else {
                &plan.emit
            };
            command_step(name, line, &plan.root, json)
        }
        "copy" => match copy_tree(&plan.source, &plan.target) {
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
                (Step::new(name, StepStatus::Ok, detail), Code::Success)
            }
            Err(e) => (Step::new(name, StepStatus::Failed, e), Code::Failure),
        },
        "toggle-1" | "toggle-2" => {
            let (mut step, code) = post_step(name, &plan.toggle_url, &plan.toggle_body, plan);
            if step.status == StepStatus::Failed && name == "toggle-2" {
                step.detail.push_str(&format!(
                    "; the plugin may be left disabled: toggle '{}' back on in the app",
                    plan.plugin
                ));
            }
            (step, code)
        }
        "broadcast" => post_step(name, &plan.broadcast_url, &plan.broadcast_body, plan),
        _ => (
            Step::new(name, StepStatus::Failed, "unknown step"),
            Code::Failure,
        ),
    }
}

fn command_step(name: &'static str, line: &str, root: &Path, json: bool) -> (Step, Code) {
    let result = run_teed(shell(line), root, json);
    let mut step = Step::new(name, StepStatus::Ok, format!("`{line}` exited 0"));
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
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub files: usize,
    pub bytes: u64,
    /// Files in the target that the source does not have (left in place).
    pub extra: usize,
}

/// Copies the files of `from` into `to`, creating folders; files only in `to` stay.
pub fn copy_tree(from: &Path, to: &Path) -> Result<Copied, String> {
    let mut copied = Copied::default();
    let mut seen = BTreeSet::new();
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    for entry in walkdir::WalkDir::new(from).min_depth(1) {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let rel = entry
            .path()
            .strip_prefix(from)
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        let dest = to.join(rel);
        let is_dir =
            entry.file_type().is_dir() || (entry.file_type().is_symlink() && entry.path().is_dir());
        if is_dir {
            std::fs::create_dir_all(&dest)
                .map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
            continue;
        }
        let n = std::fs::copy(entry.path(), &dest).map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                entry.path().display(),
                dest.display()
            )
        })?;
        copied.files += 1;
        // What landed, read back: wine's CopyFileEx reports 0 bytes for a copy it made.
        copied.bytes += std::fs::metadata(&dest).map_or(n, |m| m.len());
        seen.insert(rel.to_path_buf());
    }
    for entry in walkdir::WalkDir::new(to).min_depth(1).into_iter().flatten() {
        if entry.file_type().is_file()
            && let Ok(rel) = entry.path().strip_prefix(to)
            && !seen.contains(rel)
        {
            copied.extra += 1;
        }
    }
    Ok(copied)
}

fn post_step(name: &'static str, url: &str, body: &Value, plan: &Plan) -> (Step, Code) {
    let mut step = Step::new(name, StepStatus::Ok, String::new());
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

/// Every path `git status --porcelain` lists, with a hash of its content, so a file that was
/// already modified and is rewritten again still counts as changed.
pub fn git_snapshot(root: &Path) -> Result<Snapshot, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git status failed: {}",
            one_line(&String::from_utf8_lossy(&out.stderr), 200)
        ));
    }
    let mut snap = Snapshot::new();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split('\0');
    while let Some(entry) = fields.next() {
        if entry.len() < 4 {
            continue;
        }
        let (xy, path) = (&entry[..2], &entry[3..]);
        if xy.starts_with(['R', 'C']) {
            fields.next(); // the original path of a rename or copy
        }
        let hash = std::fs::read(root.join(path)).ok().map(|bytes| {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            bytes.hash(&mut h);
            h.finish()
        });
        snap.insert(path.to_string(), (xy.to_string(), hash));
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
    fn loopback_urls_pass_others_are_refused() {
        for ok in [
            "http://127.0.0.1:3917",
            "http://127.5.6.7:80/",
            "http://localhost:1/api",
            "HTTP://LocalHost",
            "http://[::1]:3917",
            "http://[::ffff:127.0.0.1]:9",
        ] {
            assert!(check_bridge_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_bridge_url("http://127.0.0.1:3917/").unwrap(),
            "http://127.0.0.1:3917"
        );
        for (bad, code) in [
            ("http://10.0.0.5:3917", Code::Refused),
            ("http://example.com", Code::Refused),
            ("http://[2001:db8::1]:80", Code::Refused),
            ("http://0.0.0.0:80", Code::Refused),
            ("http://127.0.0.1.example.com", Code::Refused),
            ("https://127.0.0.1:3917", Code::Usage),
            ("ftp://127.0.0.1", Code::Usage),
            ("127.0.0.1:3917", Code::Usage),
            ("http://127.0.0.1@example.com", Code::Usage),
            ("http://127.0.0.1:99999", Code::Usage),
            ("http://127.0.0.1:3917?x=1", Code::Usage),
            ("http://:80", Code::Usage),
        ] {
            let e = check_bridge_url(bad).unwrap_err();
            assert_eq!(e.code(), code, "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn ids_are_one_folder_name() {
        assert!(check_id("notes").is_ok());
        assert!(check_id("my-plugin_2.0").is_ok());
        for bad in ["", "..", "../x", "a/b", "a\\b", "-rf", ".hidden", "a b"] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn templates_fill_the_id_everywhere() {
        let t = serde_json::json!({"id": "{id}", "n": 1, "list": ["x-{id}", true]});
        assert_eq!(
            fill(&t, "notes"),
            serde_json::json!({"id": "notes", "n": 1, "list": ["x-notes", true]})
        );
    }

    fn opts(id: &str) -> Options {
        Options {
            id: id.into(),
            bridge: Some("http://127.0.0.1:9".into()),
            user_data: Some(PathBuf::from("/ud")),
            ..Options::default()
        }
    }

    #[test]
    fn plan_resolves_paths_urls_and_bodies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("plugins-library/notes/main")).unwrap();
        let cfg = ReloadPluginConfig::default();
        let p = plan(&opts("notes"), dir.path(), &cfg, None).unwrap();
        assert_eq!(p.plugin_folder, "plugins-library/notes");
        assert_eq!(p.source, dir.path().join("plugins-library/notes/main"));
        assert_eq!(p.target, PathBuf::from("/ud/plugins/notes/main"));
        assert_eq!(p.toggle_url, "http://127.0.0.1:9/plugins/toggle");
        assert_eq!(p.toggle_body, serde_json::json!({"id": "notes"}));
        assert_eq!(p.broadcast_url, "http://127.0.0.1:9/broadcast");
        assert_eq!(p.broadcast_body["channel"], "plugin:notes:reload");
        assert_eq!(p.bridge_from, "--bridge");

        let e = plan(&opts("ai-chat"), dir.path(), &cfg, None).unwrap_err();
        assert_eq!(e.code, Code::Refused);
        assert!(e.message.contains("ends every session"), "{}", e.message);
        let e = plan(&opts("missing"), dir.path(), &cfg, None).unwrap_err();
        assert_eq!(e.code, Code::NotFound);

        let mut no_bridge = opts("notes");
        no_bridge.bridge = None;
        assert_eq!(
            plan(&no_bridge, dir.path(), &cfg, None).unwrap_err().code,
            Code::Usage
        );
        let p = plan(
            &no_bridge,
            dir.path(),
            &cfg,
            Some("http://localhost:7".into()),
        )
        .unwrap();
        assert_eq!(p.bridge_from, BRIDGE_ENV);
        let e = plan(
            &no_bridge,
            dir.path(),
            &cfg,
            Some("http://192.168.1.2:7".into()),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::Refused);
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

    #[test]
    fn copy_overwrites_and_leaves_extra_files() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("src");
        let to = dir.path().join("dst");
        std::fs::create_dir_all(from.join("lib")).unwrap();
        std::fs::write(from.join("index.js"), "new").unwrap();
        std::fs::write(from.join("lib/util.js"), "u").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("index.js"), "old").unwrap();
        std::fs::write(to.join("stale.js"), "s").unwrap();
        let c = copy_tree(&from, &to).unwrap();
        assert_eq!(
            c,
            Copied {
                files: 2,
                bytes: 4,
                extra: 1
            }
        );
        assert_eq!(std::fs::read_to_string(to.join("index.js")).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(to.join("lib/util.js")).unwrap(),
            "u"
        );
    }
}
