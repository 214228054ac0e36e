//! send-message: sessions on one machine find each other and send each other messages.
//! See `send-message --help`.

use clap::Parser;
use session_lock::{cli, exit, messaging};

const AFTER: &str = "Examples:
  send-message list
  send-message send --to api-worker --summary \"schema done\" \"the migration is in; rebase\"
  echo \"long text\" | send-message send --to \"api worker\" -
  send-message send --wait=120 --to sleeper \"wake up and read this\"
  send-message status 0f3c9a1b-…
  send-message review --accept <message id>
  send-message serve &      # programs in any language: one JSON request per connection
  send-message mcp          # the MCP server a session's client starts (see guard install):
                            # tools list_session_agents and send_session_message

Send statuses: delivered (the target's model has it), accepted (its client took it; its model
sees it at its next request), queued (kept; moved on later: the target's hook, its next run, or
anyone's next command), waking (the target is not running; a detached wake resumes it),
held (the target reviews it, or its client holds it for the sender's mode), duplicate,
refused, not_found, ambiguous, self. send exits 0 for delivered/accepted/queued/waking/held/
duplicate, 8 refused/self, 6 not_found, 2 ambiguous; send --wait exits 5 when not delivered in
time.
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
    let args: Cli = cli::parse("send-message");
    cli::finish(
        "send-message",
        messaging::cli::run(&args.common, args.command),
    )
}
