//! What a caller asks for ([`RunAgentOptions`]), what it gets back ([`RunAgentResult`]), and the
//! checks that turn the one into a [`Plan`] before anything is spawned.

use crate::exit::Code;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The model when none is given.
pub const DEFAULT_MODEL: &str = "sonnet";
/// The permission mode when none is given: nobody is there to approve a tool call.
pub const DEFAULT_MODE: &str = "bypassPermissions";
/// The plugin id that names a run when none is given.
pub const DEFAULT_PLUGIN_ID: &str = "external";
/// The hard limit of one run when none is given: 15 minutes.
pub const DEFAULT_TIMEOUT_MS: u64 = 15 * 60 * 1000;
/// The longest `timeoutMs` accepted: one day.
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// One agent turn to run. camelCase in JSON; every field but `cwd` and `prompt` is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RunAgentOptions {
    /// The working directory the agent runs in (required; must exist).
    pub cwd: Option<String>,
    /// The user turn (required; not blank).
    pub prompt: Option<String>,
    /// Names the run `run:<pluginId>:<n>` when `tabId` is not given (default `external`).
    pub plugin_id: Option<String>,
    /// Resume this session (`--resume`) instead of starting a new one. Ignored by contracts.
    pub session_id: Option<String>,
    /// Model alias or id (default `sonnet`).
    pub model: Option<String>,
    /// Appended to the default system prompt (`--append-system-prompt`).
    pub system_prompt: Option<String>,
    /// Permission mode (default `bypassPermissions`).
    pub mode: Option<String>,
    /// Names of MCP servers in `<cwd>/.mcp.json` this run gets; when given, no other MCP server
    /// loads. Ignored by contracts.
    pub attached_plugins: Option<Vec<String>>,
    /// The run's id as the caller chose it (default `run:<pluginId>:<n>`).
    pub tab_id: Option<String>,
    /// Hard limit in milliseconds (default 15 minutes).
    pub timeout_ms: Option<u64>,
    /// Built-in tool allowlist, passed through (`--tools`). Ignored by contracts.
    pub tools: Option<Vec<String>>,
    /// Tool blocklist, passed through (`--disallowedTools`); contracts add theirs.
    pub disallowed_tools: Option<Vec<String>>,
    /// Non-empty: the read-only review contract with these roots.
    pub read_only_scope_roots: Option<Vec<String>>,
    /// True: the workspace single-tool contract (wins over `readOnlyScopeRoots`).
    pub workspace_unity_state: Option<bool>,
    /// Run with this env profile (endpoint + credential); an unknown id fails the run.
    pub env_profile_id: Option<String>,
    /// Events also carry `notify: "plugin:<id>:event"`.
    pub notify_plugin_id: Option<String>,
    /// True: processes the turn started in the background (servers) keep running after it; by
    /// default nothing the turn started outlives it.
    pub keep_background: Option<bool>,
    /// The Claude Code executable (else `SESSION_LOCK_CLAUDE_BIN`, else `claude` on PATH).
    pub claude_bin: Option<String>,
    /// The `guard` executable for contract hooks (else `SESSION_LOCK_GUARD_BIN`, else next to
    /// the running executable).
    pub guard_bin: Option<String>,
    /// The `run-agent` executable serving the MCP proxy (else `SESSION_LOCK_RUN_AGENT_BIN`, else
    /// next to the running executable).
    pub run_agent_bin: Option<String>,
    /// The prompt is a message from another session: it goes on stdin as one stream-json user
    /// message (`--input-format stream-json`) carrying this `origin`, so the client applies its
    /// peer-message policy with the class declared. A bypass-mode client holds a peer prompt
    /// that declares no class, and a plain stdin prompt that looks like a peer's is one.
    pub prompt_origin: Option<PromptOrigin>,
}

/// Who a prompt comes from when it is another session's message (see
/// [`RunAgentOptions::prompt_origin`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptOrigin {
    /// The sender's address as the client writes it (`uds:<socket path>`).
    pub from: String,
    /// The sender's permission class: `bypass` or `prompting`.
    pub from_mode: String,
}

impl PromptOrigin {
    /// The origin of a message from `from` in permission class `from_mode`, when the client
    /// takes that address (see [`origin_address`]).
    pub fn new(from: &str, from_mode: &str) -> Option<PromptOrigin> {
        origin_address(from).then(|| PromptOrigin {
            from: from.to_string(),
            from_mode: from_mode.to_string(),
        })
    }
}

