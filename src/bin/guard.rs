//! guard: the hook of Claude Code, Codex CLI and Gemini CLI, and its own commands. See `guard --help`.

use clap::{CommandFactory, Parser, Subcommand};
use session_lock::cli;
use session_lock::hook::{self, deadline, door};
use session_lock::tools::guard::{doctor, explain, install, log};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "guard",
    version,
    about = "The session-lock hook for Claude Code, Codex CLI and Gemini CLI: records claims, keeps heartbeats, blocks writes to files another live stream owns, and blocks commands that would break other sessions.",
    long_about = "Wired in .claude/settings.json for PreToolUse, PostToolUse, SessionStart, SessionEnd, UserPromptSubmit and Stop, and in .codex/hooks.json and .gemini/settings.json for those clients' events (see `guard install`). With no command it reads the hook payload on stdin, tells the client from it, and answers in that client's form; run in a terminal with nothing piped in, it prints this help. A block is a JSON decision on stdout with exit 0 (Gemini CLI: a top-level \"decision\"; or, with \"decision\": \"exit2\" in session-lock/config.json, the reason on stderr and exit 2). Any failure of the guard itself allows the tool call, with a one-line note on stderr. Every block and every such failure is appended to session-lock/blocks.jsonl (`guard log`). While a round runs, an allowed Bash call (in a bypassPermissions session, or any with \"floor\": \"required\") is answered with its command rewritten to run under the kernel write floor (`guard floor`, which only that rewrite runs): other streams' files, the protocol's state and the app's outputs are unwritable there (see PROTOCOL.md, The kernel write floor).",
    after_help = format!(
        concat!(
        "Examples:\n",
        "  guard install                      wire the repo you are in (its git top level)\n",
        "  guard doctor                       is this repo guarded on this machine? ok / warn / fail\n",
        "  guard explain 'git add -A'         how the guard reads a command; exit 1 when it blocks\n",
        "  guard log --since 1h               what was blocked in the last hour\n",
        "  guard uninstall                    remove exactly what install added\n",
        "  echo '{{\"hook_event_name\":\"PreToolUse\",...}}' | guard   what Claude Code runs before each tool call\n\n",
        "{}Each command's --help lists its own exit codes."
        ),
        session_lock::exit::section(
            "Exit codes (hook mode, nothing else):",
            session_lock::exit::tools::GUARD
        )
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Show how the guard reads a command: segments (argv), peeled wrappers, heredocs, the
    /// write targets and the lock each hits, the rules it hits, the kernel write floor (the
    /// mechanism here, what it would deny and whose), and the verdict: the guard's own decision
    /// on the command, for a bypassPermissions session holding no stream (nothing is written).
    /// Rules and locks come from the repo.
    #[command(after_help = concat!(
        "Examples:\n  guard explain 'git checkout -b x && git reset --hard'\n  guard explain --powershell 'Stop-Process -Name electron'\n  guard explain --cwd web 'rm -rf ../dist'\n  guard explain 'git add -A' >/dev/null || echo blocked\n  guard explain --json 'echo hi > src/api/x.ts'\n\n",
        "Exit codes: 0 the verdict is allow; 1 the verdict is block (the guard's own decision, as the hook would answer a session holding no stream; a shared-tree rule blocks unless the guard can tell no other session works in the tree); 2 bad arguments or a bad session-lock/config.json"
    ))]
    Explain {
        /// The command, as the Bash (or PowerShell) tool would receive it.
        command: String,
        /// The shell's working directory, relative to the repo root or absolute.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Read the command as PowerShell.
        #[arg(long)]
        powershell: bool,
        /// The repo (default: the git top level of the current folder).
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// Print the decision as JSON: {event, verdict: allow|rewrite|deny, rule, stream, path,
        /// segment, reason, notices, input (the rewritten tool input), floor: {mode, mechanism,
        /// applies, why_not, denied: [{path, owner}], notes}}.
        #[arg(long)]
        json: bool,
    },
    /// Path-boundary hook of run-agent's restricted runs (read-only review, workspace
    /// single-tool). Allows only Read, Grep and Glob (plus --allow-tool names) on targets that
    /// resolve inside a --root. Fails closed: its own errors, panics and deadline deny.
    Scope {
        /// A confirmed scope root (absolute; symlinks are followed). Repeat for several.
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<String>,
        /// One more tool name allowed as is (exact match). Repeatable.
        #[arg(long = "allow-tool", value_name = "NAME")]
        allow_tools: Vec<String>,
    },
    /// Wire the guard into a repo: hook entries in each client's project config (Claude Code's
    /// .claude/settings.json, Codex CLI's .codex/hooks.json, Gemini CLI's .gemini/settings.json;
    /// others' entries kept), the messaging server in .mcp.json, its approval and the status line
    /// in .claude/settings.local.json (the status line only when no settings file has one), the
    /// .gitignore lines, session-lock/PROTOCOL.md and the launcher session-lock/guard-hook. JSON
    /// files are edited in place: a diff shows only the added block, modes are kept. Running it
    /// twice changes nothing. It says which release checks `release` will run. Commit what it
    /// wrote (not settings.local.json, which is yours and git-ignored): the launcher finds the
    /// suite on every machine that has it, and blocks (saying so) on one that has not. Codex and
    /// Gemini run a project's hooks only once it is trusted: `guard doctor` checks that and says
    /// how. It also writes the user-scope entry (`<guard> --user-scope`) into your Claude Code
    /// settings (~/.claude/settings.json): a session started in a subfolder of the repo (or a
    /// nested `claude -p` run there) reads no project settings, and that entry guards it; at a
    /// top level and outside wired repos it does nothing. Refused from inside a session while
    /// another works in the tree (hooks.self-disarm).
    #[command(after_help = concat!(
        "Examples:\n  guard install                 the git top level of the current folder: Claude Code, and Codex / Gemini when on PATH\n  guard install ~/proj\n  guard install --agent codex --agent gemini\n  guard install --no-statusline\n  guard install --timeout 20 --json\n\n",
        "Exit codes: 0 wired (or already wired); 1 a file could not be read or written; 2 REPO is not a git top level, an --agent is unknown, or a settings file is not valid JSON of the expected shape (nothing changed)"
    ))]
    Install {
        /// The repo to wire: a git top level (default: the one of the current folder).
        repo: Option<PathBuf>,
        /// Run this guard program directly instead of the committed launcher (the path is
        /// this machine's: for a settings file that is not shared).
        #[arg(long, value_name = "PATH")]
        guard: Option<PathBuf>,
        /// Hook timeout in seconds (the client's default is 600).
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Wire this client: claude, codex or gemini (repeatable). Default: Claude Code and
        /// every other supported client whose program is on PATH.
        #[arg(long = "agent", value_name = "CLIENT", value_parser = parse_agent)]
        agents: Vec<session_lock::clients::Client>,
        /// Do not add the status line (and take ours out if an earlier install added it).
        #[arg(long)]
        no_statusline: bool,
        /// Do not write the user-scope entry into the user's Claude Code settings
        /// (~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json): sessions started in a
        /// subfolder of the repo then run no hook.
        #[arg(long)]
        no_user_scope: bool,
        /// Print what changed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove exactly what install added: the guard's hook entries, the MCP server, its
    /// approval and our status line, the .gitignore lines, and PROTOCOL.md and the launcher
    /// unless they were edited, and the user-scope entry from your Claude Code settings (it
    /// serves every wired repo of yours: run `guard install` in another one to put it back). On
    /// the machine that installed, the repo's files come back byte for byte; on a repo that was
    /// never wired nothing changes. Refused from inside a session while another works in the
    /// tree (hooks.self-disarm).
    #[command(after_help = concat!(
        "Examples:\n  guard uninstall\n  guard uninstall ~/proj --json\n\n",
        "Exit codes: 0 removed (or nothing to remove); 1 a file could not be read or written; 2 REPO is not a git top level, or .claude/settings.json is not valid (nothing changed)"
    ))]
    Uninstall {
        /// The repo: a git top level (default: the one of the current folder).
        repo: Option<PathBuf>,
        /// Print what changed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check that the repo is guarded on this machine: hook entries present and running a guard
    /// that answers, no disableAllHooks in any settings file a session reads, matching versions,
    /// a writable session-lock/, plans that parse, the kernel write floor this machine has and
    /// what it would deny now, the pinned Claude Code CLI; for Codex CLI and Gemini CLI, their
    /// entries, the guard answering their payloads, and the trust each needs before it runs a
    /// project's hooks (with exactly what to add where it is missing).
    #[command(after_help = concat!(
        "Examples:\n  guard doctor\n  guard doctor ~/proj --json\n\n",
        "Exit codes: 0 no check failed (warnings allowed); 1 a check failed; 2 REPO is not a git top level"
    ))]
    Doctor {
        /// The repo: a git top level (default: the one of the current folder).
        repo: Option<PathBuf>,
        /// Print {ok, repo, checks: [{name, level, detail, fix}]}.
        #[arg(long)]
        json: bool,
    },
    /// Show what the guard blocked in this repo (and where it allowed because of its own
    /// trouble), from session-lock/blocks.jsonl, oldest first. Secrets are redacted.
    #[command(after_help = concat!(
        "Examples:\n  guard log\n  guard log --since 1h\n  guard log --session 3f2a9c1e --json\n\n",
        "Exit codes: 0 shown; 1 the log cannot be read; 2 bad arguments"
    ))]
    Log {
        /// Only entries newer than this: 90s, 30m, 1h, 2d.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// Only this session's entries (its id or first characters).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[command(flatten)]
        common: cli::Common,
    },
}

