//! The tools people and sessions type. Each module is one tool's whole behaviour; its binary in
//! src/bin/ only parses arguments.

pub mod build_renderer;
pub mod claim;
pub mod guard; // guard's own commands: install, uninstall, doctor, explain, log, hook mode
pub mod release;
pub mod reload_plugin;
pub mod status;
pub mod wait_milestone;

use crate::config::Config;
use crate::exit::{Code, fail};
use crate::state::Layout;
use std::path::{Path, PathBuf};

/// The repo a tool acts on: `--repo`, else `CLAUDE_PROJECT_DIR`, else the git top level of the
/// current directory.
pub fn repo_root(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        if !dir.is_dir() {
            return Err(fail(
                Code::Usage,
                format!("--repo {}: not a folder", dir.display()),
            ));
        }
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir()?;
    let project = std::env::var("CLAUDE_PROJECT_DIR").ok();
    crate::state::repo_root(&cwd, project.as_deref()).ok_or_else(|| {
        fail(
            Code::Usage,
            format!(
                "{} is not inside a git repo (use --repo DIR)",
                cwd.display()
            ),
        )
    })
}

/// The repo's config and state layout.
pub fn open(flag: Option<&Path>) -> anyhow::Result<(PathBuf, Config, Layout)> {
    let root = repo_root(flag)?;
    let config = Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let layout = Layout::new(&root);
    Ok((root, config, layout))
}

/// The calling session, when run from inside a Claude Code session.
pub fn caller_session() -> Option<String> {
    std::env::var("CLAUDE_CODE_SESSION_ID")
        .ok()
        .filter(|s| !s.is_empty())
}

/// Checks a stream name given on the command line.
pub fn check_stream_name(name: &str) -> anyhow::Result<()> {
    match crate::plans::stream_name_problem(name) {
        None => Ok(()),
        Some(problem) => Err(fail(
            Code::Usage,
            format!("'{name}' is not a stream name ({problem})"),
        )),
    }
}

/// A command line run through the platform shell (`sh -c`, or `cmd /C` on Windows).
pub fn shell(command: &str) -> std::process::Command {
    #[cfg(windows)]
    {
        // cmd parses its own command line: hand it over verbatim, not re-quoted.
        use std::os::windows::process::CommandExt;
        let mut c = std::process::Command::new("cmd");
        c.arg("/C").raw_arg(command);
        c
    }
    #[cfg(not(windows))]
    {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(command);
        c
    }
}

/// Reads one lock, turning a broken file into a clear error.
pub fn read_lock(layout: &Layout, stream: &str) -> anyhow::Result<Option<crate::state::Held>> {
    layout
        .read_lock(stream)
        .map_err(|e| fail(Code::Failure, e.to_string()))
}

/// The text every session is shown when it claims: the repo's PROTOCOL.md if present, else the
/// suite's built-in copy.
pub fn protocol_text(layout: &Layout) -> String {
    std::fs::read_to_string(layout.dir.join("PROTOCOL.md"))
        .unwrap_or_else(|_| guard::PROTOCOL.to_string())
}

/// The stream's lock, which must exist and, when run inside a Claude Code session, belong to
/// that session. `missing` says what a missing lock means to this tool.
pub fn callers_lock(
    layout: &Layout,
    stream: &str,
    missing: impl FnOnce() -> String,
) -> anyhow::Result<crate::state::Held> {
    let held = read_lock(layout, stream)?.ok_or_else(|| fail(Code::NotFound, missing()))?;
    if let Some(me) = caller_session()
        && me != held.record.session_id
    {
        return Err(fail(
            Code::Conflict,
            format!(
                "stream '{stream}' is held by session {}, not by this session ({})",
                crate::state::short_id(&held.record.session_id),
                crate::state::short_id(&me)
            ),
        ));
    }
    Ok(held)
}
