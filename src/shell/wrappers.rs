//! Wrapper peeling: find the command a segment really runs.
//!
//! Peeled in a loop, each recorded by name: `NAME=V` assignments, `env`, `sudo`/`doas`,
//! `command`, `builtin`, `exec`, `nohup`, `setsid`, `nice`, `ionice`, `stdbuf`, `time`,
//! `timeout`, `watch`, `winpty`, `cross-env`, `rtk`, a leading `\`, package runners (`npx`,
//! `npm exec`, `pnpm exec|dlx`, `yarn dlx|exec`, `bunx`), `xargs`, `docker run|exec`,
//! `source file`, `call`, `start`, `Start-Process`, and `git -c alias.x=…` aliases.
//!
//! Wrappers that carry a command *string* hand it back as a [`Script`] to be lexed as a
//! source of its own: `bash|sh|zsh|dash -c` (bundled `-lc`, `-ec`), `eval`, `cmd /c|/k`,
//! `powershell|pwsh -Command` and `-EncodedCommand` (base64 UTF-16LE, decoded), `wsl`,
//! `watch` (without `-x`), `tmux new-session|new-window|split-window|send-keys`,
//! `Invoke-Expression`, `env -S`, `npx -c`, `concurrently`, `cross-env-shell` and `!`
//! git aliases. `find -exec|-execdir|-ok … ;|+` yields the executed commands as
//! derived segments and keeps `find` itself as the command.

use super::Dialect;
use super::docker::container;
use super::pm::{PmCall, pm_call};
use super::word::{Word, command_name, is_assignment};

/// Upper bound on peeling steps for one segment.
const MAX_STEPS: usize = 32;
/// Upper bound on argv growth through alias expansion.
const MAX_WORDS: usize = 512;
/// Upper bound on a decoded `-EncodedCommand`.
const MAX_DECODED: usize = 256 * 1024;

/// A command string found inside a wrapper, to be analyzed as a nested source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The command text.
    pub text: String,
    /// How to lex it.
    pub dialect: Dialect,
    /// The wrapper that carried it (`bash -c`, `eval`, `cmd /c`, ...).
    pub via: &'static str,
}

/// The result of peeling one segment.
#[derive(Clone, Debug, Default)]
pub struct Peel {
    /// The command after the wrappers (may be empty).
    pub argv: Vec<Word>,
    /// Wrapper names in the order they were peeled.
    pub wrappers: Vec<String>,
    /// Command strings to analyze as nested sources.
    pub scripts: Vec<Script>,
    /// Commands run by `find -exec` and similar.
    pub derived: Vec<Vec<Word>>,
    /// `Some(true)` inside a sandboxed `docker run`, `Some(false)` inside other containers.
    pub sandbox: Option<bool>,
    /// `Some(replace)` when `xargs` was peeled (its `-I` string, if any).
    pub xargs: Option<Option<String>>,
    /// A `-c` style script was peeled: stdin goes to that script.
    pub shell_c: bool,
}

fn texts(words: &[Word]) -> impl Iterator<Item = &str> {
    words.iter().map(|w| w.text.as_str())
}

/// Join words the way `eval` or PowerShell rebuild a command line.
fn join_raw(words: &[Word]) -> String {
    texts(words).collect::<Vec<_>>().join(" ")
}

