//! run-agent: run one Claude Code agent turn headless and get its answer back.
//!
//! [`run_agent`] takes [`RunAgentOptions`] and returns [`RunAgentResult`]
//! (`{ ok, tabId, sessionId, text, isError, costUsd?, error? }`); it blocks until the turn is
//! over. [`run_agent_with`] also streams normalized [`AgentEvent`]s and takes a cancel flag. The
//! `run-agent` binary is a thin shell around them (see docs/run-agent.md).
//!
//! One run: check the options → load the env profile (fail closed) → resolve the contract (scope
//! roots, workspace endpoint, the suite's `guard` and `run-agent`) → locate the CLI → spawn
//! `claude -p --output-format stream-json --verbose …` in `cwd`, in its own process group, the
//! prompt written on its stdin (never argv) → fold its stream → stop it at `timeoutMs` (SIGINT,
//! then SIGTERM, then SIGKILL) → the result. Nothing is spawned when a check fails.

pub mod contract; // the CLI's argv and environment, the two restricted contracts
pub mod locate; // where the CLI, guard and run-agent executables are
pub mod mcp_http; // one Streamable HTTP exchange with the workspace's editor
pub mod mcp_proxy; // the stdio MCP server of the workspace contract
pub mod options; // options, result, validation, failure kinds
pub mod process; // the child: process group, stdout lines, deadline, no leftovers
pub mod profiles; // env profiles: file, permissions, secrecy
pub mod runs; // the per-user registry of runs under way: list, interrupt by tab id
pub mod stream; // stream-json → answer and events
pub mod unity; // the workspace's `.mcp.json` → a loopback endpoint

pub use options::{Failure, Problem, PromptOrigin, RunAgentOptions, RunAgentResult};
pub use runs::{RunEntry, RunsError, interrupt, list};
pub use stream::{AgentEvent, EventKind};

use contract::Contract;
use options::{ContractKind, Plan};
use profiles::Secrets;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Runs one turn; blocks until it is over.
pub fn run_agent(opts: &RunAgentOptions) -> RunAgentResult {
    run_agent_with(opts, &mut |_| {}, &AtomicBool::new(false))
}

/// Runs one turn, calling `on_event` with each normalized event as it happens.
pub fn run_agent_with_events(
    opts: &RunAgentOptions,
    on_event: &mut dyn FnMut(&AgentEvent),
) -> RunAgentResult {
    run_agent_with(opts, on_event, &AtomicBool::new(false))
}

/// Runs one turn with events; setting `cancel` stops the CLI as a timeout would, and the run
/// ends with `error: "interrupted"`.
pub fn run_agent_with(
    opts: &RunAgentOptions,
    on_event: &mut dyn FnMut(&AgentEvent),
    cancel: &AtomicBool,
) -> RunAgentResult {
    let tab_id = options::tab_id(opts);
    let mut emitter = Emitter {
        tab_id: tab_id.clone(),
        notify: None,
        secrets: Secrets::default(),
        sink: on_event,
    };
    let base = RunAgentResult::new(tab_id.clone());
    let result = match prepare(opts, tab_id) {
        Ok(prepared) => {
            emitter.notify = prepared.plan.notify.clone();
            emitter.secrets = prepared.secrets.clone();
            execute(&prepared, &mut emitter, cancel, base)
        }
        Err(problem) => base.failed(problem),
    };
    let result = scrub_result(result, &emitter.secrets);
    emitter.emit(EventKind::Done {
        ok: result.ok,
        error: result.error.clone(),
    });
    result
}

/// Everything a run needs, checked before anything is spawned.
struct Prepared {
    plan: Plan,
    invocation: contract::Invocation,
    secrets: Secrets,
}

