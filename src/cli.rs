//! What every binary shares: the one exit path and the common flags.

use crate::exit::{Code, Exit};
use std::io::Write;

/// Ends a tool: prints `<tool>: <message>` on stderr for an error and maps it to its exit code.
/// Every binary except `guard`'s hook mode returns through here.
pub fn finish(tool: &str, result: anyhow::Result<Code>) -> std::process::ExitCode {
    finish_json(tool, false, result)
}

/// [`finish`] for a tool run with `--json`: an error also prints one JSON object on stdout,
/// `{"ok": false, "error": "<code name>", "code": N, "message": "…"}`.
pub fn finish_json(tool: &str, json: bool, result: anyhow::Result<Code>) -> std::process::ExitCode {
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            let code = err
                .chain()
                .find_map(|e| e.downcast_ref::<Exit>().map(|x| x.code))
                .unwrap_or(Code::Failure);
            let mut text = String::new();
            for (i, cause) in err.chain().enumerate() {
                if i > 0 {
                    text.push_str(": ");
                }
                text.push_str(&cause.to_string());
            }
            if json {
                let _ = print_json(&json_error(code, &text));
            }
            let _ = writeln!(std::io::stderr(), "{tool}: {text}");
            code
        }
    };
    let _ = std::io::stdout().flush();
    std::process::ExitCode::from(code.as_i32() as u8)
}

/// The one JSON object a `--json` run prints when it fails.
pub fn json_error(code: Code, message: &str) -> serde_json::Value {
    serde_json::json!({"ok": false, "error": code.name(), "code": code.as_i32(), "message": message})
}

/// Parses the command line of `tool`; see [`parse_command`].
pub fn parse<T: clap::Parser>(tool: &str) -> T {
    parse_command(tool, T::command())
}

/// Parses the command line with `command` (a `T::command()` the binary may have added help
/// to). A wrong command line prints `<tool>: <clap's message>` (and, with `--json` among the
/// arguments, the JSON error object on stdout) and exits 2; `--help` and `--version` print as
/// clap does and exit 0.
pub fn parse_command<T: clap::FromArgMatches>(tool: &str, command: clap::Command) -> T {
    command
        .try_get_matches()
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| usage_exit(tool, e))
}

/// clap's message of a wrong command line without its `error: ` prefix: the whole text, and
/// the message up to its usage line on one line (what a JSON error or a one-line result
/// carries: `the following required arguments were not provided: --cwd <DIR>`).
pub fn usage_message(e: &clap::Error) -> (String, String) {
    let rendered = e.render().to_string();
    let text = rendered
        .strip_prefix("error: ")
        .unwrap_or(&rendered)
        .trim_end()
        .to_string();
    let first = text
        .lines()
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let first = if first.is_empty() {
        "bad arguments".to_string()
    } else {
        first
    };
    (text, first)
}

fn usage_exit(tool: &str, e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit();
    }
    let (text, first) = usage_message(&e);
    let json = std::env::args()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if json {
        let _ = print_json(&json_error(Code::Usage, &first));
    }
    let _ = writeln!(std::io::stderr(), "{tool}: {text}");
    std::process::exit(Code::Usage.as_i32());
}

/// Flags shared by the tools that read the repo's state.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Common {
    /// The repo to act on (default: CLAUDE_PROJECT_DIR if set, else the git top level of the
    /// current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub repo: Option<std::path::PathBuf>,
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Prints a serializable value as one line of JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string(value)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(())
}
