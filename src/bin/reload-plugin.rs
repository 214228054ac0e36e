//! reload-plugin: reload one plugin's backend in the running app without restarting it.

use clap::{CommandFactory, Parser};
use session_lock::cli::{self, Common};
use session_lock::exit;
use session_lock::tools::reload_plugin::{self, Options};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  reload-plugin notes --dry-run                  show the plan: commands, paths, URLs
  reload-plugin notes --bridge http://127.0.0.1:3917
  SESSION_LOCK_BRIDGE_URL=http://127.0.0.1:3917 reload-plugin notes --json
  reload-plugin notes --user-data /tmp/app-data  copy into another user-data folder
";

#[derive(Parser)]
#[command(
    name = "reload-plugin",
    version,
    about = "Reload one plugin's backend without restarting the app: typecheck, emit, copy main/ to the app's user data, toggle it twice, broadcast a reload.",
    long_about = "Reload one plugin's backend without restarting the app (a restart ends every session running inside it).\n\nSteps: check (the plugin is not protected, the bridge is loopback), typecheck, emit, copy <pluginFolder>/main to the user-data plugin folder, toggle the plugin twice through the app's loopback bridge, broadcast a reload on the plugin's channel, and list every repo file the emit wrote outside the plugin's folder (it rewrites every plugin's output, other sessions' too). A failing step stops the run and names the step. Every step is configured in the reloadPlugin section of session-lock/config.json.\n\nThe bridge URL comes from --bridge, else SESSION_LOCK_BRIDGE_URL, else reloadPlugin.bridgeUrl; it must be http:// on 127.0.0.0/8, ::1 or localhost."
)]
struct Cli {
    /// The plugin's id (its folder name under plugins-library/).
    id: String,
    #[command(flatten)]
    common: Common,
    /// Show the plan (commands, paths, URLs, bodies); run, write and call nothing.
    #[arg(long)]
    dry_run: bool,
    /// The app's bridge server, e.g. http://127.0.0.1:3917 (loopback only).
    #[arg(long, value_name = "URL")]
    bridge: Option<String>,
    /// The app's user-data folder (the copy goes to <DIR>/plugins/<id>/main by default).
    #[arg(long, value_name = "DIR")]
    user_data: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    let help = format!("{EXAMPLES}\n{}", exit::help(exit::tools::RELOAD_PLUGIN));
    let cli: Cli =
        session_lock::cli::parse_command("reload-plugin", Cli::command().after_help(help));
    // Under --json the tool prints its own report (ok: false and the failed step) on failure.
    cli::finish(
        "reload-plugin",
        reload_plugin::run(&Options {
            id: cli.id,
            repo: cli.common.repo,
            json: cli.common.json,
            dry_run: cli.dry_run,
            bridge: cli.bridge,
            user_data: cli.user_data,
        }),
    )
}