/// Join words re-quoting those a POSIX shell would split.
fn join_posix(words: &[Word]) -> String {
    if words.len() == 1 {
        return words[0].text.clone();
    }
    words
        .iter()
        .map(|w| {
            let t = &w.text;
            if !t.is_empty()
                && !t
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b"'\"$`;&|<>()\\".contains(&b))
            {
                t.clone()
            } else {
                format!("'{}'", t.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Join words the way a Windows command line is rebuilt (quotes around spaces).
fn join_cmd(words: &[Word]) -> String {
    if words.len() == 1 {
        return words[0].text.clone();
    }
    words
        .iter()
        .map(|w| {
            if w.text.is_empty() || w.text.contains([' ', '\t']) {
                format!("\"{}\"", w.text)
            } else {
                w.text.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Index of the first operand of `args` after options. `short_val` lists short options
/// taking a value (`-u root`, `-uroot`), `long_val` long ones (`--user root`).
fn first_operand(args: &[Word], from: usize, short_val: &str, long_val: &[&str]) -> usize {
    let mut i = from;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if let Some(long) = t.strip_prefix("--") {
            i += if !long.contains('=') && long_val.contains(&long) {
                2
            } else {
                1
            };
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bundle = &t[1..];
            let mut next = false;
            for (k, c) in bundle.char_indices() {
                if short_val.contains(c) {
                    next = k + c.len_utf8() == bundle.len();
                    break;
                }
            }
            i += if next { 2 } else { 1 };
            continue;
        }
        return i;
    }
    args.len()
}

/// Peel the wrappers off `words`.
pub fn peel(words: &[Word], dialect: Dialect) -> Peel {
    let mut p = Peel {
        argv: words.to_vec(),
        ..Peel::default()
    };
    let mut aliases_done: Vec<String> = Vec::new();
    for _ in 0..MAX_STEPS {
        if dialect == Dialect::Posix {
            let n = p.argv.iter().take_while(|w| is_assignment(&w.text)).count();
            if n > 0 {
                for w in p.argv.drain(..n) {
                    let name = w.text.split('=').next().unwrap_or_default();
                    p.wrappers.push(format!("{name}="));
                }
                continue;
            }
        }
        let Some(head) = p.argv.first() else { break };
        if head.backslashed && !p.wrappers.iter().any(|w| w == "\\") {
            p.wrappers.push("\\".to_string());
        }
        if dialect == Dialect::Cmd && head.text.len() > 1 && head.text.starts_with('@') {
            p.argv[0].text.remove(0);
            continue;
        }
        let name = command_name(&p.argv[0].text);
        let more = match name.as_str() {
            "env" => env(&mut p),
            "sudo" | "doas" => sudo(&mut p, &name),
            "command" => command(&mut p),
            "builtin" | "nohup" | "call" | "cross-env" | "exec" | "setsid" | "winpty"
            | "unbuffer" | "caffeinate" | "nice" | "ionice" | "stdbuf" | "time" => {
                simple(&mut p, &name)
            }
            "timeout" => timeout(&mut p),
            "watch" => watch(&mut p),
            "rtk" => rtk(&mut p),
            "npx" | "pnpx" | "bunx" | "npm" | "pnpm" | "yarn" | "bun" => runner(&mut p, &name),
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" => {
                shell(&mut p, &name)
            }
            "busybox" => drop_head(&mut p, "busybox"),
            "eval" => script_rest(&mut p, dialect, "eval"),
            "iex" | "invoke-expression" => {
                script_rest(&mut p, Dialect::PowerShell, "Invoke-Expression")
            }
            "source" | "." => source(&mut p),
            "cmd" => cmd(&mut p),
            "powershell" | "pwsh" => powershell(&mut p),
            "start" if dialect == Dialect::PowerShell => start_process(&mut p),
            "start" => start(&mut p),
            "start-process" | "saps" => start_process(&mut p),
            "tmux" => tmux(&mut p),
            "xargs" => xargs(&mut p),
            "find" => {
                find(&mut p);
                false
            }
            "docker" | "podman" | "docker-compose" | "podman-compose" => docker(&mut p),
            "wsl" => wsl(&mut p),
            "concurrently" => concurrently(&mut p),
            "cross-env-shell" => script_rest(&mut p, Dialect::Posix, "cross-env-shell"),
            "git" => git_alias(&mut p, &mut aliases_done),
            _ => false,
        };
        if !more {
            break;
        }
    }
    p
}

fn drop_head(p: &mut Peel, name: &str) -> bool {
    p.argv.remove(0);
    p.wrappers.push(name.to_string());
    true
}

fn keep_from(p: &mut Peel, i: usize, name: impl Into<String>) -> bool {
    let i = i.min(p.argv.len());
    p.argv.drain(..i);
    p.wrappers.push(name.into());
    true
}

fn add_script(p: &mut Peel, text: String, dialect: Dialect, via: &'static str) -> bool {
    p.scripts.push(Script { text, dialect, via });
    p.wrappers.push(via.to_string());
    p.argv.clear();
    p.shell_c = true;
    false
}

fn script_rest(p: &mut Peel, dialect: Dialect, via: &'static str) -> bool {
    let text = join_raw(&p.argv[1..]);
    add_script(p, text, dialect, via)
}

fn simple(p: &mut Peel, name: &str) -> bool {
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

fn env(p: &mut Peel) -> bool {
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

fn sudo(p: &mut Peel, name: &str) -> bool {
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
    keep_from(p, i, name)
}

fn command(p: &mut Peel) -> bool {
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

fn timeout(p: &mut Peel) -> bool {
    let i = first_operand(&p.argv, 1, "sk", &["signal", "kill-after"]);
    keep_from(p, i + 1, "timeout")
}

fn watch(p: &mut Peel) -> bool {
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

fn rtk(p: &mut Peel) -> bool {
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

fn runner(p: &mut Peel, name: &str) -> bool {
    match pm_call(&p.argv) {
        Some(PmCall::Exec { start, script }) => {
            let via: &'static str = match name {
                "npx" | "pnpx" => "npx",
                "bunx" => "bunx",
                "npm" => "npm exec",
                "pnpm" => "pnpm exec",
                "yarn" => "yarn dlx",
                _ => "bun x",
            };
            if let Some(s) = script {
                return add_script(p, s, Dialect::Posix, via);
            }
            keep_from(p, start, via)
        }
        _ => false,
    }
}

/// `bash [opts] -c '<script>'`, `bash file args`, or a shell reading stdin (kept).
fn shell(p: &mut Peel, name: &str) -> bool {
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

fn source(p: &mut Peel) -> bool {
    match p.argv.get(1).map(|w| w.text.as_str()) {
        Some("/dev/stdin" | "-") | None => false,
        Some(_) => drop_head(p, "source"),
    }
}

fn cmd(p: &mut Peel) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.to_ascii_lowercase();
        if matches!(t.as_str(), "/c" | "/k" | "/r") {
            let rest = p.argv[i + 1..].to_vec();
            return add_script(p, join_cmd(&rest), Dialect::Cmd, "cmd /c");
        }
        if (t.starts_with("/c") || t.starts_with("/k")) && t.len() > 2 && !t.contains(':') {
            let mut rest = vec![Word::plain(&w.text[2..])];
            rest.extend(p.argv[i + 1..].iter().cloned());
            return add_script(p, join_cmd(&rest), Dialect::Cmd, "cmd /c");
        }
        if t.starts_with('/') && t.len() <= 8 {
            i += 1;
            continue;
        }
        break;
    }
    false
}

/// Whether `name` (no dashes, lowercase) abbreviates `full` to at least `min` letters.
fn abbrev(name: &str, full: &str, min: usize) -> bool {
    name.len() >= min && full.starts_with(name)
}

fn powershell(p: &mut Peel) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.to_ascii_lowercase();
        if !(t.starts_with('-') || t.starts_with('/')) || t.len() < 2 {
            let rest = p.argv[i..].to_vec();
            return add_script(p, join_raw(&rest), Dialect::PowerShell, "powershell");
        }
        let name = t.trim_start_matches(['-', '/']);
        let name = name.split(':').next().unwrap_or_default();
        if name == "c"
            || abbrev(name, "command", 3)
            || name == "cwa"
            || abbrev(name, "commandwithargs", 8)
        {
            let rest = p.argv[i + 1..].to_vec();
            if rest.len() == 1 && rest[0].text == "-" {
                return false;
            }
            return add_script(
                p,
                join_raw(&rest),
                Dialect::PowerShell,
                "powershell -Command",
            );
        }
        if matches!(name, "e" | "ec") || abbrev(name, "encodedcommand", 2) {
            let decoded = p.argv.get(i + 1).and_then(|w| decode_encoded(&w.text));
            return match decoded {
                Some(text) => {
                    add_script(p, text, Dialect::PowerShell, "powershell -EncodedCommand")
                }
                None => false,
            };
        }
        if name == "f" || abbrev(name, "file", 2) {
            return keep_from(p, i + 1, "powershell -File");
        }
        let takes_value = matches!(name, "ep" | "ex" | "w" | "o" | "of" | "if" | "wd" | "v")
            || abbrev(name, "executionpolicy", 2)
            || abbrev(name, "windowstyle", 2)
            || abbrev(name, "outputformat", 2)
            || abbrev(name, "inputformat", 3)
            || abbrev(name, "configurationname", 4)
            || abbrev(name, "configurationfile", 14)
            || abbrev(name, "workingdirectory", 2)
            || abbrev(name, "settingsfile", 2)
            || abbrev(name, "custompipename", 2)
            || abbrev(name, "psconsolefile", 2)
            || abbrev(name, "version", 2);
        i += if takes_value && !t.contains(':') {
            2
        } else {
            1
        };
    }
    false
}

/// Base64 of UTF-16LE, as `-EncodedCommand` takes it.
pub fn decode_encoded(b64: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(b64.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in b64.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' | b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push(((acc >> bits) & 0xff) as u8);
        }
        if bytes.len() > MAX_DECODED {
            return None;
        }
    }
    let units = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]));
    let text: String = char::decode_utf16(units)
        .map(|r| r.unwrap_or('\u{fffd}'))
        .collect();
    Some(text)
}

/// cmd's `start ["title"] [/flags] command args`.
fn start(p: &mut Peel) -> bool {
    let mut i = 1;
    if p.argv.get(1).is_some_and(|w| w.quoted) {
        i = 2;
    }
    while let Some(w) = p.argv.get(i) {
        let t = w.text.to_ascii_lowercase();
        if !t.starts_with('/') || t.len() > 14 {
            break;
        }
        i += if matches!(t.as_str(), "/d" | "/node" | "/affinity") {
            2
        } else {
            1
        };
    }
    if i >= p.argv.len() {
        return false;
    }
    keep_from(p, i, "start")
}

/// `Start-Process [-FilePath] x [-ArgumentList] a,b …`.
fn start_process(p: &mut Peel) -> bool {
    let mut file: Option<String> = None;
    let mut args: Option<String> = None;
    let mut positional = 0;
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.to_ascii_lowercase();
        if t.len() > 1 && t.starts_with('-') {
            let (name, inline) = match t[1..].split_once(':') {
                Some((n, _)) => (n.to_string(), Some(w.text[n.len() + 2..].to_string())),
                None => (t[1..].to_string(), None),
            };
            let value = |i: usize| -> (Option<String>, usize) {
                match &inline {
                    Some(v) => (Some(v.clone()), 1),
                    None => (p.argv.get(i + 1).map(|w| w.text.clone()), 2),
                }
            };
            if abbrev(&name, "filepath", 1) || name == "path" || name == "pspath" {
                let (v, n) = value(i);
                file = v;
                i += n;
            } else if abbrev(&name, "argumentlist", 1) || name == "args" {
                let (v, n) = value(i);
                args = v;
                i += n;
            } else if [
                "wait",
                "nonewwindow",
                "passthru",
                "usenewenvironment",
                "loaduserprofile",
            ]
            .iter()
            .any(|f| abbrev(&name, f, 2))
            {
                i += 1;
            } else {
                i += if inline.is_some() { 1 } else { 2 };
            }
            continue;
        }
        match positional {
            0 => file = Some(w.text.clone()),
            1 => args = Some(w.text.clone()),
            _ => {}
        }
        positional += 1;
        i += 1;
    }
    let Some(file) = file else { return false };
    let mut line = if file.contains([' ', '\t']) {
        format!("\"{file}\"")
    } else {
        file
    };
    if let Some(a) = args {
        let parts: Vec<&str> = a.split(',').collect();
        line.push(' ');
        if parts.len() > 1 {
            let words: Vec<Word> = parts.iter().map(|s| Word::plain(s.trim())).collect();
            line.push_str(&join_cmd(&words));
        } else {
            line.push_str(&a);
        }
    }
    add_script(p, line, Dialect::Cmd, "Start-Process")
}

fn tmux(p: &mut Peel) -> bool {
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
        i += if matches!(t, "-L" | "-S" | "-f" | "-T") {
            2
        } else {
            1
        };
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
    let j = first_operand(&p.argv, i + 1, short, &[]);
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

fn xargs(p: &mut Peel) -> bool {
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

fn find(p: &mut Peel) {
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

fn docker(p: &mut Peel) -> bool {
    let Some(c) = container(&p.argv) else {
        return false;
    };
    p.sandbox = Some(c.sandboxed || p.sandbox == Some(true));
    p.wrappers.push(format!("docker {}", c.verb));
    p.argv = c.argv;
    true
}

fn wsl(p: &mut Peel) -> bool {
    let mut i = 1;
    let mut exec = false;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        match t {
            "-d" | "--distribution" | "-u" | "--user" | "--cd" | "--shell-type" => i += 2,
            "-e" | "--exec" => {
                exec = true;
                i += 1;
                break;
            }
            "--" => {
                i += 1;
                break;
            }
            _ if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    if exec {
        return keep_from(p, i, "wsl -e");
    }
    if i >= p.argv.len() {
        return false;
    }
    let rest = p.argv[i..].to_vec();
    add_script(p, join_raw(&rest), Dialect::Posix, "wsl")
}

fn concurrently(p: &mut Peel) -> bool {
    let value = [
        "-n",
        "--names",
        "-c",
        "--prefix-colors",
        "-p",
        "--prefix",
        "-s",
        "--success",
        "-m",
        "--max-processes",
        "-l",
        "--prefix-length",
        "-t",
        "--timestamp-format",
        "--restart-tries",
        "--restart-after",
        "--names-separator",
        "--default-input-target",
    ];
    let mut scripts = Vec::new();
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t.starts_with('-') && t.len() > 1 {
            i += if value.contains(&t) { 2 } else { 1 };
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
        });
    }
    p.wrappers.push("concurrently".to_string());
    p.argv.clear();
    false
}

/// `git -c alias.x=<value> … x args`: expand the alias (`!` aliases are shell scripts).
fn git_alias(p: &mut Peel, done: &mut Vec<String>) -> bool {
    let mut aliases: Vec<(String, String)> = Vec::new();
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = w.text.as_str();
        if t == "-c" {
            if let Some(kv) = p.argv.get(i + 1)
                && let Some((k, v)) = kv.text.split_once('=')
                && let Some(name) = k.to_ascii_lowercase().strip_prefix("alias.")
            {
                aliases.push((name.to_string(), v.to_string()));
            }
            i += 2;
            continue;
        }
        if matches!(
            t,
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env" | "--super-prefix"
        ) {
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

#[cfg(test)]
#[path = "wrappers_tests.rs"]
mod tests;
