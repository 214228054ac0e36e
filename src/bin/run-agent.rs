//! run-agent: run one Claude Code agent turn headless and print its result. See `run-agent --help`.

use clap::{Args, Parser, Subcommand};
use session_lock::agent::{self, RunAgentOptions, RunAgentResult};
use session_lock::cli;
use session_lock::exit::{self, Code};
use std::io::Read;

const EXAMPLES: &str = "\
Examples:
  run-agent --cwd ~/proj --prompt 'Summarize README.md'
  run-agent --cwd ~/proj --prompt 'And the license?' --session-id <id from the last result>
  run-agent --cwd ~/proj --prompt 'Review src/' --read-only-scope-root ~/proj/src
  run-agent --cwd ~/game --prompt 'Is the editor playing?' --workspace-unity-state
  echo '{\"cwd\":\"/p\",\"prompt\":\"hi\",\"timeoutMs\":60000}' | run-agent --json --events -
  run-agent --cwd ~/proj --prompt 'Review the diff' --tab-id review-42 &
  run-agent list
  run-agent interrupt review-42
  run-agent doctor

Output: exactly one JSON object on stdout,
  {\"ok\", \"tabId\", \"sessionId\", \"text\", \"isError\", \"costUsd\"?, \"error\"?, \"errorDetail\"?}
text is the model's answer to the prompt only; on failure error is a stable code (usage,
not_found, session_not_found, refused, spawn_failed, api_error, cli_failed, timeout,
interrupted) and errorDetail the reason, also on stderr.

";

#[derive(Parser)]
#[command(
    name = "run-agent",
    about = "Run one Claude Code agent turn headless and print its result as JSON.",
    long_about = "Runs `claude -p --output-format stream-json` in --cwd with the prompt on its stdin (never in argv), collects every main-level assistant text block, and prints one RunAgentResult object. Restricted runs: --read-only-scope-root (read-only review) and --workspace-unity-state (read-only plus the editor-state tool). Options may come as flags or as one RunAgentOptions JSON object on stdin (--json).",
    after_help = format!("{EXAMPLES}\n{}", exit::help(exit::tools::RUN_AGENT)),
    disable_version_flag = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
    /// Print the version, the located claude CLI and its --version.
    #[arg(long, short = 'V')]
    version: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Report the located claude CLI and its version, guard, and the env profile file.
    Doctor {
        /// The claude executable to check (else SESSION_LOCK_CLAUDE_BIN, else PATH).
        #[arg(long, value_name = "PATH")]
        claude_bin: Option<String>,
    },
    /// Stop the run with this tab id, from any process of the same user: it ends "interrupted"
    /// with nothing left running. Waits until it has ended (at most 30 s).
    Interrupt {
        /// The run's tabId (as its result and events name it; see `run-agent list`).
        tab_id: String,
        /// Print one JSON object: {"ok", "tabId", "error"?}.
        #[arg(long)]
        json: bool,
    },
    /// List this user's runs under way: tabId, pid, cwd.
    List {
        /// Print one JSON array of {tabId, pid, procStart, cliPid, cwd, startedAt}.
        #[arg(long)]
        json: bool,
    },
    /// Serve the workspace editor-state tool as a stdio MCP server (used by the workspace
    /// contract; the url must be loopback http).
    McpProxy {
        #[arg(long, value_name = "URL")]
        url: String,
    },
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    flags: RunFlags,
    /// Read the whole RunAgentOptions as one JSON object on stdin (no other run flags).
    #[arg(long, conflicts_with = "run")]
    json: bool,
    /// Stream the run's events as JSON lines to this file (appended), or `-` for stderr.
    #[arg(long, value_name = "PATH|-")]
    events: Option<String>,
    /// The claude executable [default: SESSION_LOCK_CLAUDE_BIN, else claude on PATH, else the
    /// pinned CLI that scripts/install-claude-cli installs, else where the client's installers
    /// put it].
    #[arg(long, value_name = "PATH")]
    claude_bin: Option<String>,
    /// The guard executable for restricted runs [default: next to run-agent].
    #[arg(long, value_name = "PATH")]
    guard_bin: Option<String>,
}

