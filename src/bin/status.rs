use clap::Parser;
use session_lock::{cli, exit, tools::status};

#[derive(Parser)]
#[command(
    name = "status",
    version,
    about = "See the round: every stream, its state, its session and heartbeat.",
    long_about = "Lists the streams declared by plans and the locks in session-lock/: milestone, state (unclaimed / active / stale / done), session short id, heartbeat age and round. A lock whose client process is gone is marked orphaned. `--wait` blocks until every claimed stream is done (a lock stale for 60 minutes counts as finished), printing progress on stderr; `--archive` then moves *.lock, *.done and milestones/ into session-lock/history/<timestamp>/ (refused while a claimed stream is still open). `[W]` in scripts/run.sh runs `status --wait --archive`.",
    after_help = format!(
        "Examples:\n  status\n  status --json\n  status --wait --timeout 3600 --archive\n\n{}",
        exit::help(exit::tools::STATUS)
    )
)]
struct Args {
    /// Block until every claimed stream is done.
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, value_name = "SECS", requires = "wait")]
    timeout: Option<u64>,
    /// Move this round's files into session-lock/history/<timestamp>/ (after --wait, if given).
    #[arg(long)]
    archive: bool,
    /// Print one key of the effective config (defaults applied), e.g. rebuildCommand.
    #[arg(long, value_name = "KEY", conflicts_with_all = ["wait", "archive"])]
    config_value: Option<String>,
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a = Args::parse();
    cli::finish(
        "status",
        status::run(status::Args {
            repo: a.common.repo.as_deref(),
            json: a.common.json,
            wait: a.wait,
            timeout: a.timeout,
            archive: a.archive,
            config_value: a.config_value.as_deref(),
        }),
    )
}
