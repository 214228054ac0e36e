//! guard: the Claude Code hook. See `guard --help`.

use clap::{Parser, Subcommand};
use session_lock::hook::{self, Outcome, lifecycle::Env};
use std::io::{Read, Write};
use std::time::Duration;

/// How long one hook run may take before the guard gives up and allows.
const DEADLINE: Duration = Duration::from_secs(5);

#[derive(Parser)]
#[command(
    name = "guard",
    version,
    about = "The session-lock hook for Claude Code: records claims, keeps heartbeats, blocks writes to files another live stream owns, and blocks commands that would break other sessions.",
    long_about = "Wired in .claude/settings.json for PreToolUse, PostToolUse, SessionStart, SessionEnd, UserPromptSubmit and Stop (see `guard install`). It reads the hook payload on stdin. A block is a JSON decision on stdout with exit 0 (or, with \"decision\": \"exit2\" in session-lock/config.json, the reason on stderr and exit 2). Any failure of the guard itself allows the tool call, with a one-line note on stderr.",
    after_help = session_lock::exit::section("Exit codes (hook mode, nothing else):", session_lock::exit::tools::GUARD)
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Show how the guard reads a command: segments (argv), peeled wrappers, heredocs, and the
    /// rule it hits or "allow". Rules come from the repo's session-lock/config.json.
    #[command(
        after_help = "Examples:\n  guard explain 'git checkout -b x && git reset --hard'\n  guard explain --powershell 'Stop-Process -Name electron'\n  guard explain --cwd web 'rm -rf ../dist'"
    )]
    Explain {
        /// The command, as the Bash (or PowerShell) tool would receive it.
        command: String,
        /// The shell's working directory, relative to the repo root or absolute.
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// Read the command as PowerShell.
        #[arg(long)]
        powershell: bool,
        /// The repo (default: the git top level of the current folder).
        #[arg(long, value_name = "DIR")]
        repo: Option<std::path::PathBuf>,
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
    /// Wire the guard into a repo: hook entries in .claude/settings.json (others kept), the
    /// .gitignore lines and session-lock/PROTOCOL.md. Running it twice changes nothing.
    Install {
        /// The repo to wire (default: the git top level of the current folder).
        repo: Option<std::path::PathBuf>,
        /// The guard program the hooks run (default: this guard binary).
        #[arg(long, value_name = "PATH")]
        guard: Option<std::path::PathBuf>,
        /// Hook timeout in seconds (the client's default is 600).
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Print what changed as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn explain(
    command: &str,
    cwd: Option<std::path::PathBuf>,
    powershell: bool,
    repo: Option<std::path::PathBuf>,
) -> anyhow::Result<session_lock::exit::Code> {
    use session_lock::exit::{Code, fail};
    let root = session_lock::tools::repo_root(repo.as_deref())
        .or_else(|_| std::env::current_dir().map_err(anyhow::Error::from))?;
    let config =
        session_lock::config::Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let rules = session_lock::rules::compile(&config.rules)
        .map_err(|e| fail(Code::Usage, e.to_string()))?;
    let cwd = match cwd {
        Some(c) if c.is_absolute() => c,
        Some(c) => root.join(c),
        None => root.clone(),
    };
    let shell = if powershell {
        session_lock::rules::Shell::PowerShell
    } else {
        session_lock::rules::Shell::Bash
    };
    let ctx = session_lock::rules::CommandContext::new(
        cwd.display().to_string(),
        root.display().to_string(),
    )
    .with_shell(shell);
    print!("{}", session_lock::rules::explain(&rules, command, &ctx));
    Ok(Code::Success)
}

fn install(
    repo: Option<std::path::PathBuf>,
    guard: Option<std::path::PathBuf>,
    timeout: u64,
    json: bool,
) -> anyhow::Result<session_lock::exit::Code> {
    let repo = session_lock::tools::repo_root(repo.as_deref())?;
    let guard = match guard {
        Some(g) => g,
        None => std::env::current_exe()?,
    };
    let report = session_lock::install::install(&repo, &guard, timeout)?;
    if json {
        session_lock::cli::print_json(&report)?;
    } else if report.changed.is_empty() {
        println!("{}: already wired, nothing changed", repo.display());
    } else {
        for f in &report.changed {
            println!("wrote {f}");
        }
        println!("hooks run: {}", guard.display());
    }
    Ok(session_lock::exit::Code::Success)
}

fn hook_mode() -> Outcome {
    // A watchdog, not a worker: the work stays on the main thread (no second malloc arena, no
    // big stack), and if it ever runs past the deadline the watchdog allows and exits.
    let _ = std::thread::Builder::new().stack_size(64 * 1024).spawn(|| {
        std::thread::sleep(DEADLINE);
        let out = Outcome::allow_with_note(format!(
            "no answer within {}s; allowing",
            DEADLINE.as_secs()
        ));
        let _ = emit(&out);
        std::process::exit(0);
    });
    let result = std::panic::catch_unwind(|| {
        let mut bytes = Vec::new();
        let limit = (hook::MAX_PAYLOAD + 1) as u64;
        if let Err(e) = std::io::stdin().take(limit).read_to_end(&mut bytes) {
            return Outcome::allow_with_note(format!("cannot read stdin: {e}"));
        }
        hook::run(&bytes, &Env::from_process())
    });
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Outcome::allow_with_note(format!("internal error ({what}); allowing"))
    })
}

fn emit(out: &Outcome) -> std::process::ExitCode {
    if !out.stdout.is_empty() {
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(out.stdout.as_bytes());
        let _ = so.flush();
    }
    if !out.stderr.is_empty() {
        let _ = std::io::stderr().write_all(out.stderr.as_bytes());
    }
    std::process::ExitCode::from(if out.code == 2 { 2 } else { 0 })
}

fn main() -> std::process::ExitCode {
    // Silent panics: a backtrace costs time and says nothing to the client.
    std::panic::set_hook(Box::new(|_| {}));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return std::process::ExitCode::from(if e.use_stderr() { 1 } else { 0 });
        }
    };
    match cli.command {
        None => {
            let out = hook_mode();
            emit(&out)
        }
        Some(Command::Scope { roots, allow_tools }) => {
            emit(&hook::scope::hook_mode(hook::scope::Scope {
                roots,
                allow_tools,
            }))
        }
        Some(Command::Explain {
            command,
            cwd,
            powershell,
            repo,
        }) => session_lock::cli::finish("guard explain", explain(&command, cwd, powershell, repo)),
        Some(Command::Install {
            repo,
            guard,
            timeout,
            json,
        }) => session_lock::cli::finish("guard install", install(repo, guard, timeout, json)),
    }
}
