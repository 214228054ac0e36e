//! `guard`'s own commands, beside its hook mode: `install`, `uninstall`, `doctor`, `explain`,
//! `log`. The binary only parses arguments; each command is one module here.
//!
//! What install wires, and uninstall removes again:
//!
//! ```text
//! .claude/settings.json        one guard entry per hook event (others' hooks kept)
//! .codex/hooks.json            the same for Codex CLI, .gemini/settings.json for Gemini CLI,
//!                              when install wires them (`--agent`, or found on PATH)
//! .mcp.json                    the messaging tools' server, started through the launcher
//! .claude/settings.local.json  that server's approval, and the status line unless a settings
//!                              file the session reads has one (the person's own file: git-ignored)
//! .gitignore                   the session-lock lines (after a comment line naming them)
//! session-lock/PROTOCOL.md     the protocol every session can read in full
//! session-lock/guard-hook      the launcher the hook entries, the MCP server and the status
//!                              line run (committed): it finds the suite on this machine, or
//!                              blocks and says it is missing
//! ~/.claude/settings.json       the user-scope entry, one per hook event: `<guard> --user-scope`
//!                              (or `$CLAUDE_CONFIG_DIR/settings.json`). The client reads a
//!                              repo's settings only in the folder a session starts in; this
//!                              entry reaches sessions started in a subfolder, and is a no-op at
//!                              a top level and outside wired repos
//! session-lock/install-backup.json
//!                              the files as they were before the first install (not
//!                              committed), so uninstall on this machine restores them byte
//!                              for byte
//! ```
//!
//! The JSON files are edited in their own text (`wiring`, `json_edit`): a diff shows only the
//! added block, and every file keeps its mode.

pub mod agents; // Codex CLI's and Gemini CLI's hook config: what install writes, what doctor checks
pub mod doctor;
pub mod explain;
pub mod install;
pub mod log;
pub mod wiring;

use crate::exit::{Code, fail};
use crate::hook::USER_SCOPE;
use std::path::{Path, PathBuf};

/// The protocol text every session is shown, installed as `session-lock/PROTOCOL.md`.
pub const PROTOCOL: &str = include_str!("../../../PROTOCOL.md");

/// The launcher the hook entries run, installed as `session-lock/guard-hook`.
pub const LAUNCHER: &str = include_str!("guard-hook.sh");

/// The hook command every entry runs: the committed launcher, found through the folder the
/// client started the session in (`CLAUDE_PROJECT_DIR`, the folder of `.claude/settings.json`).
pub const HOOK_COMMAND: &str = "sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\"";

/// The status line install offers: `status --statusline` through the launcher (the client sets
/// `CLAUDE_PROJECT_DIR` for it too, and gives it the session's JSON on stdin).
pub const STATUSLINE_COMMAND: &str =
    "sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\" --tool status --statusline";

/// How often the client runs the status line when nothing else redraws it, in seconds.
pub const STATUSLINE_REFRESH_S: u64 = 10;

/// The command of the messaging server the client starts from `.mcp.json`: `send-message mcp`
/// through the launcher, so the committed file names no path of one machine. The client
/// expands `${VAR}` in `.mcp.json` from its own environment, which has no `CLAUDE_PROJECT_DIR`;
/// the server's environment has it, so the shell reads it (`$VAR` is not the client's form).
pub const MCP_SHELL: &str =
    "exec sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\" --tool send-message mcp";

/// The `.mcp.json` entry: through the launcher, or (`guard`: a program given by path, for
/// settings that are not shared) the `send-message` beside that guard.
pub fn mcp_entry(guard: Option<&Path>) -> serde_json::Value {
    match guard {
        None => serde_json::json!({"type": "stdio", "command": "sh", "args": ["-c", MCP_SHELL]}),
        Some(g) => serde_json::json!({
            "type": "stdio",
            "command": crate::messaging::mcp::wire::beside(g).to_string_lossy(),
            "args": ["mcp"],
        }),
    }
}

/// The status line command: through the launcher, or the `status` beside a guard given by path.
pub fn statusline_command(guard: Option<&Path>) -> String {
    match guard {
        None => STATUSLINE_COMMAND.to_string(),
        Some(g) => format!(
            "{} --statusline",
            install::shell_quote(
                &g.with_file_name(format!("status{}", std::env::consts::EXE_SUFFIX))
                    .to_string_lossy()
            )
        ),
    }
}

/// The hook events the guard handles, with the matcher each entry uses.
pub const EVENTS: [(&str, Option<&str>); 6] = [
    ("PreToolUse", Some("*")),
    ("PostToolUse", Some("*")),
    ("SessionStart", None),
    ("SessionEnd", None),
    ("UserPromptSubmit", None),
    ("Stop", None),
];

/// The `.gitignore` lines: everything in session-lock/ but the committed files, and the
/// person's own Claude Code settings (install writes the server's approval there).
pub const GITIGNORE: [&str; 5] = [
    "session-lock/*",
    "!session-lock/PROTOCOL.md",
    "!session-lock/config.json",
    "!session-lock/guard-hook",
    ".claude/settings.local.json",
];

/// The comment line install writes above the lines it adds to `.gitignore`.
pub const GITIGNORE_COMMENT: &str = "# session-lock: only PROTOCOL.md, config.json and guard-hook are committed; settings.local.json is yours";

/// How every comment install ever wrote above its lines begins.
pub const GITIGNORE_COMMENT_PREFIX: &str = "# session-lock: only PROTOCOL.md";

