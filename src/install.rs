//! Wiring the suite into a repo (`guard install`): hook entries merged into
//! `.claude/settings.json`, the `.gitignore` lines, and `session-lock/PROTOCOL.md`. Running it
//! twice changes nothing.

use crate::exit::{Code, fail};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The protocol text every session is shown, installed as `session-lock/PROTOCOL.md`.
pub const PROTOCOL: &str = include_str!("../PROTOCOL.md");

/// The hook events the guard handles, with the matcher each entry uses.
pub const EVENTS: [(&str, Option<&str>); 6] = [
    ("PreToolUse", Some("*")),
    ("PostToolUse", Some("*")),
    ("SessionStart", None),
    ("SessionEnd", None),
    ("UserPromptSubmit", None),
    ("Stop", None),
];

/// The `.gitignore` lines: everything in session-lock/ but the committed files.
pub const GITIGNORE: [&str; 3] = [
    "session-lock/*",
    "!session-lock/PROTOCOL.md",
    "!session-lock/config.json",
];

/// What `install` did to each file.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

/// Quotes a path for the `sh -c` the client runs hooks with.
pub fn shell_quote(s: &str) -> String {
    crate::shell::word::quote_posix(s).into_owned()
}

fn is_guard_command(cmd: &str) -> bool {
    let first = cmd.trim().trim_start_matches(['\'', '"']);
    let end = first.find(['\'', '"']).unwrap_or(first.len());
    let program = first[..end].split_whitespace().next().unwrap_or("");
    let program = if first[..end].contains(' ')
        && (cmd.trim().starts_with('\'') || cmd.trim().starts_with('"'))
    {
        &first[..end]
    } else {
        program
    };
    crate::hook::lifecycle::head_name(program) == "guard"
}

/// Merges the guard's hook entries into a settings document, keeping everything else. Old guard
/// entries (any path) are replaced, so re-running with a new path updates them.
pub fn merge_settings(mut doc: Value, command: &str, timeout_s: u64) -> Result<Value, String> {
    let Some(root) = doc.as_object_mut() else {
        return Err("the settings file is not a JSON object".into());
    };
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err("\"hooks\" is not an object".into());
    };
    for (event, matcher) in EVENTS {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(format!("\"hooks.{event}\" is not a list"));
        };
        // Drop our old entries, keep everyone else's.
        for group in list.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_guard_command)
                });
            }
        }
        list.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|h| !h.is_empty())
        });
        let mut group = Map::new();
        if let Some(m) = matcher {
            group.insert("matcher".into(), json!(m));
        }
        group.insert(
            "hooks".into(),
            json!([{"type": "command", "command": command, "timeout": timeout_s}]),
        );
        list.push(Value::Object(group));
    }
    Ok(doc)
}

fn write_if_changed(path: &Path, text: &str, report: &mut Report) -> anyhow::Result<()> {
    let old = crate::atomic::read_optional(path)?;
    if old.as_deref() == Some(text) {
        report.unchanged.push(path.display().to_string());
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::atomic::write_atomic(path, text.as_bytes())?;
    report.changed.push(path.display().to_string());
    Ok(())
}

/// Wires `repo`. `guard` is the hook command's program path.
pub fn install(repo: &Path, guard: &Path, timeout_s: u64) -> anyhow::Result<Report> {
    if !repo.is_dir() {
        return Err(fail(
            Code::Usage,
            format!("{}: not a folder", repo.display()),
        ));
    }
    let mut report = Report::default();
    let settings_path: PathBuf = repo.join(".claude").join("settings.json");
    let doc = match crate::atomic::read_optional(&settings_path)? {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(&text).map_err(|e| {
            fail(
                Code::Usage,
                format!(
                    "{}: not valid JSON ({e}); nothing changed",
                    settings_path.display()
                ),
            )
        })?,
        _ => json!({}),
    };
    let command = shell_quote(&guard.to_string_lossy());
    let merged = merge_settings(doc, &command, timeout_s).map_err(|e| {
        fail(
            Code::Usage,
            format!("{}: {e}; nothing changed", settings_path.display()),
        )
    })?;
    let mut settings_text = serde_json::to_string_pretty(&merged)?;
    settings_text.push('\n');

    let gi_path = repo.join(".gitignore");
    let gi_old = crate::atomic::read_optional(&gi_path)?.unwrap_or_default();
    let mut gi_new = gi_old.clone();
    let present: Vec<&str> = gi_old.lines().map(str::trim).collect();
    let missing: Vec<&str> = GITIGNORE
        .iter()
        .copied()
        .filter(|l| !present.contains(l))
        .collect();
    if !missing.is_empty() {
        if !gi_new.is_empty() && !gi_new.ends_with('\n') {
            gi_new.push('\n');
        }
        gi_new.push_str("# session-lock: only PROTOCOL.md and config.json are committed\n");
        for l in missing {
            gi_new.push_str(l);
            gi_new.push('\n');
        }
    }

    crate::messaging::mcp::wire::install_for(
        repo,
        guard,
        &mut report.changed,
        &mut report.unchanged,
    )?;
    write_if_changed(&settings_path, &settings_text, &mut report)?;
    write_if_changed(&gi_path, &gi_new, &mut report)?;
    write_if_changed(
        &repo.join("session-lock").join("PROTOCOL.md"),
        PROTOCOL,
        &mut report,
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let doc = json!({
            "model": "x",
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-hook"}]}]}
        });
        let once = merge_settings(doc, "/opt/bin/guard", 10).unwrap();
        let twice = merge_settings(once.clone(), "/opt/bin/guard", 10).unwrap();
        assert_eq!(once, twice);
        assert_eq!(once["model"], "x");
        let pre = once["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "other-hook");
        assert_eq!(pre[1]["matcher"], "*");
        assert_eq!(pre[1]["hooks"][0]["timeout"], 10);
        let moved = merge_settings(once, "'/new place/guard'", 10).unwrap();
        let pre = moved["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "old guard entry replaced, not duplicated");
        assert_eq!(pre[1]["hooks"][0]["command"], "'/new place/guard'");
    }

    #[test]
    fn recognizes_guard_commands() {
        assert!(is_guard_command("/home/u/.cargo/bin/guard"));
        assert!(is_guard_command("'/a b/guard'"));
        assert!(is_guard_command("C:\\tools\\guard.exe"));
        assert!(!is_guard_command("other-hook"));
        assert!(!is_guard_command("/bin/guardian"));
    }

    #[test]
    fn bad_settings_shapes_are_errors() {
        assert!(merge_settings(json!([]), "g", 1).is_err());
        assert!(merge_settings(json!({"hooks": []}), "g", 1).is_err());
        assert!(merge_settings(json!({"hooks": {"Stop": {}}}), "g", 1).is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/usr/bin/guard"), "/usr/bin/guard");
        assert_eq!(shell_quote("/a b/guard"), "'/a b/guard'");
        assert_eq!(shell_quote("/it's/guard"), r"'/it'\''s/guard'");
    }
}