/// The addresses the client takes in an origin (any other it reads as `unknown`, and then
/// ignores the declared class): `uds:`, `bridge:` or `did:` and up to 200 of `A-Za-z0-9%:_/.\-`.
pub fn origin_address(a: &str) -> bool {
    let rest = ["uds:", "bridge:", "did:"]
        .iter()
        .find_map(|p| a.strip_prefix(p));
    rest.is_some_and(|r| {
        (1..=200).contains(&r.chars().count())
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || "%:_/.\\-".contains(c))
    })
}

fn prompt_origin(o: &PromptOrigin) -> Result<PromptOrigin, Problem> {
    if !origin_address(&o.from) {
        return Err(usage(format!(
            "promptOrigin.from '{}' is not an address the client takes (uds:<path>)",
            o.from
        )));
    }
    if o.from_mode != "bypass" && o.from_mode != "prompting" {
        return Err(usage(format!(
            "promptOrigin.fromMode '{}' is neither bypass nor prompting",
            o.from_mode
        )));
    }
    Ok(o.clone())
}

/// Options from JSON text: exactly one object (an array or any other value is refused, though
/// serde would read an array positionally), unknown fields refused, errors naming the field.
pub fn from_json(text: &str) -> Result<RunAgentOptions, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if !value.is_object() {
        let kind = match value {
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(format!(
            "expected one JSON object of RunAgentOptions, got {kind}"
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}

/// What went wrong, as far as the exit code cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Bad options: missing cwd or prompt, blank prompt, a malformed value.
    Usage,
    /// Something named does not exist: the CLI, the cwd, an env profile, a scope root.
    NotFound,
    /// The session to resume does not exist (or its id is not a session id).
    SessionNotFound,
    /// A safety rule refused the run: a profile file others can read, a workspace `.mcp.json`
    /// that does not pass.
    Refused,
    /// The CLI could not be started.
    Spawn,
    /// The CLI answered with an error (`is_error`), e.g. an API error.
    Api,
    /// The CLI failed without an answer or exited non-zero.
    Cli,
    /// The run hit `timeoutMs`.
    Timeout,
    /// The run was interrupted (a signal to run-agent, or to the CLI).
    Interrupted,
}

impl Failure {
    /// The suite's exit code for this failure.
    pub fn code(self) -> Code {
        match self {
            Failure::Usage => Code::Usage,
            Failure::NotFound | Failure::SessionNotFound => Code::NotFound,
            Failure::Refused => Code::Refused,
            Failure::Timeout => Code::Timeout,
            Failure::Spawn | Failure::Api | Failure::Cli | Failure::Interrupted => Code::Failure,
        }
    }
}

impl Failure {
    /// The stable code a result's `error` holds.
    pub fn name(self) -> &'static str {
        match self {
            Failure::Usage => "usage",
            Failure::NotFound => "not_found",
            Failure::SessionNotFound => "session_not_found",
            Failure::Refused => "refused",
            Failure::Spawn => "spawn_failed",
            Failure::Api => "api_error",
            Failure::Cli => "cli_failed",
            Failure::Timeout => "timeout",
            Failure::Interrupted => "interrupted",
        }
    }
}

/// A reason the run failed, with its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub failure: Failure,
    pub message: String,
}

