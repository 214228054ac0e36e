use clap::Parser;
use session_lock::{cli, exit, tools::status};

#[derive(Parser)]
#[command(
    name = "status",
    version,
    about = "See the round: every stream, its state, its session and heartbeat.",
    long_about = "Lists the streams declared by plans and the locks in session-lock/: milestone, state (unclaimed / active / stale / done / corrupt: a lock file that cannot be read / broken: a plan that cannot be read), session short id, heartbeat age and round. A lock whose client process is gone is marked orphaned. `--wait` blocks until every claimed stream is done (a lock stale for 60 minutes counts as finished), printing progress on stderr (on a terminal one live line with each open stream's session and heartbeat age, elapsed and time left; otherwise a line at each change and every minute; --quiet for none); `--archive` then moves *.lock, *.done and milestones/ into session-lock/history/<timestamp>/ (refused, exit 8, while a claimed stream is still open or a lock is corrupt: a corrupt lock never counts as finished). Plans whose owns overlap are warned about. `[W]` in scripts/run.sh runs `status --wait --archive`.",
    after_help = format!(
        "Examples:\n  status\n  status --json\n  status --watch\n  echo '{{\"session_id\":\"…\",\"workspace\":{{\"project_dir\":\"…\"}}}}' | status --statusline\n  status --wait --timeout 3600 --archive\n\n{}",
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
    /// With --wait: no progress on stderr (by default a live line on a terminal, else a line at
    /// each change and every minute).
    #[arg(long, short, requires = "wait")]
    quiet: bool,
    /// A live view of the round on the terminal, redrawn every second until q, Esc or
    /// Ctrl-C: streams, the build lock's holder and queue, messages in flight, the last blocks.
    #[arg(long, conflicts_with_all = ["wait", "archive", "json", "config_value"])]
    watch: bool,
    /// Print one key of the effective config (defaults applied), e.g. rebuildCommand.
    #[arg(long, value_name = "KEY", conflicts_with_all = ["wait", "archive"])]
    config_value: Option<String>,
    /// One short line for the Claude Code status line: the session whose JSON is on stdin (as
    /// the client gives it to a `statusLine` command), the stream it holds, the other live
    /// streams and their heartbeat age, messages waiting for it, a corrupt lock or a stale lease
    /// mirror. Prints nothing outside a wired repo; always exits 0. `guard install` sets it up.
    #[arg(long, conflicts_with_all = ["wait", "archive", "json", "config_value", "watch"])]
    statusline: bool,
    /// With leases on a git remote: refresh the lease mirror and push due heartbeats, quietly
    /// (the guard starts this in the background). It waits for a refresh already running.
    #[arg(long, hide = true)]
    refresh_leases: bool,
    /// With --refresh-leases: leave at once when one refresh runs and another waits (the
    /// guard's detached refresher, so a frozen remote does not pile them up).
    #[arg(long, hide = true, requires = "refresh_leases")]
    background: bool,
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a: Args = cli::parse("status");
    cli::finish_json(
        "status",
        a.common.json,
        status::run(status::Args {
            repo: a.common.repo.as_deref(),
            json: a.common.json,
            wait: a.wait,
            timeout: a.timeout,
            archive: a.archive,
            quiet: a.quiet,
            watch: a.watch,
            config_value: a.config_value.as_deref(),
            refresh_leases: a.refresh_leases.then_some(if a.background {
                status::RefreshRun::Background
            } else {
                status::RefreshRun::Asked
            }),
            statusline: a.statusline,
        }),
    )
}
