//! The tools people and sessions type. Each module is one tool's whole behaviour; its binary in
//! src/bin/ only parses arguments.

pub mod build_renderer;
pub mod claim;
pub mod guard; // guard's own commands: install, uninstall, doctor, explain, log, hook mode
pub mod leases; // claim, release and status with leases on the git remote
pub mod progress; // the live line (or plain lines) of every wait
pub mod release;
pub mod release_checks; // the checks release runs: the config's, or derived from the repo
pub mod reload_plugin;
pub mod report; // the round's rows and problems: what status prints, waits on and redraws
pub mod status;
pub mod statusline; // status --statusline: one line for one session's status bar
pub mod wait_milestone;
pub mod watch; // status --watch: the live view of the round

use crate::config::Config;
use crate::exit::{Code, fail};
use crate::sessions::caller::Caller;
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

/// The session id the environment names: a label for records, never proof of who the caller is
/// (that is `sessions::caller`).
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

/// A default command runs the project's own tool with `npx --no-install <tool>`, so it never
/// downloads one. When the repo does not have that tool (no `node_modules/.bin/<tool>`), this
/// says so and names the config `key` that sets another command; `None` when the command is
/// not of that form or the tool is there.
pub fn missing_project_tool(root: &Path, command: &str, key: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    if words.next() != Some("npx") {
        return None;
    }
    let mut no_install = false;
    let tool = loop {
        let w = words.next()?;
        match w {
            "--no-install" | "--no" => no_install = true,
            w if w.starts_with('-') => {}
            w => break w,
        }
    };
    let bin = root.join("node_modules").join(".bin");
    let present = ["", ".cmd", ".exe"]
        .iter()
        .any(|ext| bin.join(format!("{tool}{ext}")).is_file());
    (no_install && !present).then(|| {
        format!(
            "`{command}` runs {tool}, which this repo does not have (no node_modules/.bin/{tool}): install the project's dependencies (npm install), or set {key} in session-lock/config.json"
        )
    })
}

/// `text` without terminal escape sequences (colors, cursor moves), for output tails shown in
/// messages and JSON.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters, then one final byte in @..~.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Reads one lock, turning a broken file into a clear error.
pub fn read_lock(layout: &Layout, stream: &str) -> anyhow::Result<Option<crate::state::Held>> {
    layout
        .read_lock(stream)
        .map_err(|e| fail(Code::Failure, e.to_string()))
}

/// The stream's lock, which must exist and, when run inside a Claude Code session, belong to
/// that session. `missing` says what a missing lock means to this tool.
pub fn callers_lock(
    layout: &Layout,
    stream: &str,
    missing: impl FnOnce() -> String,
) -> anyhow::Result<crate::state::Held> {
    acting_for(layout, stream, missing).map(|(held, _)| held)
}

/// The stream's lock and who runs this command, proven from the process tree (see
/// `sessions::caller`): inside the holder's tree, or outside every live session's tree (a person
/// at a terminal). Inside another session's tree it is refused, whatever the environment says.
pub fn acting_for(
    layout: &Layout,
    stream: &str,
    missing: impl FnOnce() -> String,
) -> anyhow::Result<(crate::state::Held, Caller)> {
    let held = read_lock(layout, stream)?.ok_or_else(|| fail(Code::NotFound, missing()))?;
    let (locks, _) = layout.read_locks();
    let caller = crate::sessions::caller::current(&locks);
    if let Some(me) = caller.session()
        && me != held.record.session_id
    {
        return Err(fail(
            Code::Conflict,
            format!(
                "stream '{stream}' is held by session {}; this command runs inside session {}'s process tree, so it cannot act for that stream",
                crate::state::short_id(&held.record.session_id),
                crate::state::short_id(me)
            ),
        ));
    }
    if let Caller::Detached { why } = &caller {
        return Err(fail(
            Code::Refused,
            format!(
                "this command runs outside every session's process tree but not from a terminal: {why}. A process a session left behind cannot act for stream '{stream}'; run it from the session that holds the stream, or from a terminal"
            ),
        ));
    }
    Ok((held, caller))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_codes_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[31merror\u{1b}[0m TS2304: \u{1b}[1;4mx\u{1b}[m"),
            "error TS2304: x"
        );
        assert_eq!(
            strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\ ok"),
            "link ok"
        );
        assert_eq!(strip_ansi("plain ünï"), "plain ünï");
    }

    #[test]
    fn a_missing_project_tool_is_named_with_its_config_key() {
        let dir = tempfile::tempdir().unwrap();
        let msg = missing_project_tool(dir.path(), "npx --no-install vite build", "build.command")
            .unwrap();
        assert!(
            msg.contains("runs vite") && msg.contains("set build.command"),
            "{msg}"
        );
        assert_eq!(missing_project_tool(dir.path(), "npm run build", "k"), None);
        assert_eq!(
            missing_project_tool(dir.path(), "npx vite build", "k"),
            None
        );
        std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
        std::fs::write(dir.path().join("node_modules/.bin/vite"), "").unwrap();
        assert_eq!(
            missing_project_tool(dir.path(), "npx --no-install vite build", "k"),
            None
        );
    }
}