impl Problem {
    pub fn new(failure: Failure, message: impl Into<String>) -> Problem {
        Problem {
            failure,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

/// The answer: `{ ok, tabId, sessionId, text, isError, costUsd?, error?, errorDetail? }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentResult {
    pub ok: bool,
    pub tab_id: String,
    /// The session the CLI ran (resumable); null when it never started one.
    pub session_id: Option<String>,
    /// The model's text of the prompt's turn: its main-level text blocks, joined by a blank
    /// line. Never an error message, never another turn's text.
    pub text: String,
    /// True whenever the run failed (`ok` false), and when the answer says `is_error`.
    pub is_error: bool,
    /// What the prompt's turn cost, when the CLI reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// A stable code when the run failed: `usage`, `not_found`, `session_not_found`, `refused`,
    /// `spawn_failed`, `api_error`, `cli_failed`, `timeout`, `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The failure in words, one line (the CLI's own for an API error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<String>,
    /// The kind of failure (not serialized; the binary's exit code says it).
    #[serde(skip)]
    pub failure: Option<Failure>,
}

impl RunAgentResult {
    /// A result that has not failed yet.
    pub fn new(tab_id: impl Into<String>) -> RunAgentResult {
        RunAgentResult {
            ok: true,
            tab_id: tab_id.into(),
            session_id: None,
            text: String::new(),
            is_error: false,
            cost_usd: None,
            error: None,
            error_detail: None,
            failure: None,
        }
    }

    /// This result, failed with `problem`.
    pub fn failed(mut self, problem: Problem) -> RunAgentResult {
        self.ok = false;
        self.is_error = true;
        self.error = Some(problem.failure.name().to_string());
        self.error_detail = Some(problem.message);
        self.failure = Some(problem.failure);
        self
    }

    /// The exit code of the `run-agent` binary for this result.
    pub fn exit_code(&self) -> Code {
        match (self.ok, self.failure) {
            (true, _) => Code::Success,
            (false, Some(f)) => f.code(),
            (false, None) => Code::Failure,
        }
    }
}

/// Which restriction a run is under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContractKind {
    /// None: the CLI's own settings, tools and MCP servers.
    None,
    /// Read-only review: Read/Grep/Glob inside these (resolved) roots, no MCP.
    ReadOnly(Vec<PathBuf>),
    /// Workspace single-tool: Read/Grep/Glob inside the cwd plus the editor-state tool.
    WorkspaceUnityState,
}

impl ContractKind {
    pub fn name(&self) -> &'static str {
        match self {
            ContractKind::None => "none",
            ContractKind::ReadOnly(_) => "readOnlyScope",
            ContractKind::WorkspaceUnityState => "workspaceUnityState",
        }
    }
}

/// Checked options with their defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub tab_id: String,
    /// Absolute; exists and is a directory.
    pub cwd: PathBuf,
    pub prompt: String,
    pub model: String,
    pub mode: String,
    pub system_prompt: Option<String>,
    /// `None` under a contract, whatever was given.
    pub resume: Option<String>,
    pub timeout: Duration,
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    pub attached_plugins: Option<Vec<String>>,
    pub contract: ContractKind,
    pub env_profile_id: Option<String>,
    pub notify: Option<String>,
    pub keep_background: bool,
    /// The prompt goes as a peer's stream-json message (see [`RunAgentOptions::prompt_origin`]).
    pub origin: Option<PromptOrigin>,
}

static LAST_RUN: AtomicU64 = AtomicU64::new(0);

