//! `guard install` and `guard uninstall`: the hook entries merged into `.claude/settings.json`
//! (and Codex CLI's `.codex/hooks.json`, Gemini CLI's `.gemini/settings.json` for the clients
//! wired), the messaging server in `.mcp.json`, its approval and the status line in
//! `.claude/settings.local.json`, the `.gitignore` lines, `session-lock/PROTOCOL.md` and the
//! launcher. Every file is planned before any is written (a file of the wrong shape changes
//! nothing), JSON files are edited in their own text (`wiring`), and every file keeps its mode.
//! Installing twice changes nothing; uninstalling removes exactly what install added (on the
//! machine that installed, the files come back byte for byte from `install-backup.json`), and
//! on a repo that was never wired it changes nothing and says so.

use super::{
    GITIGNORE, GITIGNORE_COMMENT, GITIGNORE_COMMENT_PREFIX, HOOK_COMMAND, LAUNCHER, PROTOCOL,
    Wiring, wiring,
};
use crate::atomic;
use crate::exit::{Code, fail};
use crate::json_edit::{Doc, parse_value};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// What install should do beside the hooks.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// Run this guard program directly instead of the committed launcher (a path valid on this
    /// machine only).
    pub guard: Option<&'a Path>,
    pub timeout_s: u64,
    /// Offer the status line (`--no-statusline`: leave it out, and take ours out).
    pub statusline: bool,
    /// The clients to wire (`--agent`); `run_install` fills in the default, `install` takes
    /// the list as it is.
    pub agents: &'a [crate::clients::Client],
    /// Write the user-scope entry (`--no-user-scope`: leave it out).
    pub user_scope: bool,
}

/// What install did about the status line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum StatusLine {
    /// Ours was written into this file.
    Added { file: String },
    /// Ours was already there.
    Present { file: String },
    /// Another status line is set in this file: left alone.
    Theirs { file: String, command: String },
    /// `--no-statusline`.
    Skipped,
}

/// What install or uninstall did to each file.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
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
    /// Install: the files to commit (repo-relative).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commit: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_line: Option<StatusLine>,
    /// Install: the checks `release` will run, and where they come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_checks: Option<crate::tools::release_checks::Chosen>,
    /// One line per changed file, for people (`wrote …`, `restored …`).
    #[serde(skip)]
    said: Vec<String>,
}

/// Quotes a path for the `sh -c` the client runs hooks with.
pub fn shell_quote(s: &str) -> String {
    crate::shell::word::quote_posix(s).into_owned()
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
    new.push_str(GITIGNORE_COMMENT);
    new.push('\n');
    for l in missing {
        new.push_str(l);
        new.push('\n');
    }
    new
}

