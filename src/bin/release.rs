use clap::Parser;
use session_lock::{cli, exit, tools::release};

#[derive(Parser)]
#[command(
    name = "release",
    version,
    about = "Finish a stream through the release gate.",
    long_about = "Runs every command of `releaseChecks` in session-lock/config.json from the repo root (without it, checks derived from the repo: package.json's typecheck script, else `tsc --noEmit -p` of the tsconfig projects at the top, else none; `guard install` and `guard doctor` say which) and checks that every file the stream owns is committed (modified, staged and untracked files all count). When both pass it writes session-lock/<stream>.done, and milestones/ms-NN.done when that was the milestone's last stream. On failure it says exactly which check failed (with the end of its output) or which files are not committed. Only the session holding the stream may release it: the caller is proven from the process tree (the tool runs below the client process its lock records), never from CLAUDE_CODE_SESSION_ID. Inside another session's tree it is refused (exit 4) whatever the environment says; outside every session's tree (a person at a terminal) it releases and says whose stream it was. A process cut off from the shell that started it (setsid, a detached background job whose shell is gone) is not a person at a terminal: refused (exit 8).",
    after_help = format!(
        "Examples:\n  release api\n  release api --json\n\n{}",
        exit::help(exit::tools::RELEASE)
    )
)]
struct Args {
    /// The stream to release; write it literally (the guard blocks `release $S`).
    stream: String,
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> std::process::ExitCode {
    let a: Args = cli::parse("release");
    cli::finish_json(
        "release",
        a.common.json,
        release::run(release::Args {
            stream: &a.stream,
            repo: a.common.repo.as_deref(),
            json: a.common.json,
        }),
    )
}