/// The `<n>` of a generated tab id: milliseconds since the epoch, bumped so that two runs of one
/// process never share it.
fn next_run_number() -> u64 {
    let now = crate::time::now_ms();
    let mut last = LAST_RUN.load(Ordering::Relaxed);
    loop {
        let n = now.max(last + 1);
        match LAST_RUN.compare_exchange_weak(last, n, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return n,
            Err(seen) => last = seen,
        }
    }
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// The run's tab id: the caller's, else `run:<pluginId>:<n>`.
pub fn tab_id(opts: &RunAgentOptions) -> String {
    if let Some(t) = given(&opts.tab_id) {
        return t.to_string();
    }
    let plugin = given(&opts.plugin_id).unwrap_or(DEFAULT_PLUGIN_ID);
    format!("run:{plugin}:{}", next_run_number())
}

fn usage(message: impl Into<String>) -> Problem {
    Problem::new(Failure::Usage, message)
}

/// A value that goes into the CLI's argv as an option value: not blank, no leading `-`, no
/// control characters.
fn flag_value(what: &str, v: &str) -> Result<String, Problem> {
    let ok = !v.trim().is_empty() && !v.starts_with('-') && !v.chars().any(char::is_control);
    if ok {
        Ok(v.to_string())
    } else {
        Err(usage(format!("{what} '{v}' is not a usable value")))
    }
}

fn list(what: &str, items: &[String]) -> Result<Vec<String>, Problem> {
    items
        .iter()
        .map(|i| flag_value(what, i.trim()))
        .collect::<Result<Vec<_>, _>>()
}

impl Plan {
    /// Checks `opts` (the cwd must exist; nothing else on disk is read here).
    pub fn from_options(opts: &RunAgentOptions, tab_id: String) -> Result<Plan, Problem> {
        let cwd_raw = given(&opts.cwd).ok_or_else(|| usage("cwd is required"))?;
        let prompt = opts
            .prompt
            .clone()
            .ok_or_else(|| usage("prompt is required"))?;
        if prompt.trim().is_empty() {
            return Err(usage("prompt is empty"));
        }
        if prompt.contains('\0') {
            return Err(usage("prompt holds a NUL character"));
        }
        let cwd = std::path::absolute(cwd_raw)
            .map_err(|_| usage(format!("cwd '{cwd_raw}' is not a usable path")))?;
        if !cwd.is_dir() {
            return Err(Problem::new(
                Failure::NotFound,
                format!(
                    "cwd does not exist or is not a directory: {}",
                    cwd.display()
                ),
            ));
        }
        let model = flag_value("model", given(&opts.model).unwrap_or(DEFAULT_MODEL))?;
        let mode = given(&opts.mode).unwrap_or(DEFAULT_MODE);
        if !mode.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(usage(format!("mode '{mode}' is not a permission mode")));
        }
        let timeout_ms = opts.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            return Err(usage(format!(
                "timeoutMs {timeout_ms} is out of range (1..={MAX_TIMEOUT_MS})"
            )));
        }
        let system_prompt = opts.system_prompt.clone().filter(|s| !s.trim().is_empty());
        if system_prompt.as_deref().is_some_and(|s| s.contains('\0')) {
            return Err(usage("systemPrompt holds a NUL character"));
        }
        let contract = if opts.workspace_unity_state == Some(true) {
            ContractKind::WorkspaceUnityState
        } else {
            match opts.read_only_scope_roots.as_deref() {
                Some(roots) if !roots.is_empty() => ContractKind::ReadOnly(scope_roots(roots)?),
                _ => ContractKind::None,
            }
        };
        let resume = match (&contract, given(&opts.session_id)) {
            (ContractKind::None, Some(id)) => {
                if !is_uuid(id) {
                    return Err(Problem::new(
                        Failure::SessionNotFound,
                        format!("sessionId '{id}' is not a session id (a UUID)"),
                    ));
                }
                Some(id.to_ascii_lowercase())
            }
            _ => None,
        };
        let tools = match &opts.tools {
            // An empty list is meaningful: no built-in tool at all (`--tools ""`).
            Some(t) => Some(list("tool", t)?),
            None => None,
        };
        let disallowed_tools = list(
            "disallowed tool",
            opts.disallowed_tools.as_deref().unwrap_or(&[]),
        )?;
        let attached_plugins = match &opts.attached_plugins {
            Some(a) => Some(list("attached plugin", a)?),
            None => None,
        };
        let env_profile_id = match opts.env_profile_id.as_deref() {
            None | Some("") => None,
            Some(id) if id.trim().is_empty() => {
                return Err(usage("envProfileId is blank"));
            }
            Some(id) => Some(id.trim().to_string()),
        };
        let notify = given(&opts.notify_plugin_id).map(|id| format!("plugin:{id}:event"));
        let origin = opts.prompt_origin.as_ref().map(prompt_origin).transpose()?;
        Ok(Plan {
            tab_id,
            cwd,
            prompt,
            model,
            mode: mode.to_string(),
            system_prompt,
            resume,
            timeout: Duration::from_millis(timeout_ms),
            tools,
            disallowed_tools,
            attached_plugins,
            contract,
            env_profile_id,
            notify,
            keep_background: opts.keep_background == Some(true),
            origin,
        })
    }
}

/// True for `8-4-4-4-12` hex digits: the form of the CLI's session ids.
pub fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The read-only roots, each absolute and resolved through symlinks.
fn scope_roots(roots: &[String]) -> Result<Vec<PathBuf>, Problem> {
    roots
        .iter()
        .map(|r| {
            let p = std::path::Path::new(r);
            if !p.is_absolute() {
                return Err(usage(format!("readOnlyScopeRoots: '{r}' is not absolute")));
            }
            std::fs::canonicalize(p).map_err(|_| {
                Problem::new(
                    Failure::NotFound,
                    format!("readOnlyScopeRoots: '{r}' does not resolve"),
                )
            })
        })
        .collect()
}