fn prepare(opts: &RunAgentOptions, tab_id: String) -> Result<Prepared, Problem> {
    let plan = Plan::from_options(opts, tab_id)?;
    let profile = match &plan.env_profile_id {
        Some(id) => Some(profiles::find(id).map_err(|e| Problem::new(e.failure(), e.to_string()))?),
        None => None,
    };
    let guard = || locate::suite_bin("guard", opts.guard_bin.as_deref(), locate::GUARD_BIN_ENV);
    let contract = match &plan.contract {
        ContractKind::None => Contract::None {
            servers: match &plan.attached_plugins {
                Some(names) => Some(contract::attached_servers(&plan.cwd, names)?),
                None => None,
            },
        },
        ContractKind::ReadOnly(roots) => Contract::ReadOnly {
            roots: roots.clone(),
            guard: guard()?,
        },
        ContractKind::WorkspaceUnityState => {
            let root = std::fs::canonicalize(&plan.cwd).map_err(|_| {
                Problem::new(
                    Failure::NotFound,
                    format!("cwd does not resolve: {}", plan.cwd.display()),
                )
            })?;
            let endpoint =
                unity::resolve(&root).map_err(|e| Problem::new(Failure::Refused, e.to_string()))?;
            Contract::Workspace {
                root,
                endpoint,
                guard: guard()?,
                run_agent: locate::suite_bin(
                    "run-agent",
                    opts.run_agent_bin.as_deref(),
                    locate::RUN_AGENT_BIN_ENV,
                )?,
            }
        }
    };
    if let Some(id) = &plan.resume
        && resumable(id) == Some(false)
    {
        return Err(Problem::new(
            Failure::SessionNotFound,
            format!("no session {id} to resume: no transcript of it in the CLI's projects"),
        ));
    }
    let claude = locate::claude_bin(opts.claude_bin.as_deref())?;
    let invocation = contract::build(
        &plan,
        &claude,
        &contract,
        profile.as_ref(),
        contract::running_as_root(),
    )?;
    Ok(Prepared {
        secrets: profile.map(|p| p.secrets()).unwrap_or_default(),
        plan,
        invocation,
    })
}

/// Whether the CLI has a transcript of session `id` (`<config>/projects/*/<id>.jsonl`); `None`
/// when that cannot be told (no config folder known, an unreadable one): the CLI decides then.
fn resumable(id: &str) -> Option<bool> {
    let projects = crate::sessions::claude::config_dir()?.join("projects");
    let file = format!("{id}.jsonl");
    match std::fs::read_dir(&projects) {
        Ok(dirs) => Some(dirs.flatten().any(|d| d.path().join(&file).is_file())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    }
}

/// The CLI's words for a session it cannot resume.
const NO_CONVERSATION: &str = "No conversation found";

struct Emitter<'a> {
    tab_id: String,
    notify: Option<String>,
    secrets: Secrets,
    sink: &'a mut dyn FnMut(&AgentEvent),
}

impl Emitter<'_> {
    fn emit(&mut self, kind: EventKind) {
        let mut event = AgentEvent {
            tab_id: self.tab_id.clone(),
            notify: self.notify.clone(),
            at: crate::time::now_ms(),
            kind,
        };
        if !self.secrets.is_empty()
            && let Ok(mut v) = serde_json::to_value(&event)
        {
            self.secrets.scrub_json(&mut v);
            match serde_json::from_value(v) {
                Ok(clean) => event = clean,
                // Never show an event that could not be cleaned.
                Err(_) => return,
            }
        }
        (self.sink)(&event);
    }
}

fn scrub_result(mut r: RunAgentResult, secrets: &Secrets) -> RunAgentResult {
    if !secrets.is_empty() {
        r.text = secrets.scrub(&r.text);
        r.error_detail = r.error_detail.map(|e| secrets.scrub(&e));
        r.session_id = r.session_id.map(|s| secrets.scrub(&s));
    }
    r
}

fn describe(status: Option<std::process::ExitStatus>) -> String {
    let Some(status) = status else {
        return "an unknown status".into();
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("signal {sig}");
        }
    }
    match status.code() {
        Some(c) => format!("status {c}"),
        None => "an unknown status".into(),
    }
}

/// The last non-empty line of the CLI's stderr, cut to a readable length.
fn last_line(stderr: &str) -> Option<String> {
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())?;
    Some(match line.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    })
}

