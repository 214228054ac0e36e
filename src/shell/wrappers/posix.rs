//! POSIX wrappers: `env`, `sudo`/`doas`, `command`, `nice`/`time`/`timeout`-style
//! prefixes, `watch`, `rtk`, package runners, `bash|sh|zsh -c`, `source`, `xargs` and
//! `find -exec`.

use super::{Peel, add_script, drop_head, first_operand, join_raw, keep_from};
use crate::shell::Dialect;
use crate::shell::pm::{PmCall, package_bin, pm_call};
use crate::shell::word::Word;

pub(super) fn simple(p: &mut Peel, name: &str) -> bool {
    let (short, long): (&str, &[&str]) = match name {
        "exec" => ("a", &[]),
        "nice" => ("n", &["adjustment"]),
        "ionice" => ("cnt", &["class", "classdata"]),
        "stdbuf" => ("ioe", &["input", "output", "error"]),
        "time" => ("fo", &["format", "output"]),
        "caffeinate" => ("tw", &[]),
        _ => ("", &[]),
    };
    if name == "ionice"
        && p.argv[1..].iter().any(|w| {
            matches!(
                w.text.as_str(),
                "-p" | "-P" | "-u" | "--pid" | "--pgid" | "--uid"
            )
        })
    {
        p.argv.clear();
        p.wrappers.push(name.to_string());
        return false;
    }
    if name == "cross-env" || name == "call" || name == "builtin" || name == "nohup" {
        return drop_head(p, name);
    }
    let i = first_operand(&p.argv, 1, short, long);
    keep_from(p, i, name)
}

pub(super) fn env(p: &mut Peel) -> bool {
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
        i += if matches!(t, "-u" | "--unset" | "-C" | "--chdir") {
            2
        } else {
            1
        };
    }
    keep_from(p, i, "env")
}

pub(super) fn sudo(p: &mut Peel, name: &str) -> bool {
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
    let long = [
        "user",
        "group",
        "host",
        "prompt",
        "chdir",
        "chroot",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "close-from",
    ];
    let short = if name == "doas" { "uC" } else { "CDgprRtTUu" };
    let i = first_operand(&p.argv, 1, short, &long);
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

pub(super) fn timeout(p: &mut Peel) -> bool {
    let i = first_operand(&p.argv, 1, "sk", &["signal", "kill-after"]);
    keep_from(p, i + 1, "timeout")
}

pub(super) fn watch(p: &mut Peel) -> bool {
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
        i += if matches!(t, "-n" | "--interval" | "-q" | "--equexit") {
            2
        } else {
            1
        };
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

pub(super) fn runner(p: &mut Peel, name: &str) -> bool {
    match pm_call(&p.argv) {
        Some(PmCall::Exec { start, script }) => {
            let via: &'static str = match name {
                "npx" | "pnpx" => "npx",
                "bunx" => "bunx",
                "npm" => "npm exec",
                "pnpm" => "pnpm exec",
                "yarn" => "yarn dlx",
                "deno" => "deno run npm:",
                _ => "bun x",
            };
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
pub(super) fn corepack(p: &mut Peel) -> bool {
    let i = first_operand(&p.argv, 1, "", &[]);
    let Some(w) = p.argv.get(i) else { return false };
    let name = package_bin(&w.text).unwrap_or_else(|| w.text.clone());
    if !matches!(
        name.as_str(),
        "npm" | "npx" | "pnpm" | "pnpx" | "yarn" | "yarnpkg"
    ) {
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
pub(super) fn shell(p: &mut Peel, name: &str) -> bool {
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
            i += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
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
            i += if bundle.ends_with('o') || bundle.ends_with('O') {
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
        let via: &'static str = match name {
            "bash" => "bash -c",
            "zsh" => "zsh -c",
            "dash" => "dash -c",
            "fish" => "fish -c",
            _ => "sh -c",
        };
        return add_script(p, text, Dialect::Posix, via);
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

pub(super) fn xargs(p: &mut Peel) -> bool {
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
        let with_value = matches!(
            t,
            "-a" | "-d"
                | "-E"
                | "-L"
                | "-n"
                | "-P"
                | "-s"
                | "--arg-file"
                | "--delimiter"
                | "--max-lines"
                | "--max-args"
                | "--max-procs"
                | "--max-chars"
                | "--process-slot-var"
        );
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