/// Splits a comma-separated list; commas inside parentheses (`Bash(a,b)`) do not split.
pub fn split_list(list: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(cwd: &std::path::Path) -> RunAgentOptions {
        RunAgentOptions {
            cwd: Some(cwd.to_string_lossy().into_owned()),
            prompt: Some("hello".into()),
            ..RunAgentOptions::default()
        }
    }

    fn plan(o: &RunAgentOptions) -> Result<Plan, Problem> {
        Plan::from_options(o, "t".into())
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(&opts(dir.path())).unwrap();
        assert_eq!(p.model, "sonnet");
        assert_eq!(p.mode, "bypassPermissions");
        assert_eq!(p.timeout, Duration::from_secs(15 * 60));
        assert_eq!(p.contract, ContractKind::None);
        assert_eq!(
            (
                p.resume,
                p.tools,
                p.attached_plugins,
                p.env_profile_id,
                p.notify
            ),
            (None, None, None, None, None)
        );
        assert!(p.disallowed_tools.is_empty());
    }

    #[test]
    fn missing_or_empty_inputs_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let base = opts(dir.path());
        let cases: Vec<(RunAgentOptions, Failure, &str)> = vec![
            (
                RunAgentOptions {
                    cwd: None,
                    ..base.clone()
                },
                Failure::Usage,
                "cwd is required",
            ),
            (
                RunAgentOptions {
                    cwd: Some(String::new()),
                    ..base.clone()
                },
                Failure::Usage,
                "cwd is required",
            ),
            (
                RunAgentOptions {
                    prompt: None,
                    ..base.clone()
                },
                Failure::Usage,
                "prompt is required",
            ),
            (
                RunAgentOptions {
                    prompt: Some(" \n\t".into()),
                    ..base.clone()
                },
                Failure::Usage,
                "prompt is empty",
            ),
            (
                RunAgentOptions {
                    cwd: Some(dir.path().join("nope").to_string_lossy().into()),
                    ..base.clone()
                },
                Failure::NotFound,
                "cwd does not exist",
            ),
            (
                RunAgentOptions {
                    timeout_ms: Some(0),
                    ..base.clone()
                },
                Failure::Usage,
                "timeoutMs 0",
            ),
            (
                RunAgentOptions {
                    model: Some("--evil".into()),
                    ..base.clone()
                },
                Failure::Usage,
                "model",
            ),
            (
                RunAgentOptions {
                    mode: Some("bypass Permissions".into()),
                    ..base.clone()
                },
                Failure::Usage,
                "mode",
            ),
            (
                RunAgentOptions {
                    session_id: Some("../x".into()),
                    ..base.clone()
                },
                Failure::SessionNotFound,
                "sessionId",
            ),
            (
                RunAgentOptions {
                    session_id: Some("not-a-uuid".into()),
                    ..base.clone()
                },
                Failure::SessionNotFound,
                "is not a session id",
            ),
            (
                RunAgentOptions {
                    env_profile_id: Some("  ".into()),
                    ..base.clone()
                },
                Failure::Usage,
                "blank",
            ),
            (
                RunAgentOptions {
                    tools: Some(vec!["-x".into()]),
                    ..base.clone()
                },
                Failure::Usage,
                "tool",
            ),
            (
                RunAgentOptions {
                    read_only_scope_roots: Some(vec!["rel/dir".into()]),
                    ..base.clone()
                },
                Failure::Usage,
                "not absolute",
            ),
            (
                RunAgentOptions {
                    read_only_scope_roots: Some(vec![
                        dir.path().join("gone").to_string_lossy().into(),
                    ]),
                    ..base.clone()
                },
                Failure::NotFound,
                "does not resolve",
            ),
        ];
        for (o, failure, text) in cases {
            let e = plan(&o).unwrap_err();
            assert_eq!(e.failure, failure, "{o:?}");
            assert!(e.message.contains(text), "{} vs {text}", e.message);
        }
    }

    #[test]
    fn contracts_force_a_new_session_and_workspace_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let sid = "9d9a3bd6-1d7c-4f0e-9a57-5e1d1f0c0b11";
        let plain = RunAgentOptions {
            session_id: Some(sid.into()),
            ..opts(dir.path())
        };
        assert_eq!(plan(&plain).unwrap().resume.as_deref(), Some(sid));
        let ro = RunAgentOptions {
            read_only_scope_roots: Some(vec![dir.path().to_string_lossy().into()]),
            ..plain.clone()
        };
        let p = plan(&ro).unwrap();
        assert_eq!(p.contract, ContractKind::ReadOnly(vec![root]));
        assert_eq!(p.resume, None);
        let empty_roots = RunAgentOptions {
            read_only_scope_roots: Some(vec![]),
            ..plain.clone()
        };
        assert_eq!(plan(&empty_roots).unwrap().contract, ContractKind::None);
        let ws = RunAgentOptions {
            workspace_unity_state: Some(true),
            ..ro
        };
        let p = plan(&ws).unwrap();
        assert_eq!(p.contract, ContractKind::WorkspaceUnityState);
        assert_eq!(p.resume, None);
    }

    #[test]
    fn tab_ids_name_the_plugin_and_never_repeat() {
        let o = RunAgentOptions {
            plugin_id: Some("agent-review".into()),
            ..Default::default()
        };
        let a = tab_id(&o);
        let b = tab_id(&o);
        assert!(a.starts_with("run:agent-review:"), "{a}");
        assert_ne!(a, b);
        assert!(tab_id(&RunAgentOptions::default()).starts_with("run:external:"));
        let chosen = RunAgentOptions {
            tab_id: Some("mine".into()),
            ..o
        };
        assert_eq!(tab_id(&chosen), "mine");
    }

    #[test]
    fn a_prompt_origin_needs_an_address_the_client_takes_and_a_known_class() {
        let d = tempfile::tempdir().unwrap();
        let with = |from: &str, mode: &str| {
            let o = RunAgentOptions {
                prompt_origin: Some(PromptOrigin {
                    from: from.into(),
                    from_mode: mode.into(),
                }),
                ..opts(d.path())
            };
            Plan::from_options(&o, "t".into()).map(|p| p.origin)
        };
        assert!(
            with("uds:/tmp/cc-socks/1.sock", "bypass")
                .unwrap()
                .is_some()
        );
        assert!(with("uds:/tmp/cc-socks/1.sock", "prompting").is_ok());
        for (from, mode) in [
            ("terminal", "bypass"),
            ("uds:", "bypass"),
            ("uds:/a b.sock", "bypass"),
            ("uds:/a.sock", "auto"),
        ] {
            let e = with(from, mode).unwrap_err();
            assert_eq!(e.failure, Failure::Usage, "{from} {mode}");
        }
        let o: RunAgentOptions = serde_json::from_value(json!({
            "cwd": "/x", "prompt": "p",
            "promptOrigin": {"from": "uds:/a.sock", "fromMode": "bypass"},
        }))
        .unwrap();
        assert_eq!(o.prompt_origin.unwrap().from_mode, "bypass");
    }

    #[test]
    fn json_is_camel_case_and_strict() {
        let o: RunAgentOptions = serde_json::from_value(json!({
            "cwd": "/x", "prompt": "p", "pluginId": "pl", "sessionId": null, "timeoutMs": 5,
            "readOnlyScopeRoots": ["/a"], "workspaceUnityState": false, "envProfileId": "w",
            "notifyPluginId": "n", "disallowedTools": ["Bash"], "attachedPlugins": [],
        }))
        .unwrap();
        assert_eq!(o.plugin_id.as_deref(), Some("pl"));
        assert_eq!(o.timeout_ms, Some(5));
        assert!(
            serde_json::from_value::<RunAgentOptions>(json!({"cwd": "/x", "promt": "typo"}))
                .is_err()
        );
        let mut r = RunAgentResult::new("t");
        r.session_id = Some("s".into());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"ok": true, "tabId": "t", "sessionId": "s", "text": "", "isError": false})
        );
        let failed = RunAgentResult::new("t").failed(Problem::new(Failure::Timeout, "timeout"));
        let v = serde_json::to_value(&failed).unwrap();
        assert_eq!(v["error"], "timeout");
        assert_eq!(v["errorDetail"], "timeout");
        assert_eq!(v["ok"], false);
        assert_eq!(v["isError"], true, "a failure is an error");
        assert_eq!(failed.exit_code(), Code::Timeout);
    }

    #[test]
    fn lists_split_on_commas_outside_parentheses() {
        assert_eq!(split_list("Read, Grep,,Glob "), ["Read", "Grep", "Glob"]);
        assert_eq!(
            split_list("Bash(git log:*),Bash(a,b),Edit"),
            ["Bash(git log:*)", "Bash(a,b)", "Edit"]
        );
        assert!(split_list("").is_empty());
        assert!(split_list(" , ").is_empty());
    }

    #[test]
    fn failures_map_to_the_exit_table() {
        let table = [
            (Failure::Usage, 2),
            (Failure::NotFound, 6),
            (Failure::SessionNotFound, 6),
            (Failure::Refused, 8),
            (Failure::Spawn, 1),
            (Failure::Api, 1),
            (Failure::Cli, 1),
            (Failure::Timeout, 5),
            (Failure::Interrupted, 1),
        ];
        for (f, n) in table {
            assert_eq!(f.code().as_i32(), n, "{f:?}");
        }
        assert_eq!(RunAgentResult::new("t").exit_code(), Code::Success);
    }
}
