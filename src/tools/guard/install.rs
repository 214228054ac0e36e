//! `guard install` and `guard uninstall`: the hook entries merged into `.claude/settings.json`,
//! the `.gitignore` lines, `session-lock/PROTOCOL.md` and the hook launcher. Installing twice
//! changes nothing; uninstalling removes exactly what install added (on the machine that
//! installed, the files come back byte for byte from `install-backup.json`).

use super::{
    EVENTS, GITIGNORE, GITIGNORE_COMMENT, HOOK_COMMAND, LAUNCHER, PROTOCOL, Wiring,
    is_guard_command,
};
use crate::atomic;
use crate::exit::{Code, fail};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What install or uninstall did to each file.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
    /// Files left in place because they were edited after install (uninstall only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// The hook command the entries run.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_command: String,
    /// The clients wired (install only), by short name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::clients::Client>,
}

/// Quotes a path for the `sh -c` the client runs hooks with.
pub fn shell_quote(s: &str) -> String {
    crate::shell::word::quote_posix(s).into_owned()
}

/// Removes every guard entry from a settings document, and the lists and `hooks` object that
/// only held guard entries.
pub fn strip_settings(mut doc: Value) -> Result<Value, String> {
    let Some(root) = doc.as_object_mut() else {
        return Err("the settings file is not a JSON object".into());
    };
    let Some(hooks) = root.get_mut("hooks") else {
        return Ok(doc);
    };
    let Some(hooks) = hooks.as_object_mut() else {
        return Err("\"hooks\" is not an object".into());
    };
    for (event, _) in EVENTS {
        let Some(list) = hooks.get_mut(event) else {
            continue;
        };
        let Some(groups) = list.as_array_mut() else {
            return Err(format!("\"hooks.{event}\" is not a list"));
        };
        let before = groups.len();
        for group in groups.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_guard_command)
                });
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|h| !h.is_empty())
        });
        if groups.is_empty() && before > 0 {
            hooks.remove(event);
        }
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
    Ok(doc)
}

/// Merges the guard's hook entries into a settings document, keeping everything else. Old guard
/// entries (any path) are replaced, so re-running with a new command updates them.
pub fn merge_settings(doc: Value, command: &str, timeout_s: u64) -> Result<Value, String> {
    let mut doc = strip_settings(doc)?;
    let root = doc
        .as_object_mut()
        .expect("strip_settings checked the shape");
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("strip_settings checked the shape");
    for (event, matcher) in EVENTS {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("strip_settings checked the shape");
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

/// The `.gitignore` text with the session-lock lines added (after a comment naming them).
pub fn add_ignore_lines(old: &str) -> String {
    let present: Vec<&str> = old.lines().map(str::trim).collect();
    let missing: Vec<&str> = GITIGNORE
        .iter()
        .copied()
        .filter(|l| !present.contains(l))
        .collect();
    let mut new = old.to_string();
    if missing.is_empty() {
        return new;
    }
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !present.contains(&GITIGNORE_COMMENT) {
        new.push_str(GITIGNORE_COMMENT);
        new.push('\n');
    }
    for l in missing {
        new.push_str(l);
        new.push('\n');
    }
    new
}

/// The `.gitignore` text without the lines install adds (and the comment above them).
pub fn remove_ignore_lines(text: &str) -> String {
    let ours = |l: &str| {
        let l = l.trim();
        GITIGNORE.contains(&l) || l.starts_with("# session-lock: only PROTOCOL.md")
    };
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        if !ours(line) {
            out.push_str(line);
        }
    }
    out
}

fn read(path: &Path) -> anyhow::Result<Option<String>> {
    atomic::read_optional(path).map_err(|e| {
        fail(
            Code::Failure,
            format!("cannot read {}: {e}", path.display()),
        )
    })
}

fn parse_settings(path: &Path, text: Option<&str>) -> anyhow::Result<Value> {
    match text {
        Some(t) if !t.trim().is_empty() => serde_json::from_str(t).map_err(|e| {
            fail(
                Code::Usage,
                format!("{}: not valid JSON ({e}); nothing changed", path.display()),
            )
        }),
        _ => Ok(json!({})),
    }
}

fn pretty(doc: &Value) -> String {
    let mut text = serde_json::to_string_pretty(doc).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// One file's planned content: `None` removes it.
struct Planned<'a> {
    path: &'a Path,
    text: Option<String>,
}

fn apply(plan: &[Planned], report: &mut Report) -> anyhow::Result<()> {
    for p in plan {
        let old = read(p.path)?;
        let shown = p.path.display().to_string();
        if old == p.text {
            report.unchanged.push(shown);
            continue;
        }
        match &p.text {
            Some(text) => {
                if let Some(dir) = p.path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        fail(
                            Code::Failure,
                            format!("cannot create {}: {e}", dir.display()),
                        )
                    })?;
                }
                atomic::write_atomic_shared(p.path, text.as_bytes())?;
            }
            None => std::fs::remove_file(p.path).map_err(|e| {
                fail(
                    Code::Failure,
                    format!("cannot remove {}: {e}", p.path.display()),
                )
            })?,
        }
        report.changed.push(shown);
    }
    Ok(())
}

