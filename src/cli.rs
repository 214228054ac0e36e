//! What every binary shares: the one exit path and the common flags.

use crate::exit::{Code, Exit};
use std::io::Write;

/// Ends a tool: prints `<tool>: <message>` on stderr for an error and maps it to its exit code.
/// Every binary except `guard` returns through here.
pub fn finish(tool: &str, result: anyhow::Result<Code>) -> std::process::ExitCode {
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
            let _ = writeln!(std::io::stderr(), "{tool}: {text}");
            code
        }
    };
    let _ = std::io::stdout().flush();
    std::process::ExitCode::from(code.as_i32() as u8)
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
