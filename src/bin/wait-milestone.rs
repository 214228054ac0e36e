use clap::Parser;
use session_lock::{cli, exit, tools::wait_milestone};

#[derive(Parser)]
#[command(
    name = "wait-milestone",
    version,
    about = "Wait for a milestone or another stream to be done, heartbeating your own lock.",
    long_about = "Waits until milestone NN (every stream of it released) or one stream is done, printing progress on stderr. A wait is one long tool call with no other heartbeat, so pass `--stream <yours>`: your lock's heartbeat moves on every poll. Without --stream, a wait longer than 25 minutes (waitLimitMinutes) is refused, and the default timeout is that limit.",
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
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a = Args::parse();
    cli::finish(
        "wait-milestone",
        wait_milestone::run(wait_milestone::Args {
            target: &a.target,
            stream: a.stream.as_deref(),
            timeout: a.timeout,
            repo: a.common.repo.as_deref(),
            json: a.common.json,
        }),
    )
}