fn execute(
    prepared: &Prepared,
    emitter: &mut Emitter<'_>,
    cancel: &AtomicBool,
    mut result: RunAgentResult,
) -> RunAgentResult {
    let plan = &prepared.plan;
    let program = prepared.invocation.program.display().to_string();
    let running = match process::Running::spawn(
        prepared.invocation.command(&plan.cwd),
        contract::stdin(plan),
    ) {
        Ok(r) => r.keep_background(plan.keep_background),
        Err(e) => {
            return result.failed(Problem::new(
                Failure::Spawn,
                format!("cannot start {program}: {e}"),
            ));
        }
    };
    // Without a registry entry the run still runs; only `interrupt <tabId>` cannot reach it.
    let me = std::process::id();
    let registration = runs::register(&runs::RunEntry {
        tab_id: plan.tab_id.clone(),
        pid: me,
        proc_start: crate::liveness::start_time(me),
        cli_pid: running.pid(),
        cwd: plan.cwd.display().to_string(),
        started_at: crate::time::now_ms(),
    })
    .ok();
    let stop_asked =
        || cancel.load(Ordering::Relaxed) || registration.as_ref().is_some_and(|r| r.interrupted());
    emitter.emit(EventKind::Started {
        pid: running.pid(),
        cli: program,
        contract: plan.contract.name().to_string(),
    });
    let mut fold = stream::Fold::new();
    let deadline = Instant::now() + plan.timeout;
    let ended = {
        let fold = &mut fold;
        let emitter = std::cell::RefCell::new(&mut *emitter);
        running.drive(
            deadline,
            &stop_asked,
            &mut |line| {
                for kind in fold.push_line(line) {
                    emitter.borrow_mut().emit(kind);
                }
            },
            &mut |why, signal| {
                let reason = match why {
                    process::Stop::Timeout => "timeout",
                    process::Stop::Cancelled => "interrupted",
                };
                emitter.borrow_mut().emit(EventKind::Stopping {
                    reason: reason.into(),
                    signal: signal.into(),
                });
            },
        )
    };
    result.session_id = fold.session_id().map(str::to_string);
    result.text = fold.text();
    let answer = fold.answer();
    let answer = answer.as_ref();
    result.cost_usd = answer.and_then(|a| a.cost_usd);
    result.is_error = answer.map(|a| a.is_error).unwrap_or(true);
    let exit_ok = ended.status.is_some_and(|s| s.success());
    let problem = match (ended.stop, answer) {
        (Some(process::Stop::Timeout), _) => Some(Problem::new(Failure::Timeout, "timeout")),
        (Some(process::Stop::Cancelled), _) => {
            Some(Problem::new(Failure::Interrupted, "interrupted"))
        }
        (None, Some(a)) if a.is_error && a.interrupted() => {
            Some(Problem::new(Failure::Interrupted, "interrupted"))
        }
        (None, Some(a)) if a.is_error && a.error_text().contains(NO_CONVERSATION) => {
            Some(Problem::new(Failure::SessionNotFound, a.error_text()))
        }
        (None, Some(a)) if a.is_error => Some(Problem::new(Failure::Api, a.error_text())),
        (None, Some(_)) if !exit_ok => Some(Problem::new(
            Failure::Cli,
            format!("claude exited with {}", describe(ended.status)),
        )),
        (None, Some(_)) => None,
        (None, None) if ended.stderr_tail.contains(NO_CONVERSATION) => Some(Problem::new(
            Failure::SessionNotFound,
            last_line(&ended.stderr_tail).unwrap_or_default(),
        )),
        (None, None) => {
            let why = last_line(&ended.stderr_tail)
                .map(|line| format!(": {line}"))
                .unwrap_or_default();
            Some(Problem::new(
                Failure::Cli,
                format!(
                    "claude exited with {} without an answer{why}",
                    describe(ended.status)
                ),
            ))
        }
    };
    match problem {
        Some(p) => result.failed(p),
        None => result,
    }
}

