use clap::Parser;
use session_lock::{cli, exit, tools::wait_milestone};

#[derive(Parser)]
#[command(
    name = "wait-milestone",
    version,
    about = "Wait for a milestone or another stream to be done, heartbeating your own lock.",
    long_about = "Waits until milestone NN (every stream of it released) or one stream is done, printing progress on stderr: on a terminal one live line (what is still open, each holder's session and heartbeat age, elapsed and time left), otherwise a line at each change and every minute; --quiet for none. A wait is one long tool call with no other heartbeat, so pass `--stream <yours>`: your lock's heartbeat moves on every poll. Without --stream, a wait longer than 25 minutes (waitLimitMinutes) is refused, and the default timeout is that limit.",
    after_help = format!(
        "Examples:\n  wait-milestone ms-01 --stream ui\n  wait-milestone api --stream ui --timeout 3600\n  wait-milestone 2 --timeout 600\n\n{}",
        exit::help(exit::tools::WAIT_MILESTONE)
    )
)]
struct Args {
    /// A milestone (`ms-03`, `3`) or a stream name.
    target: String,
    /// Your own stream: its heartbeat is kept fresh while you wait.
    #[arg(long, value_name = "STREAM")]
    stream: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// No progress on stderr (by default: a live line on a terminal, else a line at each
    /// change and every minute).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a: Args = cli::parse("wait-milestone");
    cli::finish_json(
        "wait-milestone",
        a.common.json,
        wait_milestone::run(wait_milestone::Args {
            target: &a.target,
            stream: a.stream.as_deref(),
            timeout: a.timeout,
            repo: a.common.repo.as_deref(),
            json: a.common.json,
            quiet: a.quiet,
        }),
    )
}