/// The `.gitignore` text without what install added: each comment line of ours and the
/// session-lock lines right below it. The same lines elsewhere were the person's: they stay.
pub fn remove_ignore_lines(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let l = line.trim();
        if l.starts_with(GITIGNORE_COMMENT_PREFIX) {
            in_block = true;
            continue;
        }
        if in_block && GITIGNORE.contains(&l) {
            continue;
        }
        in_block = false;
        out.push_str(line);
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

/// A JSON file's text after `edit`, from the text it has (`None`: missing). When the value does
/// not change, the text does not either (its bytes are kept).
fn edited_json(
    path: &Path,
    old: Option<&str>,
    edit: impl FnOnce(&Doc) -> Result<(), String>,
) -> anyhow::Result<Option<String>> {
    let bad = |e: String| {
        fail(
            Code::Usage,
            format!("{}: {e}; nothing changed", path.display()),
        )
    };
    let doc = Doc::parse(old).map_err(bad)?;
    let before = doc.value();
    edit(&doc).map_err(bad)?;
    if doc.value() == before {
        return Ok(old.map(str::to_string));
    }
    Ok(Some(doc.text()))
}

/// A JSON file's text once `strip` took our entries out. Nothing of ours: the bytes as they are.
/// Back to what the backup holds: the backup's bytes (or no file, when there was none and
/// nothing is left). Otherwise the stripped text, the rest as the person left it.
fn stripped_json(
    path: &Path,
    current: Option<&str>,
    original: Option<&Option<String>>,
    strip: impl FnOnce(&Doc) -> Result<(), String>,
) -> anyhow::Result<Option<String>> {
    let Some(text) = current else {
        return Ok(None);
    };
    let doc = Doc::parse(Some(text)).map_err(|e| {
        fail(
            Code::Usage,
            format!("{}: {e}; nothing changed", path.display()),
        )
    })?;
    let before = doc.value();
    strip(&doc).map_err(|e| {
        fail(
            Code::Usage,
            format!("{}: {e}; nothing changed", path.display()),
        )
    })?;
    let after = doc.value();
    if after == before {
        return Ok(Some(text.to_string()));
    }
    match original {
        Some(Some(orig)) if parse_value(orig).ok().as_ref() == Some(&after) => {
            Ok(Some(orig.clone()))
        }
        Some(None) | None if after == json!({}) => Ok(None),
        _ => Ok(Some(doc.text())),
    }
}

/// One file's planned content (`None` removes it) and how a change of it is said.
struct Planned<'a> {
    path: &'a Path,
    text: Option<String>,
    said: &'static str,
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
        let verb = if p.text.is_none() { "removed" } else { p.said };
        report.said.push(format!("{verb} {shown}"));
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

/// What to do with the status line, from every settings file a session in `root` reads:
/// another status line anywhere wins (ours is not put over it, and one of ours in the local
/// file is taken out again); ours in another file is kept; else ours goes into the local file.
fn status_line_plan(w: &Wiring, wanted: bool) -> StatusLine {
    let mut ours_elsewhere = None;
    for file in super::doctor::settings_files(&w.root) {
        let Some(value) = read(&file)
            .ok()
            .flatten()
            .and_then(|t| parse_value(&t).ok())
        else {
            continue;
        };
        let Some(cmd) = wiring::statusline_of(&value) else {
            continue;
        };
        if !wiring::is_statusline_command(cmd) {
            return StatusLine::Theirs {
                file: relative(w, &file),
                command: cmd.to_string(),
            };
        }
        if file != w.local && ours_elsewhere.is_none() {
            ours_elsewhere = Some(relative(w, &file));
        }
    }
    match ours_elsewhere {
        Some(file) => StatusLine::Present { file },
        None if wanted => StatusLine::Added {
            file: relative(w, &w.local),
        },
        None => StatusLine::Skipped,
    }
}

/// Claude Code's three JSON files as install leaves them: the hooks, the MCP server, and the
/// approval with the status line.
fn claude_plan<'a>(
    w: &'a Wiring,
    o: &Options,
    command: &str,
) -> anyhow::Result<(Vec<Planned<'a>>, StatusLine)> {
    let old_settings = read(&w.settings)?;
    let settings = edited_json(&w.settings, old_settings.as_deref(), |d| {
        wiring::add_hooks(d, command, o.timeout_s)
    })?;
    let old_mcp = read(&w.mcp)?;
    let entry = super::mcp_entry(o.guard);
    let mcp = edited_json(&w.mcp, old_mcp.as_deref(), |d| {
        wiring::add_server(d, &entry)
    })?;
    let mut status_line = status_line_plan(w, o.statusline);
    let line = super::statusline_command(o.guard);
    let old_local = read(&w.local)?;
    let local = edited_json(&w.local, old_local.as_deref(), |d| {
        wiring::add_approval(d)?;
        match &status_line {
            StatusLine::Added { .. } => wiring::add_statusline(d, &line),
            StatusLine::Skipped | StatusLine::Theirs { .. } => wiring::strip_statusline(d),
            StatusLine::Present { .. } => Ok(()),
        }
    })?;
    if let StatusLine::Added { file } = &status_line {
        let before = old_local.as_deref().and_then(|t| parse_value(t).ok());
        if before
            .as_ref()
            .and_then(wiring::statusline_of)
            .is_some_and(|c| c == line)
        {
            status_line = StatusLine::Present { file: file.clone() };
        }
    }
    let plan = vec![
        Planned {
            path: &w.settings,
            text: settings,
            said: "wrote",
        },
        Planned {
            path: &w.mcp,
            text: mcp,
            said: "wrote",
        },
        Planned {
            path: &w.local,
            text: local,
            said: "wrote",
        },
    ];
    Ok((plan, status_line))
}

