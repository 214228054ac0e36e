//! Windows wrappers: `cmd /c|/k`, `powershell|pwsh -Command|-EncodedCommand|-File`,
//! cmd's `start`, PowerShell's `Start-Process`, and `wsl`.
//!
//! `-EncodedCommand` is decoded (base64 of UTF-16LE) and analyzed like `-Command`: it is
//! the same command, only spelled so a text match cannot see it.

use super::{MAX_DECODED, Peel, add_script, join_cmd, join_raw, keep_from};
use crate::shell::Dialect;
use crate::shell::word::{Word, win_switch};

pub(super) fn cmd(p: &mut Peel) -> bool {
    let mut i = 1;
    while let Some(w) = p.argv.get(i) {
        let t = win_switch(&w.text);
        if matches!(t.as_str(), "/c" | "/k" | "/r") {
            let rest = p.argv[i + 1..].to_vec();
            return add_script(p, join_cmd(&rest), Dialect::Cmd, "cmd /c");
        }
        if (t.starts_with("/c") || t.starts_with("/k")) && t.len() > 2 && !t.contains(':') {
            let mut rest = vec![Word::plain(&t[2..])];
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

pub(super) fn powershell(p: &mut Peel) -> bool {
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
pub(super) fn start(p: &mut Peel) -> bool {
    let mut i = 1;
    if p.argv.get(1).is_some_and(|w| w.quoted) {
        i = 2;
    }
    while let Some(w) = p.argv.get(i) {
        let t = win_switch(&w.text);
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
pub(super) fn start_process(p: &mut Peel) -> bool {
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

pub(super) fn wsl(p: &mut Peel) -> bool {
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