fn parse_agent(s: &str) -> Result<session_lock::clients::Client, String> {
    session_lock::clients::Client::from_name(s)
        .ok_or_else(|| format!("'{s}' is not a supported client (claude, codex, gemini)"))
}

fn main() -> std::process::ExitCode {
    // Silent panics: a backtrace costs time and says nothing to the client.
    std::panic::set_hook(Box::new(|_| {}));
    // The hook itself (no arguments) runs before every tool call: it builds no clap command.
    if std::env::args_os().len() <= 1 {
        return door::run(|| Cli::command().render_help().to_string());
    }
    // A run past its deadline re-executes the guard to allow and log it (not a user command).
    if std::env::args_os().len() == 2
        && std::env::args_os()
            .nth(1)
            .is_some_and(|a| a == deadline::AFTER_DEADLINE)
    {
        return door::after_deadline();
    }
    // The user-scope hook entry, before every tool call of every session of the user.
    if std::env::args_os().len() == 2
        && std::env::args_os()
            .nth(1)
            .is_some_and(|a| a == hook::USER_SCOPE)
    {
        return door::run_user_scope(|| Cli::command().render_help().to_string());
    }
    // The floor runs before every floored shell command: no clap command is built either.
    if std::env::args_os().nth(1).is_some_and(|a| a == "floor") {
        let words: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return std::process::ExitCode::from(session_lock::floor::run::main(&words));
    }
    let cli: Cli = cli::parse("guard");
    match cli.command {
        None => door::run(|| Cli::command().render_help().to_string()),
        Some(Command::Scope { roots, allow_tools }) => {
            let out = hook::scope::hook_mode(hook::scope::Scope { roots, allow_tools });
            std::process::ExitCode::from(door::emit(&out) as u8)
        }
        Some(Command::Explain {
            command,
            cwd,
            powershell,
            repo,
            json,
        }) => cli::finish_json(
            "guard explain",
            json,
            explain::run(explain::Args {
                command: &command,
                cwd: cwd.as_deref(),
                powershell,
                repo: repo.as_deref(),
                json,
            }),
        ),
        Some(Command::Install {
            repo,
            guard,
            timeout,
            agents,
            no_statusline,
            no_user_scope,
            json,
        }) => cli::finish_json(
            "guard install",
            json,
            install::run_install(
                repo.as_deref(),
                &install::Options {
                    guard: guard.as_deref(),
                    timeout_s: timeout,
                    statusline: !no_statusline,
                    agents: &agents,
                    user_scope: !no_user_scope,
                },
                json,
            ),
        ),
        Some(Command::Uninstall { repo, json }) => cli::finish_json(
            "guard uninstall",
            json,
            install::run_uninstall(repo.as_deref(), json),
        ),
        Some(Command::Doctor { repo, json }) => {
            cli::finish_json("guard doctor", json, doctor::run(repo.as_deref(), json))
        }
        Some(Command::Log {
            since,
            session,
            common,
        }) => cli::finish_json(
            "guard log",
            common.json,
            log::run(log::Args {
                repo: common.repo.as_deref(),
                since: since.as_deref(),
                session: session.as_deref(),
                json: common.json,
            }),
        ),
    }
}
