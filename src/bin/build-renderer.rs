//! build-renderer: the one sanctioned renderer build, serialized by `session-lock/build.lock`.

use clap::{CommandFactory, Parser};
use session_lock::cli::Common;
use session_lock::exit;
use session_lock::tools::build_renderer::{self, Options};
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  build-renderer                         run the configured build, waiting for the lock
  build-renderer --no-wait               fail with 7 if someone is building
  build-renderer --timeout 600           give up (exit 5) after 10 minutes of waiting
  build-renderer -- npx vite build --mode staging
  build-renderer --status --json         who holds the lock, who waits; builds nothing
";

#[derive(Parser)]
#[command(
    name = "build-renderer",
    version,
    about = "Build the renderer under the suite's build lock, so parallel sessions build one after the other.",
    long_about = "Takes the exclusive OS lock session-lock/build.lock (released by the OS if the holder dies) and runs the build from the repo root, its output streamed through. The command is build.command in session-lock/config.json (default `npx --no-install vite build`: the repo's own vite, never a download; run through the shell), or the words after `--` (run directly). While another build holds the lock it shows who (stream, session, pid, command, since when) and waits, printing a line when the holder changes and \"still waiting\" every build.reportSeconds.\n\nWhen the build ran, the exit status is the build's own (a build killed by a signal exits 1). Before the build starts, the codes below apply."
)]
struct Cli {
    #[command(flatten)]
    common: Common,
    /// Report the holder and the queue of waiters; build nothing.
    #[arg(long, conflicts_with_all = ["no_wait", "timeout", "command"])]
    status: bool,
    /// Fail at once (exit 7) when another build holds the lock.
    #[arg(long)]
    no_wait: bool,
    /// Stop waiting after SECS seconds (exit 5).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// No progress on stderr while waiting (by default a live line on a terminal, else a line
    /// when the holder changes and every build.reportSeconds).
    #[arg(long, short)]
    quiet: bool,
    /// Run this command (no shell) instead of build.command, under the same lock.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn main() -> std::process::ExitCode {
    let help = format!("{EXAMPLES}\n{}", exit::help(exit::tools::BUILD_RENDERER));
    let cli: Cli =
        session_lock::cli::parse_command("build-renderer", Cli::command().after_help(help));
    let json = cli.common.json;
    build_renderer::finish(
        json,
        build_renderer::run(&Options {
            repo: cli.common.repo,
            json: cli.common.json,
            status: cli.status,
            no_wait: cli.no_wait,
            timeout: cli.timeout.map(Duration::from_secs),
            command: cli.command,
            quiet: cli.quiet,
        }),
    )
}