/// Wires `repo` (a git top level) for `o.agents` (as [`super::agents::chosen`] picks them).
/// A client not wired has its files left alone.
pub fn install(repo: &Path, o: &Options) -> anyhow::Result<Report> {
    use crate::clients::Client;
    let w = Wiring::new(repo);
    let command = match o.guard {
        Some(g) => shell_quote(&g.to_string_lossy()),
        None => HOOK_COMMAND.to_string(),
    };
    let claude = o.agents.contains(&Client::Claude);
    let (mut plan, status_line) = if claude {
        let (plan, line) = claude_plan(&w, o, &command)?;
        (plan, Some(line))
    } else {
        (Vec::new(), None)
    };
    let others: Vec<_> = super::agents::other_configs(repo)
        .into_iter()
        .filter(|(c, _)| o.agents.contains(c))
        .collect();
    // Neither client knows `$CLAUDE_PROJECT_DIR`: their entries look for the launcher upward.
    let other_command = match o.guard {
        Some(_) => command.clone(),
        None => super::agents::HOOK_COMMAND.to_string(),
    };
    for (client, path) in &others {
        let old = read(path)?;
        let text = edited_json(path, old.as_deref(), |d| {
            super::agents::add_hooks(*client, d, &other_command, o.timeout_s)
        })?;
        plan.push(Planned {
            path,
            text,
            said: "wrote",
        });
    }
    // The user-scope entry: the user's file, not the repo's (kept out of the backup).
    let user_plan = match (&w.user, o.user_scope && claude) {
        (Some(path), true) => {
            // The guard running install: on this machine, whatever `--guard` names for the repo.
            let command = super::user_scope_command(&std::env::current_exe()?);
            let old = read(path)?;
            let text = edited_json(path, old.as_deref(), |d| {
                wiring::add_hooks(d, &command, o.timeout_s)
            })?;
            Some(Planned {
                path,
                text,
                said: "wrote the user-scope entry (sessions started in a subfolder) into",
            })
        }
        _ => None,
    };
    let old_ignore = read(&w.gitignore)?;
    plan.extend([
        Planned {
            path: &w.gitignore,
            text: Some(add_ignore_lines(old_ignore.as_deref().unwrap_or(""))),
            said: "wrote",
        },
        Planned {
            path: &w.protocol,
            text: Some(PROTOCOL.to_string()),
            said: "wrote",
        },
        Planned {
            path: &w.launcher,
            text: Some(LAUNCHER.to_string()),
            said: "wrote",
        },
    ]);
    let mut olds = Vec::new();
    for p in &plan {
        olds.push((relative(&w, p.path), read(p.path)?));
    }
    let changes = plan.iter().zip(&olds).any(|(p, (_, old))| *old != p.text);
    if changes && !w.backup.exists() {
        let backup: Backup = olds.into_iter().collect();
        std::fs::create_dir_all(w.backup.parent().expect("in session-lock/"))?;
        let mut text = serde_json::to_string_pretty(&json!(backup))?;
        text.push('\n');
        atomic::write_atomic(&w.backup, text.as_bytes())?;
    }
    let mut report = Report {
        hook_command: command,
        agents: o.agents.to_vec(),
        status_line,
        ..Report::default()
    };
    apply(&plan, &mut report)?;
    apply(user_plan.as_slice(), &mut report)?;
    let claude_files = [&w.settings, &w.mcp].into_iter().filter(|_| claude);
    report.commit = claude_files
        .chain(others.iter().map(|(_, p)| p))
        .chain([&w.gitignore, &w.protocol, &w.launcher])
        .map(|p| relative(&w, p))
        .collect();
    report.release_checks = crate::config::Config::load(repo)
        .ok()
        .map(|cfg| crate::tools::release_checks::chosen(repo, &cfg));
    Ok(report)
}