/// The options of one run as flags; `--json` takes them all as one object instead.
#[derive(Args)]
#[group(id = "run", multiple = true)]
struct RunFlags {
    /// Working directory of the agent (required).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// The user turn (required).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    prompt: Option<String>,
    /// Names the run run:<plugin-id>:<n> when --tab-id is not given [default: external].
    #[arg(long, value_name = "ID")]
    plugin_id: Option<String>,
    /// Resume this session, a UUID (ignored by restricted runs).
    #[arg(long, value_name = "ID")]
    session_id: Option<String>,
    /// Model alias or id [default: sonnet].
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Appended to the default system prompt.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    system_prompt: Option<String>,
    /// Permission mode [default: bypassPermissions].
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// Comma-separated MCP server names of <cwd>/.mcp.json the run gets (no other loads).
    #[arg(long, value_name = "NAMES", value_parser = list)]
    attached_plugins: Option<List>,
    /// The run's id [default: run:<plugin-id>:<n>]; `run-agent interrupt <id>` stops it.
    #[arg(long, value_name = "ID")]
    tab_id: Option<String>,
    /// Hard limit in milliseconds, a positive number [default: 900000].
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = positive_ms)]
    timeout_ms: Option<u64>,
    /// Comma-separated built-in tool allowlist, passed through ("" = none).
    #[arg(long, value_name = "TOOLS", value_parser = list)]
    tools: Option<List>,
    /// A tool pattern to deny, passed through. Repeatable; commas also separate.
    #[arg(long, value_name = "PATTERN", value_parser = list)]
    disallowed_tools: Vec<List>,
    /// Read-only review contract: a confirmed absolute root. Repeatable.
    #[arg(long = "read-only-scope-root", value_name = "DIR")]
    read_only_scope_roots: Vec<String>,
    /// Workspace single-tool contract (read-only in cwd plus the editor-state tool).
    #[arg(long)]
    workspace_unity_state: bool,
    /// Env profile to run with; an unknown id fails before anything runs.
    #[arg(long, value_name = "ID")]
    env_profile_id: Option<String>,
    /// Events also carry notify: "plugin:<id>:event".
    #[arg(long, value_name = "ID")]
    notify_plugin_id: Option<String>,
    /// Leave the processes the turn started in the background (servers) running after it.
    #[arg(long)]
    keep_background: bool,
}

/// A comma-separated flag value, split (commas inside parentheses do not split).
#[derive(Clone)]
struct List(Vec<String>);

fn list(text: &str) -> Result<List, String> {
    Ok(List(agent::options::split_list(text)))
}

fn positive_ms(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "'{text}' is not a timeout: it must be a positive number of milliseconds"
        )),
    }
}

/// The one conversion of the flags into options (unset flags stay unset).
impl From<RunFlags> for RunAgentOptions {
    fn from(f: RunFlags) -> RunAgentOptions {
        let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
        RunAgentOptions {
            cwd: f.cwd,
            prompt: f.prompt,
            plugin_id: f.plugin_id,
            session_id: f.session_id,
            model: f.model,
            system_prompt: f.system_prompt,
            mode: f.mode,
            attached_plugins: f.attached_plugins.map(|l| l.0),
            tab_id: f.tab_id,
            timeout_ms: f.timeout_ms,
            tools: f.tools.map(|l| l.0),
            disallowed_tools: some(f.disallowed_tools.into_iter().flat_map(|l| l.0).collect()),
            read_only_scope_roots: some(f.read_only_scope_roots),
            workspace_unity_state: f.workspace_unity_state.then_some(true),
            env_profile_id: f.env_profile_id,
            notify_plugin_id: f.notify_plugin_id,
            keep_background: f.keep_background.then_some(true),
            ..RunAgentOptions::default()
        }
    }
}

impl RunArgs {
    fn options(self) -> anyhow::Result<RunAgentOptions> {
        let mut o = if self.json {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            agent::options::from_json(&text)
                .map_err(|e| exit::fail(Code::Usage, format!("options on stdin: {e}")))?
        } else {
            RunAgentOptions::from(self.flags)
        };
        if self.claude_bin.is_some() {
            o.claude_bin = self.claude_bin;
        }
        if self.guard_bin.is_some() {
            o.guard_bin = self.guard_bin;
        }
        Ok(o)
    }
}

