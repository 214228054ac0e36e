//! send-message: sessions on one machine find each other and send each other messages.
//! See `send-message --help`.

use clap::Parser;
use session_lock::{cli, exit, messaging};

const AFTER: &str = "Examples:
  send-message list
  send-message send --to api-worker --summary \"schema done\" \"the migration is in; rebase\"
  echo \"long text\" | send-message send --to \"api worker\" -
  send-message status 0f3c9a1b-…
  send-message review --accept <message id>
  send-message serve &      # programs in any language: one JSON request per connection

Send statuses: delivered (in the target's transcript), accepted (the target's hook hands it over
at its next tool call), queued (kept; confirmed or retried later), held (the target reviews it,
or its client holds it for the sender's mode), duplicate, refused, not_found, ambiguous, self.
";

#[derive(Parser)]
#[command(
    name = "send-message",
    version,
    about = "Let Claude Code sessions on one machine list each other and send each other messages, with authorization, limits, durable ledgers, inbound review, and cold wake.",
    after_help = format!("{AFTER}\n{}", exit::help(exit::tools::SEND_MESSAGE))
)]
struct Cli {
    #[command(flatten)]
    common: cli::Common,
    #[command(subcommand)]
    command: messaging::cli::Command,
}

fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    cli::finish(
        "send-message",
        messaging::cli::run(&args.common, args.command),
    )
}