/// The files as they were before the first install, by path relative to the repo (`None`: the
/// file did not exist).
type Backup = BTreeMap<String, Option<String>>;

fn relative(w: &Wiring, path: &Path) -> String {
    path.strip_prefix(&w.root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

fn read_backup(w: &Wiring) -> Backup {
    read(&w.backup)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Wires `repo` (a git top level) for `agents` (as [`super::agents::chosen`] picks them).
/// `guard`: run that program directly instead of the committed launcher (a path valid on this
/// machine only).
pub fn install(
    repo: &Path,
    guard: Option<&Path>,
    timeout_s: u64,
    agents: &[crate::clients::Client],
) -> anyhow::Result<Report> {
    let w = Wiring::new(repo);
    let claude = agents.contains(&crate::clients::Client::Claude);
    // Claude Code's settings are read only when it is wired (a client not wired is left alone).
    let old_settings = if claude { read(&w.settings)? } else { None };
    let doc = parse_settings(&w.settings, old_settings.as_deref())?;
    let command = match guard {
        Some(g) => shell_quote(&g.to_string_lossy()),
        None => HOOK_COMMAND.to_string(),
    };
    let merged = merge_settings(doc, &command, timeout_s).map_err(|e| {
        fail(
            Code::Usage,
            format!("{}: {e}; nothing changed", w.settings.display()),
        )
    })?;
    let old_ignore = read(&w.gitignore)?;
    let others = super::agents::install_plan(repo, agents, guard, timeout_s)
        .map_err(|e| fail(Code::Usage, e))?;
    let mut plan = vec![
        Planned {
            path: &w.settings,
            text: Some(pretty(&merged)),
        },
        Planned {
            path: &w.gitignore,
            text: Some(add_ignore_lines(old_ignore.as_deref().unwrap_or(""))),
        },
        Planned {
            path: &w.protocol,
            text: Some(PROTOCOL.to_string()),
        },
        Planned {
            path: &w.launcher,
            text: Some(LAUNCHER.to_string()),
        },
    ];
    if !claude {
        plan.remove(0);
    }
    plan.extend(others.iter().map(|(path, text)| Planned {
        path,
        text: text.clone(),
    }));
    let mut olds = Vec::new();
    for p in &plan {
        olds.push((relative(&w, p.path), read(p.path)?));
    }
    let changes = plan.iter().zip(&olds).any(|(p, (_, old))| *old != p.text);
    if changes && !w.backup.exists() {
        let backup: Backup = olds.into_iter().collect();
        std::fs::create_dir_all(w.backup.parent().expect("in session-lock/"))?;
        atomic::write_atomic(&w.backup, pretty(&json!(backup)).as_bytes())?;
    }
    let mut report = Report {
        hook_command: command,
        agents: agents.to_vec(),
        ..Report::default()
    };
    // The messaging tools over MCP: the `send-message` beside the guard given, else beside this
    // guard (the client starts an MCP server by its path; PATH is not searched the same way on
    // every platform).
    let this = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("guard"));
    if claude {
        crate::messaging::mcp::wire::install_for(
            repo,
            guard.unwrap_or(&this),
            &mut report.changed,
            &mut report.unchanged,
        )?;
    }
    apply(&plan, &mut report)?;
    Ok(report)
}

/// Removes what install added to `repo`: the guard's hook entries, the `.gitignore` lines, and
/// PROTOCOL.md and the launcher unless they were edited. Everything else stays.
pub fn uninstall(repo: &Path) -> anyhow::Result<Report> {
    let w = Wiring::new(repo);
    let backup = read_backup(&w);
    let before = |path: &Path| backup.get(&relative(&w, path)).cloned();
    let mut report = Report::default();

    let current = read(&w.settings)?;
    let settings = match &current {
        None => None,
        Some(text) => {
            let doc = parse_settings(&w.settings, Some(text))?;
            let stripped = strip_settings(doc.clone()).map_err(|e| {
                fail(
                    Code::Usage,
                    format!("{}: {e}; nothing changed", w.settings.display()),
                )
            })?;
            match before(&w.settings) {
                Some(Some(orig))
                    if serde_json::from_str::<Value>(&orig).ok().as_ref() == Some(&stripped) =>
                {
                    Some(orig)
                }
                // Nothing of ours in it: leave its bytes alone.
                _ if stripped == doc => Some(text.clone()),
                _ if stripped == json!({}) => None,
                _ => Some(pretty(&stripped)),
            }
        }
    };

    let ignore = match read(&w.gitignore)? {
        None => None,
        Some(text) => {
            let stripped = remove_ignore_lines(&text);
            match before(&w.gitignore) {
                Some(Some(orig)) if orig.trim_end() == stripped.trim_end() => Some(orig),
                Some(None) if stripped.trim().is_empty() => None,
                _ => Some(stripped),
            }
        }
    };

    let mut plan = vec![
        Planned {
            path: &w.settings,
            text: settings,
        },
        Planned {
            path: &w.gitignore,
            text: ignore,
        },
    ];
    let others =
        super::agents::uninstall_plan(repo, |p| before(p)).map_err(|e| fail(Code::Usage, e))?;
    plan.extend(others.iter().map(|(path, text)| Planned {
        path,
        text: text.clone(),
    }));
    for (path, ours) in [(&w.protocol, PROTOCOL), (&w.launcher, LAUNCHER)] {
        match read(path)? {
            Some(text) if text != ours => report.kept.push(path.display().to_string()),
            Some(_) => plan.push(Planned {
                path,
                text: before(path).flatten(),
            }),
            None => {}
        }
    }
    apply(&plan, &mut report)?;
    if w.backup.exists() {
        std::fs::remove_file(&w.backup).map_err(|e| {
            fail(
                Code::Failure,
                format!("cannot remove {}: {e}", w.backup.display()),
            )
        })?;
    }
    let mcp =
        crate::messaging::mcp::wire::uninstall_entry(repo).map_err(|e| fail(Code::Usage, e))?;
    report
        .changed
        .extend(mcp.changed.iter().map(|p| p.display().to_string()));
    // Folders install created and that are empty now.
    for dir in [w.settings.parent(), w.protocol.parent()]
        .into_iter()
        .flatten()
        .map(Path::to_path_buf)
        .chain(super::agents::config_dirs(repo))
    {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(report)
}

/// `guard install [REPO]`: wires the repo for `agents` (none named: Claude Code and every other
/// client on PATH) and says what changed.
pub fn run_install(
    repo: Option<&Path>,
    guard: Option<&Path>,
    timeout_s: u64,
    agents: &[crate::clients::Client],
    json: bool,
) -> anyhow::Result<Code> {
    let root = super::target_repo(repo, "install")?;
    let agents = super::agents::chosen(agents);
    let report = install(&root, guard, timeout_s, &agents)?;
    if json {
        crate::cli::print_json(&report)?;
        return Ok(Code::Success);
    }
    if report.changed.is_empty() {
        println!("{}: already wired, nothing changed", root.display());
    } else {
        for client in &agents {
            println!("wired {}", super::agents::wired_note(*client));
        }
        for f in &report.changed {
            println!("wrote {f}");
        }
        println!("hooks run: {}", report.hook_command);
        if guard.is_none() {
            println!(
                "commit these files: the launcher finds the guard on every machine that has the suite (check with: guard doctor)"
            );
        }
    }
    Ok(Code::Success)
}

/// `guard uninstall [REPO]`: removes the wiring and says what changed.
pub fn run_uninstall(repo: Option<&Path>, json: bool) -> anyhow::Result<Code> {
    let root = super::target_repo(repo, "uninstall")?;
    let report = uninstall(&root)?;
    if json {
        crate::cli::print_json(&report)?;
        return Ok(Code::Success);
    }
    if report.changed.is_empty() {
        println!("{}: not wired, nothing changed", root.display());
    }
    for f in &report.changed {
        println!("restored {f}");
    }
    for f in &report.kept {
        println!("kept {f}: edited since install; remove it yourself if it is not needed");
    }
    Ok(Code::Success)
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
        let once = merge_settings(doc.clone(), HOOK_COMMAND, 10).unwrap();
        let twice = merge_settings(once.clone(), HOOK_COMMAND, 10).unwrap();
        assert_eq!(once, twice);
        assert_eq!(once["model"], "x");
        let pre = once["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "other-hook");
        assert_eq!(pre[1]["matcher"], "*");
        assert_eq!(pre[1]["hooks"][0]["timeout"], 10);
        let moved = merge_settings(once.clone(), "'/new place/guard'", 10).unwrap();
        let pre = moved["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "old guard entry replaced, not duplicated");
        assert_eq!(pre[1]["hooks"][0]["command"], "'/new place/guard'");
        assert_eq!(strip_settings(once).unwrap(), doc, "strip undoes merge");
        assert_eq!(
            strip_settings(merge_settings(json!({}), HOOK_COMMAND, 10).unwrap()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn bad_settings_shapes_are_errors() {
        assert!(merge_settings(json!([]), "g", 1).is_err());
        assert!(merge_settings(json!({"hooks": []}), "g", 1).is_err());
        assert!(merge_settings(json!({"hooks": {"Stop": {}}}), "g", 1).is_err());
    }

    #[test]
    fn ignore_lines_come_and_go() {
        for old in ["", "node_modules/\n", "dist"] {
            let added = add_ignore_lines(old);
            assert_eq!(add_ignore_lines(&added), added, "idempotent");
            assert!(added.contains(GITIGNORE_COMMENT));
            assert_eq!(remove_ignore_lines(&added).trim_end(), old.trim_end());
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/usr/bin/guard"), "/usr/bin/guard");
        assert_eq!(shell_quote("/a b/guard"), "'/a b/guard'");
        assert_eq!(shell_quote("/it's/guard"), r"'/it'\''s/guard'");
    }
}