/// The files of one repo that install writes.
#[derive(Clone, Debug)]
pub struct Wiring {
    pub root: PathBuf,
    pub settings: PathBuf,
    /// `.claude/settings.local.json`: the person's own settings.
    pub local: PathBuf,
    /// `.mcp.json`, where the client reads project MCP servers.
    pub mcp: PathBuf,
    pub gitignore: PathBuf,
    pub protocol: PathBuf,
    pub launcher: PathBuf,
    pub backup: PathBuf,
    /// The user's Claude Code settings (`$CLAUDE_CONFIG_DIR/settings.json` or
    /// `~/.claude/settings.json`), where the user-scope entry goes; `None` without a home.
    pub user: Option<PathBuf>,
}

impl Wiring {
    pub fn new(root: &Path) -> Wiring {
        let dir = root.join("session-lock");
        Wiring {
            root: root.to_path_buf(),
            settings: root.join(".claude").join("settings.json"),
            local: crate::messaging::mcp::wire::local_settings(root),
            mcp: crate::messaging::mcp::wire::mcp_json(root),
            gitignore: root.join(".gitignore"),
            protocol: dir.join("PROTOCOL.md"),
            launcher: dir.join("guard-hook"),
            backup: dir.join("install-backup.json"),
            user: crate::platform::this()
                .claude_config_dir()
                .map(|d| d.join("settings.json")),
        }
    }
}

/// The repo a guard command acts on, given as `REPO` or the git top level of the current
/// folder. It must be a git top level: the client reads `.claude/settings.json` from the folder
/// a session starts in, and sessions start at the top.
pub fn target_repo(given: Option<&Path>, command: &str) -> anyhow::Result<PathBuf> {
    let Some(dir) = given else {
        let cwd = std::env::current_dir()?;
        return crate::state::git_top(&cwd).ok_or_else(|| {
            fail(
                Code::Usage,
                format!(
                    "the current folder {} is not inside a git repo; name one: guard {command} REPO",
                    cwd.display()
                ),
            )
        });
    };
    if !dir.exists() {
        return Err(fail(
            Code::Usage,
            format!("{}: no such folder", dir.display()),
        ));
    }
    if !dir.is_dir() {
        return Err(fail(
            Code::Usage,
            format!("{}: not a folder", dir.display()),
        ));
    }
    let full = std::path::absolute(dir)?;
    match crate::state::git_top(&full) {
        Some(top) if top == full || same_file(&top, &full) => Ok(full),
        Some(top) => Err(fail(
            Code::Usage,
            format!(
                "{} is inside the git repo {}, not its top level; sessions start at the top, so wire that: guard {command} {}",
                dir.display(),
                top.display(),
                install::shell_quote(&top.to_string_lossy())
            ),
        )),
        None => Err(fail(
            Code::Usage,
            format!(
                "{} is not in a git repo (run `git init` there first)",
                dir.display()
            ),
        )),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The guard's commands among the entries of `event` in a hooks config (`hooks.<event>: [{hooks:
/// [{command}]}]`, the shape Claude Code, Codex and Gemini share).
pub fn guard_commands_of<'a>(doc: &'a serde_json::Value, event: &str) -> Vec<&'a str> {
    use serde_json::Value;
    doc.get("hooks")
        .and_then(|h| h.get(event))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(Value::as_str))
        .filter(|c| is_guard_command(c))
        .collect()
}

/// The program a hook command starts: its first word, unquoted (`'/a b/guard' x` → `/a b/guard`).
pub fn command_program(cmd: &str) -> &str {
    let cmd = cmd.trim();
    let first = cmd.trim_start_matches(['\'', '"']);
    if cmd.starts_with(['\'', '"']) {
        &first[..first.find(['\'', '"']).unwrap_or(first.len())]
    } else {
        first.split_whitespace().next().unwrap_or("")
    }
}

/// Does a hook command run the committed launcher?
pub fn runs_launcher(cmd: &str) -> bool {
    let cmd = cmd.trim();
    cmd == HOOK_COMMAND || cmd.contains("session-lock/guard-hook")
}

/// The user-scope entry's command: the guard program by path with [`USER_SCOPE`] (it serves
/// every wired repo of the user, so it names no repo's launcher).
pub fn user_scope_command(guard: &Path) -> String {
    format!(
        "{} {USER_SCOPE}",
        install::shell_quote(&guard.to_string_lossy())
    )
}

/// Whether a hook command is the user-scope entry.
pub fn is_user_scope_command(cmd: &str) -> bool {
    is_guard_command(cmd) && cmd.trim_end().ends_with(USER_SCOPE)
}

/// True when a hook command runs the guard: the launcher, or a guard program by path.
pub fn is_guard_command(cmd: &str) -> bool {
    if runs_launcher(cmd) {
        return !cmd.contains("--tool");
    }
    crate::shell::word::command_name(command_program(cmd)) == "guard"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_guard_commands() {
        assert!(is_guard_command(HOOK_COMMAND));
        assert!(is_guard_command("/home/u/.cargo/bin/guard"));
        assert!(is_guard_command("'/a b/guard'"));
        assert!(is_guard_command("C:\\tools\\guard.exe"));
        assert!(!is_guard_command("other-hook"));
        assert!(!is_guard_command("/bin/guardian"));
        assert!(
            !is_guard_command(STATUSLINE_COMMAND),
            "the status line runs the launcher, not the guard"
        );
        assert_eq!(command_program("'/a b/guard' x"), "/a b/guard");
        assert_eq!(command_program("/usr/bin/guard --x"), "/usr/bin/guard");
    }
}
