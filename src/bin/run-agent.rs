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
  run-agent doctor

Output: exactly one JSON object on stdout,
  {\"ok\", \"tabId\", \"sessionId\", \"text\", \"isError\", \"costUsd\"?, \"error\"?}
(the same on failure, with the reason also on stderr).
";

#[derive(Parser)]
#[command(
    name = "run-agent",
    about = "Run one Claude Code agent turn headless and print its result as JSON.",
    long_about = "Runs `claude -p --output-format stream-json` in --cwd with stdin closed, collects every main-level assistant text block, and prints one RunAgentResult object. Restricted runs: --read-only-scope-root (read-only review) and --workspace-unity-state (read-only plus the editor-state tool). Options may come as flags or as one RunAgentOptions JSON object on stdin (--json).",
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
    /// Serve the workspace editor-state tool as a stdio MCP server (used by the workspace
    /// contract; the url must be loopback http).
    McpProxy {
        #[arg(long, value_name = "URL")]
        url: String,
    },
}

#[derive(Args, Default)]
struct RunArgs {
    /// Working directory of the agent (required).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// The user turn (required).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    prompt: Option<String>,
    /// Names the run run:<plugin-id>:<n> when --tab-id is not given [default: external].
    #[arg(long, value_name = "ID")]
    plugin_id: Option<String>,
    /// Resume this session (ignored by restricted runs).
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
    #[arg(long, value_name = "NAMES")]
    attached_plugins: Option<String>,
    /// The run's id [default: run:<plugin-id>:<n>].
    #[arg(long, value_name = "ID")]
    tab_id: Option<String>,
    /// Hard limit in milliseconds [default: 900000].
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// Comma-separated built-in tool allowlist, passed through ("" = none).
    #[arg(long, value_name = "TOOLS")]
    tools: Option<String>,
    /// A tool pattern to deny, passed through. Repeatable; commas also separate.
    #[arg(long, value_name = "PATTERN")]
    disallowed_tools: Vec<String>,
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
    /// Read the whole RunAgentOptions as one JSON object on stdin (no other run flags).
    #[arg(long, conflicts_with_all = [
        "cwd", "prompt", "plugin_id", "session_id", "model", "system_prompt", "mode",
        "attached_plugins", "tab_id", "timeout_ms", "tools", "disallowed_tools",
        "read_only_scope_roots", "workspace_unity_state", "env_profile_id", "notify_plugin_id",
    ])]
    json: bool,
    /// Stream the run's events as JSON lines to this file (appended), or `-` for stderr.
    #[arg(long, value_name = "PATH|-")]
    events: Option<String>,
    /// The claude executable [default: SESSION_LOCK_CLAUDE_BIN, else claude on PATH].
    #[arg(long, value_name = "PATH")]
    claude_bin: Option<String>,
    /// The guard executable for restricted runs [default: next to run-agent].
    #[arg(long, value_name = "PATH")]
    guard_bin: Option<String>,
}

use agent::options::split_list as split;

impl RunArgs {
    fn options(&self) -> anyhow::Result<RunAgentOptions> {
        let mut o = if self.json {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            serde_json::from_str::<RunAgentOptions>(&text)
                .map_err(|e| exit::fail(Code::Usage, format!("options on stdin: {e}")))?
        } else {
            RunAgentOptions {
                cwd: self.cwd.clone(),
                prompt: self.prompt.clone(),
                plugin_id: self.plugin_id.clone(),
                session_id: self.session_id.clone(),
                model: self.model.clone(),
                system_prompt: self.system_prompt.clone(),
                mode: self.mode.clone(),
                attached_plugins: self.attached_plugins.as_deref().map(split),
                tab_id: self.tab_id.clone(),
                timeout_ms: self.timeout_ms,
                tools: self.tools.as_deref().map(split),
                disallowed_tools: (!self.disallowed_tools.is_empty()).then(|| {
                    self.disallowed_tools
                        .iter()
                        .flat_map(|d| split(d))
                        .collect()
                }),
                read_only_scope_roots: (!self.read_only_scope_roots.is_empty())
                    .then(|| self.read_only_scope_roots.clone()),
                workspace_unity_state: self.workspace_unity_state.then_some(true),
                env_profile_id: self.env_profile_id.clone(),
                notify_plugin_id: self.notify_plugin_id.clone(),
                ..RunAgentOptions::default()
            }
        };
        if self.claude_bin.is_some() {
            o.claude_bin = self.claude_bin.clone();
        }
        if self.guard_bin.is_some() {
            o.guard_bin = self.guard_bin.clone();
        }
        Ok(o)
    }
}

/// Prints the result and ends with its exit code (the reason on stderr too).
fn finish(result: &RunAgentResult) -> std::process::ExitCode {
    if let Err(e) = cli::print_json(result) {
        return cli::finish("run-agent", Err(e));
    }
    let outcome = match (&result.error, result.exit_code()) {
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

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or("bad arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first).to_string();
            return usage_result(first);
        }
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
        Some(Cmd::McpProxy { url }) => cli::finish(
            "run-agent",
            agent::mcp_proxy::serve_stdio(&url)
                .map(|()| Code::Success)
                .map_err(|p| exit::fail(p.failure.code(), p.message)),
        ),
        None => {
            let opts = match cli.run.options() {
                Ok(o) => o,
                Err(e) => return usage_result(e.to_string()),
            };
            let mut sink: agent::EventSink = match &cli.run.events {
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
