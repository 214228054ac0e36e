//! Wrappers that start commands elsewhere: terminal multiplexers (`tmux`), containers
//! (`docker run|exec`), parallel runners (`concurrently`) and git aliases given with
//! `-c alias.x=…`.

use super::{MAX_WORDS, Peel, Script, add_script, first_operand, join_posix, join_raw, keep_from};
use crate::shell::Dialect;
use crate::shell::docker::container;
use crate::shell::programs::{Grammar, Program};
use crate::shell::word::Word;

pub(super) fn tmux(p: &mut Peel, prog: &Program) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        if t == "-c" {
            let text = p
                .argv
                .get(i + 1)
                .map(|w| w.text.clone())
                .unwrap_or_default();
            return add_script(p, text, Dialect::Posix, "tmux");
        }
        i += if prog.opts.takes_value(t) { 2 } else { 1 };
    }
    let sub = p.argv.get(i).map(|w| w.text.as_str()).unwrap_or_default();
    let keys = matches!(sub, "send-keys" | "send");
    let runs = matches!(
        sub,
        "new"
            | "new-session"
            | "new-window"
            | "neww"
            | "split-window"
            | "splitw"
            | "respawn-pane"
            | "respawnp"
            | "respawn-window"
            | "respawnw"
            | "run-shell"
            | "run"
    );
    if !keys && !runs {
        return false;
    }
    let short = if keys { "tNc" } else { "cefFnstxylp" };
    let j = first_operand(&p.argv, i + 1, Grammar { short, long: &[] });
    let rest: Vec<Word> = p.argv[j.min(p.argv.len())..]
        .iter()
        .filter(|w| {
            !keys
                || !matches!(
                    w.text.as_str(),
                    "Enter"
                        | "C-m"
                        | "KPEnter"
                        | "C-c"
                        | "C-d"
                        | "C-j"
                        | "Escape"
                        | "Tab"
                        | "Space"
                )
        })
        .cloned()
        .collect();
    let text = if keys {
        join_raw(&rest)
    } else {
        join_posix(&rest)
    };
    add_script(p, text, Dialect::Posix, "tmux")
}

/// `node [opts] node_modules/<pkg>/bin/<cmd>[.js] args` (or `node_modules/.bin/<cmd>`):
/// the package's command. The command is the file's stem, or the package's name for a
/// file called `cli`/`index`/`main` (`node_modules/electron/cli.js` → `electron`).
pub(super) fn node_bin(p: &mut Peel, prog: &Program) -> bool {
    let i = first_operand(&p.argv, 1, prog.opts);
    let Some(file) = p.argv.get(i) else {
        return false;
    };
    let path = file.text.replace('\\', "/");
    let Some((_, inside)) = path.rsplit_once("node_modules/") else {
        return false;
    };
    let parts: Vec<&str> = inside.split('/').filter(|c| !c.is_empty()).collect();
    let pkg = match parts.as_slice() {
        [scope, name, ..] if scope.starts_with('@') => *name,
        [name, ..] => *name,
        [] => return false,
    };
    let stem = parts.last().map_or("", |f| {
        f.strip_suffix(".js")
            .or_else(|| f.strip_suffix(".cjs"))
            .or_else(|| f.strip_suffix(".mjs"))
            .unwrap_or(f)
    });
    let cmd = if parts.len() < 2 || matches!(stem, "cli" | "index" | "main") {
        pkg
    } else {
        stem
    };
    if cmd.is_empty() || cmd == ".bin" {
        return false;
    }
    let cmd = cmd.to_string();
    keep_from(p, i, "node");
    p.argv[0].text = cmd;
    true
}

pub(super) fn docker(p: &mut Peel) -> bool {
    let Some(c) = container(&p.argv) else {
        return false;
    };
    p.sandbox = Some(c.sandboxed || p.sandbox == Some(true));
    p.host_app |= c.host_app;
    p.wrappers.push(format!("docker {}", c.verb));
    p.argv = c.argv;
    true
}

