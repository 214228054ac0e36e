//! POSIX wrappers with a syntax of their own: `env`, `sudo`/`doas`, `command`, `watch`,
//! `rtk`, package runners, `bash|sh|zsh -c`, `source`, `xargs` and `find -exec`. Their
//! value-taking options are their rows' grammars in the program table.

use super::{Peel, add_script, drop_head, first_operand, join_raw, keep_from};
use crate::shell::Dialect;
use crate::shell::pm::{PmCall, package_bin, pm_call};
use crate::shell::programs::{self, Pm, Program};
use crate::shell::word::Word;

pub(super) fn env(p: &mut Peel, prog: &Program) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        let split = if t == "-S" || t == "--split-string" {
            p.argv.get(i + 1).map(|w| (w.text.clone(), i + 2))
        } else if let Some(v) = t.strip_prefix("--split-string=") {
            Some((v.to_string(), i + 1))
        } else if t.len() > 2 && t.starts_with("-S") {
            Some((t[2..].to_string(), i + 1))
        } else {
            None
        };
        if let Some((text, next)) = split {
            let mut full = text;
            for w in p.argv.iter().skip(next) {
                full.push(' ');
                full.push_str(&w.text);
            }
            return add_script(p, full, Dialect::Posix, "env -S");
        }
        if !t.starts_with('-') || t == "-" {
            if t == "-" {
                i += 1;
            }
            break;
        }
        i += if prog.opts.takes_value(t) { 2 } else { 1 };
    }
    keep_from(p, i, "env")
}

pub(super) fn sudo(p: &mut Peel, prog: &Program) -> bool {
    let name = prog.name;
    let args = &p.argv;
    if args[1..]
        .iter()
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| w.text == "-e" || w.text == "--edit")
    {
        p.argv.clear();
        p.wrappers.push(format!("{name} -e"));
        return false;
    }
    let i = first_operand(&p.argv, 1, prog.opts);
    let login_shell = p.argv[1..i.min(p.argv.len())].iter().any(|w| {
        matches!(w.text.as_str(), "--shell" | "--login")
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(['s', 'i']))
    });
    if login_shell && i >= p.argv.len() {
        // `sudo -s` / `sudo -i` alone: a shell that reads commands from stdin.
        p.argv = vec![Word::plain("sh")];
        p.wrappers.push(name.to_string());
        return false;
    }
    keep_from(p, i, name)
}

pub(super) fn command(p: &mut Peel) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        match w.text.as_str() {
            "-v" | "-V" | "-pv" | "-pV" | "-vp" | "-Vp" => {
                p.argv.clear();
                p.wrappers.push("command -v".to_string());
                return false;
            }
            "-p" => i += 1,
            "--" => {
                i += 1;
                break;
            }
            _ => break,
        }
    }
    keep_from(p, i, "command")
}

pub(super) fn watch(p: &mut Peel, prog: &Program) -> bool {
    let mut i = 1;
    let mut exec = false;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') {
            break;
        }
        if t == "-x" || t == "--exec" {
            exec = true;
        }
        i += if prog.opts.takes_value(t) { 2 } else { 1 };
    }
    if exec {
        return keep_from(p, i, "watch -x");
    }
    let rest = p.argv[i.min(p.argv.len())..].to_vec();
    add_script(p, join_raw(&rest), Dialect::Posix, "watch")
}

pub(super) fn rtk(p: &mut Peel) -> bool {
    let mut i = 1;
    while p.argv.get(i).is_some_and(|w| w.text.starts_with('-')) {
        i += 1;
    }
    if p.argv.len() > i + 1
        && matches!(
            p.argv[i].text.as_str(),
            "proxy" | "test" | "err" | "summary" | "run"
        )
    {
        i += 1;
    }
    keep_from(p, i, "rtk")
}

/// A package runner, named `via` in explanations.
pub(super) fn runner(p: &mut Peel, via: &'static str) -> bool {
    match pm_call(&p.argv) {
        Some(PmCall::Exec { start, script }) => {
            if let Some(s) = script {
                return add_script(p, s, Dialect::Posix, via);
            }
            keep_from(p, start, via);
            // `npx vite@5 build` runs `vite`.
            if let Some(head) = p.argv.first_mut()
                && let Some(bin) = package_bin(&head.text)
            {
                head.text = bin;
            }
            true
        }
        _ => false,
    }
}

