use clap::Parser;
use session_lock::{cli, exit, tools::claim};

#[derive(Parser)]
#[command(
    name = "claim",
    version,
    about = "Take a stream: the first command of every session.",
    long_about = "Run it with the Bash tool of a Claude Code session: `claim <stream>`. The guard hook sees the command before it runs and records session-lock/<stream>.lock with the session's real id and the plan's `owns`; claim then reads the lock back, checks it is this session's, and prints the globs you own, who owns what else, and a short summary of the rules that bind the session (at most 4,000 characters: it goes into the model's context) with a pointer to the full session-lock/PROTOCOL.md. If another live session holds the stream, the hook blocks the call and claim never runs.",
    after_help = format!(
        "Examples:\n  claim api\n  claim api --json\n  claim api --offline   (leases on a git remote that is down: claim here only)\n\n{}",
        exit::help(exit::tools::CLAIM)
    )
)]
struct Args {
    /// The stream, as named by its plan (plans/<prefix>-ms-NN-<stream>/plan.md).
    stream: String,
    /// Print only who owns what, not the rules.
    #[arg(long)]
    quiet: bool,
    /// With leases on a git remote (config `leases`) and the remote unreachable: claim here
    /// only; other machines see the claim once the remote is back.
    #[arg(long)]
    offline: bool,
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a: Args = cli::parse("claim");
    cli::finish_json(
        "claim",
        a.common.json,
        claim::run(claim::Args {
            stream: &a.stream,
            repo: a.common.repo.as_deref(),
            json: a.common.json,
            quiet: a.quiet,
            offline: a.offline,
        }),
    )
}