pub(super) fn concurrently(p: &mut Peel, prog: &Program) -> bool {
    let mut scripts = Vec::new();
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t.starts_with('-') && t.len() > 1 {
            i += if prog.opts.takes_value(t) { 2 } else { 1 };
            continue;
        }
        let text = match t.split_once(':') {
            Some((pm @ ("npm" | "yarn" | "pnpm" | "bun"), name)) => format!("{pm} run {name}"),
            _ => t.to_string(),
        };
        scripts.push(text);
        i += 1;
    }
    for s in scripts {
        p.scripts.push(Script {
            text: s,
            dialect: Dialect::Posix,
            via: "concurrently",
            args: None,
        });
    }
    p.wrappers.push("concurrently".to_string());
    p.argv.clear();
    false
}

/// `git -c alias.x=<value> … x args`: expand the alias (`!` aliases are shell scripts).
/// A git setting whose value git runs as a shell command: the pager, the fsmonitor hook, the
/// ssh command, editors, credential helpers, diff, merge and filter drivers, the signing program.
pub fn git_runs_setting(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let (first, last) = (
        k.split('.').next().unwrap_or_default(),
        k.rsplit('.').next().unwrap_or_default(),
    );
    matches!(
        k.as_str(),
        "core.pager"
            | "core.fsmonitor"
            | "core.sshcommand"
            | "core.editor"
            | "core.askpass"
            | "sequence.editor"
            | "diff.external"
            | "uploadpack.packobjectshook"
    ) || first == "pager"
        || (first == "filter" && matches!(last, "clean" | "smudge" | "process"))
        || (first == "diff" && matches!(last, "textconv" | "command"))
        || (first == "merge" && last == "driver")
        || (first == "gpg" && last == "program")
        || (first == "credential" && last == "helper")
}

pub(super) fn git_alias(p: &mut Peel, prog: &Program, done: &mut Vec<String>) -> bool {
    let mut aliases: Vec<(String, String)> = Vec::new();
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "-c" {
            if let Some(kv) = p.argv.get(i + 1)
                && let Some((k, v)) = kv.text.split_once('=')
            {
                if let Some(name) = k.to_ascii_lowercase().strip_prefix("alias.") {
                    aliases.push((name.to_string(), v.to_string()));
                } else if git_runs_setting(k) && !v.trim().is_empty() {
                    // Git runs the value with the shell; the git command itself still runs.
                    p.scripts.push(Script {
                        text: v.strip_prefix('!').unwrap_or(v).to_string(),
                        dialect: Dialect::Posix,
                        via: "git -c",
                        args: None,
                    });
                }
            }
            i += 2;
            continue;
        }
        if prog.opts.takes_value(t) {
            i += 2;
            continue;
        }
        if t.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    let Some(sub) = p.argv.get(i).map(|w| w.text.to_ascii_lowercase()) else {
        return false;
    };
    let Some((_, value)) = aliases.into_iter().rev().find(|(n, _)| *n == sub) else {
        return false;
    };
    if done.contains(&sub) {
        return false;
    }
    done.push(sub.clone());
    if let Some(shell) = value.strip_prefix('!') {
        let mut text = shell.to_string();
        let rest = p.argv[i + 1..].to_vec();
        if !rest.is_empty() {
            text.push(' ');
            text.push_str(&join_posix(&rest));
        }
        return add_script(p, text, Dialect::Posix, "git alias");
    }
    let expansion: Vec<Word> = value.split_whitespace().map(Word::quoted).collect();
    if p.argv.len() + expansion.len() > MAX_WORDS {
        return false;
    }
    let tail = p.argv.split_off(i + 1);
    p.argv.truncate(i);
    p.argv.extend(expansion);
    p.argv.extend(tail);
    p.wrappers.push(format!("git alias {sub}"));
    true
}