/// Prints the result and ends with its exit code (the reason on stderr too).
fn finish(result: &RunAgentResult) -> std::process::ExitCode {
    if let Err(e) = cli::print_json(result) {
        return cli::finish("run-agent", Err(e));
    }
    let outcome = match (&result.error_detail, result.exit_code()) {
        (_, Code::Success) => Ok(Code::Success),
        (Some(e), code) => Err(exit::fail(code, e.clone())),
        (None, code) => Err(exit::fail(code, "the run failed")),
    };
    cli::finish("run-agent", outcome)
}

fn usage_result(message: String) -> std::process::ExitCode {
    let tab = agent::options::tab_id(&RunAgentOptions::default());
    finish(&RunAgentResult::new(tab).failed(agent::Problem::new(agent::Failure::Usage, message)))
}

fn interrupt(tab_id: &str, json: bool) -> anyhow::Result<Code> {
    let outcome = agent::interrupt(tab_id);
    if json {
        let error = outcome.as_ref().err().map(|e| e.to_string());
        cli::print_json(
            &serde_json::json!({"ok": outcome.is_ok(), "tabId": tab_id, "error": error}),
        )?;
    }
    match outcome {
        Ok(_) if json => Ok(Code::Success),
        Ok(e) => {
            println!("interrupted {} (pid {})", e.tab_id, e.pid);
            Ok(Code::Success)
        }
        Err(e @ agent::RunsError::NotRunning(_)) => Err(exit::fail(Code::NotFound, e.to_string())),
        Err(e) => Err(exit::fail(Code::Failure, e.to_string())),
    }
}

fn list_runs(json: bool) -> anyhow::Result<Code> {
    let runs = agent::list().map_err(|e| exit::fail(Code::Failure, e.to_string()))?;
    if json {
        cli::print_json(&runs)?;
    } else if runs.is_empty() {
        println!("no runs under way");
    } else {
        for r in runs {
            println!("{}  pid {}  {}", r.tab_id, r.pid, r.cwd);
        }
    }
    Ok(Code::Success)
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // The result carries clap's first line, as every tool's `--json` error does.
        Err(e) if e.use_stderr() => return usage_result(cli::usage_message(&e).1),
        Err(e) => {
            let _ = e.print();
            return std::process::ExitCode::SUCCESS;
        }
    };
    if cli.version {
        print!("{}", agent::doctor(cli.run.claude_bin.as_deref()).render());
        return std::process::ExitCode::SUCCESS;
    }
    match cli.command {
        Some(Cmd::Doctor { claude_bin }) => {
            let d = agent::doctor(claude_bin.as_deref());
            print!("{}", d.render_full());
            let code = if d.ok() {
                Code::Success
            } else {
                Code::NotFound
            };
            cli::finish("run-agent", Ok(code))
        }
        Some(Cmd::Interrupt { tab_id, json }) => cli::finish("run-agent", interrupt(&tab_id, json)),
        Some(Cmd::List { json }) => cli::finish("run-agent", list_runs(json)),
        Some(Cmd::McpProxy { url }) => cli::finish(
            "run-agent",
            agent::mcp_proxy::serve_stdio(&url)
                .map(|()| Code::Success)
                .map_err(|p| exit::fail(p.failure.code(), p.message)),
        ),
        None => {
            let events = cli.run.events.clone();
            let opts = match cli.run.options() {
                Ok(o) => o,
                Err(e) => return usage_result(e.to_string()),
            };
            let mut sink: agent::EventSink = match &events {
                Some(spec) => match agent::event_writer(spec) {
                    Ok(w) => w,
                    Err(e) => return usage_result(format!("--events {spec}: {e}")),
                },
                None => Box::new(|_| {}),
            };
            let cancel = agent::cancel_on_signals();
            let result = agent::run_agent_with(&opts, &mut *sink, &cancel);
            finish(&result)
        }
    }
}