/// A consumer of events that can move to another thread.
pub type EventSink = Box<dyn FnMut(&AgentEvent) + Send>;

/// Where `--events` writes: `-` is stderr (stdout carries only the result), anything else a
/// file opened for appending.
pub fn event_writer(spec: &str) -> std::io::Result<EventSink> {
    let mut out: Box<dyn Write + Send> = if spec == "-" {
        Box::new(std::io::stderr())
    } else {
        Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(spec)?,
        )
    };
    Ok(Box::new(move |e: &AgentEvent| {
        if let Ok(line) = serde_json::to_string(e) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }))
}

/// A flag that turns true on SIGINT, SIGTERM or SIGHUP (for binaries; a library leaves signals
/// to its caller). The run then stops the CLI and ends `interrupted` instead of orphaning it.
pub fn cancel_on_signals() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// What `run-agent --version` and `run-agent doctor` report.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Doctor {
    pub version: String,
    pub claude: Option<String>,
    pub claude_version: Option<String>,
    pub claude_error: Option<String>,
    /// Where the CLI was looked for, in order, and what was there.
    pub claude_looked: Vec<locate::Looked>,
    pub guard: Option<String>,
    pub env_profiles: Option<String>,
    pub env_profiles_state: String,
}

impl Doctor {
    pub fn ok(&self) -> bool {
        self.claude_version.is_some()
    }

    pub fn render(&self) -> String {
        let mut s = format!("run-agent {}\n", self.version);
        match (&self.claude, &self.claude_version, &self.claude_error) {
            (Some(p), Some(v), _) => s.push_str(&format!("claude: {p} ({v})\n")),
            (Some(p), None, Some(e)) => s.push_str(&format!("claude: {p} (not working: {e})\n")),
            (_, _, e) => s.push_str(&format!(
                "claude: not found ({})\n",
                e.as_deref().unwrap_or("unknown")
            )),
        }
        s
    }

    pub fn render_full(&self) -> String {
        let mut s = self.render();
        s.push_str("claude looked for in:\n");
        for l in &self.claude_looked {
            let what = match (&l.path, l.found) {
                (Some(p), true) => format!("{p} (found)"),
                (Some(p), false) => format!("{p} (not there)"),
                (None, _) => "claude is not on it".into(),
            };
            s.push_str(&format!("  {}: {what}\n", l.place));
        }
        s.push_str(&format!(
            "guard: {}\n",
            self.guard.as_deref().unwrap_or("not found")
        ));
        s.push_str(&format!(
            "env profiles: {} ({})\n",
            self.env_profiles.as_deref().unwrap_or("no place"),
            self.env_profiles_state
        ));
        s
    }
}

/// Locates the CLI and asks its version; looks at guard and the profile file too.
pub fn doctor(claude_bin: Option<&str>) -> Doctor {
    let mut d = Doctor {
        version: env!("CARGO_PKG_VERSION").into(),
        claude: None,
        claude_version: None,
        claude_error: None,
        claude_looked: Vec::new(),
        guard: locate::suite_bin("guard", None, locate::GUARD_BIN_ENV)
            .ok()
            .map(|p| p.display().to_string()),
        env_profiles: None,
        env_profiles_state: String::new(),
    };
    let (found, looked) = locate::find_claude(claude_bin);
    d.claude_looked = looked;
    match found {
        Ok(p) => {
            d.claude = Some(p.display().to_string());
            match locate::version(&p) {
                Ok(v) => d.claude_version = Some(v),
                Err(e) => d.claude_error = Some(e),
            }
        }
        Err(e) => d.claude_error = Some(e.message),
    }
    match profiles::profiles_path() {
        Ok(p) => {
            d.env_profiles_state = match profiles::load(&p) {
                Ok(list) => format!("{} profiles", list.len()),
                Err(profiles::ProfileError::NoFile(_)) => "absent".into(),
                Err(e) => e.to_string(),
            };
            d.env_profiles = Some(p.display().to_string());
        }
        Err(e) => d.env_profiles_state = e.to_string(),
    }
    d
}