/// `corepack [pnpm|yarn|npm|npx][@version] args`: the package manager it launches.
pub(super) fn corepack(p: &mut Peel, prog: &Program) -> bool {
    let i = first_operand(&p.argv, 1, prog.opts);
    let Some(w) = p.argv.get(i) else { return false };
    let name = package_bin(&w.text).unwrap_or_else(|| w.text.clone());
    let launched = programs::get(&name).and_then(|p| p.pm);
    if !matches!(launched, Some(Pm::Npm | Pm::Npx | Pm::Pnpm | Pm::Yarn)) {
        return false;
    }
    keep_from(p, i, "corepack");
    p.argv[0].text = if name == "yarnpkg" {
        "yarn".to_string()
    } else {
        name
    };
    true
}

/// `bash [opts] -c '<script>'`, `bash file args`, or a shell reading stdin (kept).
pub(super) fn shell(p: &mut Peel, prog: &Program, via: &'static str) -> bool {
    let name = prog.name;
    let mut i = 1;
    let mut script = false;
    let mut stdin = false;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            i += if prog.opts.long.contains(&long) { 2 } else { 1 };
            continue;
        }
        if t.len() > 1 && (t.starts_with('-') || t.starts_with('+')) {
            let bundle = &t[1..];
            if t.starts_with('-') && bundle.contains('c') {
                script = true;
            }
            if t.starts_with('-') && bundle.contains('s') {
                stdin = true;
            }
            if t.starts_with('-') && bundle.contains('n') {
                // `bash -n`: parse only, nothing runs.
                p.argv.clear();
                p.wrappers.push(format!("{name} -n"));
                return false;
            }
            i += if bundle.ends_with(|c| prog.opts.short.contains(c)) {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if script {
        let text = p.argv.get(i).map(|w| w.text.clone()).unwrap_or_default();
        // `sh -c '…' arg0 a b`: `$0` is arg0, `$1` is a.
        let args = p
            .argv
            .get(i + 2..)
            .map(<[Word]>::to_vec)
            .unwrap_or_default();
        let more = add_script(p, text, Dialect::Posix, via);
        if let Some(s) = p.scripts.last_mut() {
            s.args = Some(args);
        }
        return more;
    }
    if stdin || i >= p.argv.len() {
        return false;
    }
    keep_from(p, i, name)
}

pub(super) fn source(p: &mut Peel) -> bool {
    match p.argv.get(1).map(|w| w.text.as_str()) {
        Some("/dev/stdin" | "-") | None => false,
        Some(_) => drop_head(p, "source"),
    }
}

pub(super) fn xargs(p: &mut Peel, prog: &Program) -> bool {
    let mut i = 1;
    let mut replace = None;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "-I" {
            replace = p.argv.get(i + 1).map(|w| w.text.clone());
            i += 2;
            continue;
        }
        if let Some(r) = t.strip_prefix("-I") {
            replace = Some(r.to_string());
        } else if t == "-i" || t == "--replace" {
            replace = Some("{}".to_string());
        } else if let Some(r) = t.strip_prefix("--replace=") {
            replace = Some(r.to_string());
        } else if let Some(r) = t.strip_prefix("-i") {
            replace = Some(r.to_string());
        }
        let with_value = prog.opts.takes_value(t);
        i += if with_value { 2 } else { 1 };
    }
    p.xargs = Some(replace);
    keep_from(p, i, "xargs");
    if p.argv.is_empty() {
        p.argv.push(Word::plain("echo"));
    }
    true
}

pub(super) fn find(p: &mut Peel) {
    let mut i = 1;
    while i < p.argv.len() {
        if matches!(
            p.argv[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let mut cmd = Vec::new();
            i += 1;
            while let Some(w) = p.argv.get(i) {
                if w.text == ";"
                    || (w.text == "+" && cmd.last().is_some_and(|l: &Word| l.text == "{}"))
                {
                    break;
                }
                let mut w = w.clone();
                w.subs.clear();
                cmd.push(w);
                i += 1;
            }
            if !cmd.is_empty() {
                p.derived.push(cmd);
            }
        }
        i += 1;
    }
}

/// `trap [--] 'CMD' SIGNAL…`: CMD runs later in the same shell; `trap -p`, `trap -l`,
/// `trap - SIG` (reset) and `trap '' SIG` (ignore) run nothing.
pub(super) fn trap(p: &mut Peel) -> bool {
    let i = if p.argv.get(1).is_some_and(|w| w.text == "--") {
        2
    } else {
        1
    };
    let action = p.argv.get(i).map(|w| w.text.clone()).unwrap_or_default();
    if p.argv.len() <= i + 1 || action.is_empty() || action.starts_with('-') {
        p.argv.clear();
        p.wrappers.push("trap".to_string());
        return false;
    }
    add_script(p, action, Dialect::Posix, "trap")
}