/// Removes what install added to `repo`: the guard's hook entries, the MCP server, its approval
/// and our status line, the `.gitignore` lines, and PROTOCOL.md and the launcher unless they
/// were edited. Everything else stays, byte for byte.
pub fn uninstall(repo: &Path) -> anyhow::Result<Report> {
    let w = Wiring::new(repo);
    let backup = read_backup(&w);
    let before = |path: &Path| backup.get(&relative(&w, path));
    let mut report = Report::default();

    let settings = stripped_json(
        &w.settings,
        read(&w.settings)?.as_deref(),
        before(&w.settings),
        wiring::strip_hooks,
    )?;
    let mcp = stripped_json(
        &w.mcp,
        read(&w.mcp)?.as_deref(),
        before(&w.mcp),
        wiring::strip_server,
    )?;
    let local = stripped_json(
        &w.local,
        read(&w.local)?.as_deref(),
        before(&w.local),
        |d| {
            wiring::strip_approval(d)?;
            wiring::strip_statusline(d)
        },
    )?;
    let ignore = match read(&w.gitignore)? {
        None => None,
        Some(text) => {
            let stripped = remove_ignore_lines(&text);
            match before(&w.gitignore) {
                _ if stripped == text => Some(text),
                Some(Some(orig)) if orig.trim_end() == stripped.trim_end() => Some(orig.clone()),
                Some(None) if stripped.trim().is_empty() => None,
                _ => Some(stripped),
            }
        }
    };
    let mut plan = vec![
        Planned {
            path: &w.settings,
            text: settings,
            said: "took the guard's hooks out of",
        },
        Planned {
            path: &w.mcp,
            text: mcp,
            said: "took the session-lock server out of",
        },
        Planned {
            path: &w.local,
            text: local,
            said: "took the server's approval and the status line out of",
        },
        Planned {
            path: &w.gitignore,
            text: ignore,
            said: "took the session-lock lines out of",
        },
    ];
    let others = super::agents::other_configs(repo);
    for (client, path) in &others {
        let text = stripped_json(path, read(path)?.as_deref(), before(path), |d| {
            super::agents::strip_hooks(*client, d)
        })?;
        plan.push(Planned {
            path,
            text,
            said: "took the guard's hooks out of",
        });
    }
    for (path, ours) in [(&w.protocol, PROTOCOL), (&w.launcher, LAUNCHER)] {
        match read(path)? {
            Some(text) if text != ours => report.kept.push(path.display().to_string()),
            Some(_) => plan.push(Planned {
                path,
                text: before(path).cloned().flatten(),
                said: "restored",
            }),
            None => {}
        }
    }
    // The user-scope entry (it serves every wired repo of this user: `guard install` in another
    // repo writes it again).
    if let Some(path) = &w.user {
        let text = stripped_json(path, read(path)?.as_deref(), None, wiring::strip_hooks)?;
        plan.push(Planned {
            path,
            text,
            said: "took the guard's user-scope entry out of",
        });
    }
    // A file back to its bytes before install is said as restored.
    for p in &mut plan {
        if let (Some(Some(orig)), Some(text)) = (before(p.path), &p.text)
            && orig == text
        {
            p.said = "restored";
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
    // Folders install created and that are empty now.
    if !report.changed.is_empty() {
        for dir in [w.settings.parent(), w.protocol.parent()]
            .into_iter()
            .chain(others.iter().map(|(_, p)| p.parent()))
            .flatten()
        {
            let _ = std::fs::remove_dir(dir);
        }
    }
    Ok(report)
}

/// How the status line's state is said after install.
fn say_status_line(s: &StatusLine) -> String {
    match s {
        StatusLine::Added { file } => format!(
            "status line: added to {file} (`status --statusline`: your stream, the others, messages waiting); --no-statusline leaves it out"
        ),
        StatusLine::Present { file } => format!("status line: ours, in {file}"),
        StatusLine::Theirs { file, command } => format!(
            "status line: yours in {file} (`{command}`) is kept; to show the round in it, print the line of `status --statusline` from it (it reads the same JSON on stdin)"
        ),
        StatusLine::Skipped => "status line: left out (--no-statusline)".into(),
    }
}

/// `guard install [REPO]`: wires the repo for `o.agents` (none named: Claude Code and every
/// other client on PATH) and says what changed and what was chosen.
pub fn run_install(repo: Option<&Path>, o: &Options, json: bool) -> anyhow::Result<Code> {
    let root = super::target_repo(repo, "install")?;
    let agents = super::agents::chosen(o.agents);
    let report = install(
        &root,
        &Options {
            agents: &agents,
            ..o.clone()
        },
    )?;
    if json {
        crate::cli::print_json(&report)?;
        return Ok(Code::Success);
    }
    if report.changed.is_empty() {
        println!("{}: already wired, nothing changed", root.display());
    } else {
        for client in &report.agents {
            println!("wired {}", super::agents::wired_note(*client));
        }
        for line in &report.said {
            println!("{line}");
        }
        println!("hooks run: {}", report.hook_command);
    }
    if let Some(s) = &report.status_line {
        println!("{}", say_status_line(s));
    }
    match &report.release_checks {
        Some(c) => println!("release checks: {}", c.describe()),
        None => println!(
            "release checks: session-lock/config.json cannot be loaded (guard doctor says why)"
        ),
    }
    if report.changed.is_empty() {
        return Ok(Code::Success);
    }
    if o.guard.is_none() {
        println!(
            "commit these files: {} (the launcher finds the suite on every machine that has it; check with: guard doctor)",
            report.commit.join(", ")
        );
        if report.agents.contains(&crate::clients::Client::Claude) {
            println!(".claude/settings.local.json is yours: git-ignored, not committed");
        }
    } else {
        println!(
            "do not commit .claude/settings.json and .mcp.json: with --guard they name programs on this machine"
        );
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
    for line in &report.said {
        println!("{line}");
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
    fn ignore_lines_come_and_go() {
        for old in ["", "node_modules/\n", "dist"] {
            let added = add_ignore_lines(old);
            assert_eq!(add_ignore_lines(&added), added, "idempotent");
            assert!(added.contains(GITIGNORE_COMMENT));
            assert_eq!(remove_ignore_lines(&added).trim_end(), old.trim_end());
        }
    }

    #[test]
    fn lines_the_person_had_stay_at_uninstall() {
        let old = ".claude/settings.local.json\nnode_modules/\n";
        let added = add_ignore_lines(old);
        assert_eq!(
            added.matches(".claude/settings.local.json").count(),
            1,
            "{added}"
        );
        assert_eq!(remove_ignore_lines(&added), old);
        // An older install's comment and lines go too.
        let older = "dist\n# session-lock: only PROTOCOL.md, config.json and guard-hook are committed\nsession-lock/*\n!session-lock/PROTOCOL.md\n";
        assert_eq!(remove_ignore_lines(older), "dist\n");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/usr/bin/guard"), "/usr/bin/guard");
        assert_eq!(shell_quote("/a b/guard"), "'/a b/guard'");
        assert_eq!(shell_quote("/it's/guard"), r"'/it'\''s/guard'");
    }
}
