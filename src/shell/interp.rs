//! Interpreter one-liners: what a program in another language asks the system to do, as
//! shell commands the rules and the write check already understand. Programs come inline
//! (`python -c`, `node -e|-p|--eval`, `deno eval`, `bun -e`, `perl -e|-E`, `ruby -e`,
//! `php -r`, an `awk` program) or from stdin (`python - <<EOF`, `node <<<'…'`).
//!
//! A documented heuristic, not a parser of those languages. The program is cut into string
//! literals, names (dotted: `subprocess.run`, `fs.rmSync`, `File::Path::rmtree`) and
//! punctuation, comments dropped; then each call of a name in the language's table is read
//! from its literal arguments:
//! - a process call (`os.system`, `subprocess.*`, `child_process` `exec*`/`spawn*`/
//!   `execFile*`, `Bun.spawn`, `Deno.Command`, perl/ruby/php `system`/`exec`/`spawn`,
//!   `IO.popen`, `Open3.*`, awk `system`, backticks, `qx{}`, `%x{}`, `` $`…` ``): a string is a
//!   shell command, analysed like a `bash -c` string; a literal list of strings (or several
//!   string arguments) is an argv;
//! - a file call: `shutil.rmtree(p)`, `fs.rmSync(p, {recursive: true})`,
//!   `FileUtils.rm_rf(p)`, `rmtree(p)`, `rimraf(p)` → `rm -rf p`; `os.remove(p)`,
//!   `fs.unlinkSync(p)`, `unlink(p)` → `rm p`; `os.rename(a, b)`, `fs.renameSync` → `mv a b`;
//!   `shutil.copy(a, b)`, `fs.copyFileSync` → `cp a b`; `open(p, 'w')`, `Path(p).write_text`,
//!   `fs.writeFileSync(p, …)`, `File.write(p, …)`, perl `open(F, '>', p)`, awk `> "p"` →
//!   `tee p` (a write of p);
//! - an HTTP call (`fetch`, `requests.*`, `urlopen`, `axios.*`, `http.request`,
//!   `Net::HTTP.*`) → `curl <url> -d <its other strings>`, for the bridge rules.
//!
//! A string built at run time (concatenation, a variable, an f-string or template with
//! `{…}`, interpolation) is not known and its call is dropped, as an unknown shell target
//! is: coordination, not a sandbox. Qualified names are matched by their last part and,
//! for generic names (`run`, `call`, `exec`, `remove`, `open`, ...), the module they come
//! from. Work is bounded: [`MAX_PROGRAM`] bytes, [`MAX_TOKENS`] tokens, [`MAX_EFFECTS`]
//! results, 512 calls of at most 2048 tokens each per program. Module aliases are followed
//! (`import subprocess as sp`, `from os import system as s`, `__import__("os")`, JS `require`
//! and `import` renames, destructuring included; at most 32 per program).

mod calls;
mod lexer;

use super::word::{Word, command_name};
use calls::{call_at, kind, str_arg, writes_mode};
use lexer::{Lexer, Tok};

/// Longest program read (the rest is ignored).
pub const MAX_PROGRAM: usize = 64 * 1024;
/// Most tokens read from one program.
pub const MAX_TOKENS: usize = 20_000;
/// Most commands and scripts taken from one program.
pub const MAX_EFFECTS: usize = 64;
/// Most calls read from one program, and most tokens one call's arguments span.
const MAX_CALLS: usize = 512;
pub(super) const MAX_CALL_TOKENS: usize = 2048;

pub use super::programs::Lang;

/// What a program asks for, as shell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Shell command strings (`os.system("…")`).
    pub scripts: Vec<String>,
    /// Commands as argv (`['git', 'reset', '--hard']`, `rm -rf dist` for `rmtree`).
    pub commands: Vec<Vec<Word>>,
}

/// How explanations name a program's source (`python -c`).
pub fn via(lang: Lang) -> &'static str {
    lang.code_flags().via
}

/// The language of the interpreter `name` (a [`command_name`]).
pub fn lang_of(name: &str) -> Option<Lang> {
    super::programs::get(name)?.lang
}

/// The program an interpreter command line carries inline, and its language; `None`
/// when it runs a file or reads its program from stdin.
pub fn inline_program(argv: &[Word]) -> Option<(Lang, String)> {
    let name = command_name(&argv.first()?.text);
    let lang = lang_of(&name)?;
    let args = &argv[1..];
    let code = match (lang, &*name) {
        (Lang::Js, "deno") => {
            let i = args.iter().position(|w| w.text == "eval")?;
            args[i + 1..]
                .iter()
                .find(|w| !w.text.starts_with('-'))?
                .text
                .clone()
        }
        (Lang::Awk, _) => awk_program(args)?,
        _ => {
            let f = lang.code_flags();
            flag_code(args, f.code, f.value, f.bundle)?
        }
    };
    Some((lang, code))
}

/// The code after `code_flags` (all of them: `perl -e a -e b`), in options before the first
/// operand. `value` lists options taking a value; `bundle` the single-letter switches that
/// may come before the code flag in one word (`perl -lne`, `python -Ic`).
fn flag_code(args: &[Word], code_flags: &[&str], value: &[&str], bundle: &str) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" || !t.starts_with('-') || t == "-" {
            break;
        }
        if code_flags.contains(&t) {
            out.push(args.get(i + 1)?.text.clone());
            i += 2;
            continue;
        }
        if value.first() == Some(&"-m") && t == "-m" {
            // `python -m module …`: the rest belongs to the module.
            break;
        }
        if let Some(code) = code_flags
            .iter()
            .filter(|f| f.starts_with("--"))
            .find_map(|f| t.strip_prefix(*f)?.strip_prefix('='))
        {
            out.push(code.to_string());
            i += 1;
            continue;
        }
        // `-lne CODE`, `-Ic CODE`, `-eCODE`.
        let short: Vec<char> = code_flags
            .iter()
            .filter_map(|f| f.strip_prefix('-').filter(|r| r.len() == 1))
            .filter_map(|r| r.chars().next())
            .collect();
        if !t.starts_with("--")
            && let Some(k) = t[1..].find(|c: char| short.contains(&c))
            && t[1..1 + k].chars().all(|c| bundle.contains(c))
        {
            let rest = &t[2 + k..];
            if rest.is_empty() {
                out.push(args.get(i + 1)?.text.clone());
                i += 2;
            } else {
                out.push(rest.to_string());
                i += 1;
            }
            continue;
        }
        i += if value.contains(&t) { 2 } else { 1 };
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

/// awk's program: `-e`/`--source` texts, else the first operand (none with `-f`).
fn awk_program(args: &[Word]) -> Option<String> {
    let mut i = 0;
    let mut sources = Vec::new();
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        match t {
            "--" => {
                i += 1;
                break;
            }
            "-f" | "--file" => return None,
            "-e" | "--source" => {
                sources.push(args.get(i + 1)?.text.clone());
                i += 2;
            }
            "-F" | "-v" | "--assign" | "--field-separator" => i += 2,
            _ if t.starts_with('-') && t.len() > 1 => i += 1,
            _ => break,
        }
    }
    if !sources.is_empty() {
        return Some(sources.join("\n"));
    }
    args.get(i).map(|w| w.text.clone())
}

/// What `program` (in `lang`) asks for, as shell scripts and commands.
pub fn effects(lang: Lang, program: &str) -> Effects {
    let mut end = program.len().min(MAX_PROGRAM);
    while !program.is_char_boundary(end) {
        end -= 1;
    }
    let program = &program[..end];
    let toks = Lexer {
        s: program.as_bytes(),
        i: 0,
        lang,
        out: Vec::new(),
    }
    .run();
    let toks = unalias(lang, toks);
    let mut out = Effects::default();
    let mut calls = 0;
    let mut i = 0;
    while i < toks.len() && !out.full() && calls < MAX_CALLS {
        match &toks[i] {
            Tok::Cmd(Some(text)) => out.script(text.clone()),
            Tok::Name(n) => {
                // `Path('x').unlink()`: the path, then the method.
                if lang == Lang::Python && (n == "Path" || n.ends_with(".Path")) {
                    calls += 1;
                    if let Some(used) = path_method(&toks, i, &mut out) {
                        i = used;
                        continue;
                    }
                }
                let next = toks.get(i + 1);
                let bare = matches!(lang, Lang::Perl | Lang::Ruby)
                    && matches!(next, Some(Tok::Str(_) | Tok::P('[')));
                if (matches!(next, Some(Tok::P('('))) || bare)
                    && let Some(k) = kind(lang, n, program)
                {
                    calls += 1;
                    let c = call_at(n, &toks, i + 1);
                    out.call(lang, k, &c);
                }
            }
            Tok::P(op @ ('>' | '|')) if lang == Lang::Awk => {
                // `print … > "file"`, `print … | "cmd"`.
                let append = *op == '>' && toks.get(i + 1) == Some(&Tok::P('>'));
                let at = if append { i + 2 } else { i + 1 };
                if let Some(Tok::Str(Some(s))) = toks.get(at) {
                    if *op == '>' {
                        out.command(vec!["tee".to_string(), "--".to_string(), s.clone()]);
                    } else {
                        out.script(s.clone());
                    }
                }
            }
            // `"cmd" | getline`.
            Tok::Str(Some(s))
                if lang == Lang::Awk
                    && toks.get(i + 1) == Some(&Tok::P('|'))
                    && matches!(toks.get(i + 2), Some(Tok::Name(n)) if n == "getline") =>
            {
                out.script(s.clone());
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Most module aliases remembered from one program.
const MAX_ALIASES: usize = 32;

/// The program's names as the modules they stand for: `import subprocess as sp` makes
/// `sp.run` read `subprocess.run`, `from os import system as s` makes `s` read `os.system`,
/// `__import__("os").system` reads `os.system`; in JS `const cp = require("child_process")`,
/// `const { execSync: run } = require(…)`, `import { execSync as run } from "…"` and
/// `import * as cp from "…"`.
fn unalias(lang: Lang, mut toks: Vec<Tok>) -> Vec<Tok> {
    let mut aliases: Vec<(String, String)> = Vec::new();
    let mut add = |alias: &str, to: String| {
        if aliases.len() < MAX_ALIASES && alias != to {
            aliases.push((alias.to_string(), to));
        }
    };
    let mut dynamic_import = Vec::new();
    for i in 0..toks.len() {
        let at = |k: usize| toks.get(i + k);
        match (lang, name(at(0))) {
            (Lang::Python, Some("import")) => {
                if let (Some(m), Some("as"), Some(a)) = (name(at(1)), name(at(2)), name(at(3))) {
                    add(a, m.to_string());
                }
            }
            (Lang::Python, Some("from")) => {
                let (Some(m), Some("import")) = (name(at(1)), name(at(2))) else {
                    continue;
                };
                // `from os import system as s, popen`, `from os import (system as s)`.
                let mut k = 3;
                while let Some(t) = toks.get(i + k) {
                    match t {
                        Tok::P('(' | ',') => k += 1,
                        Tok::Name(x) if name(at(k + 1)) == Some("as") => {
                            if let Some(a) = name(at(k + 2)) {
                                add(a, format!("{m}.{x}"));
                            }
                            k += 3;
                        }
                        Tok::Name(x) if x != "as" => {
                            add(x, format!("{m}.{x}"));
                            k += 1;
                        }
                        _ => break,
                    }
                }
            }
            (Lang::Python, Some("__import__" | "importlib.import_module")) => {
                if let (Some(Tok::P('(')), Some(m), Some(Tok::P(')')), Some(f)) =
                    (at(1), string(at(2)), at(3), name(at(4)))
                    && f.starts_with('.')
                {
                    dynamic_import.push((i, format!("{m}{f}")));
                }
            }
            (Lang::Js, Some("require")) => {
                // `X = require("m")`, `{ a: b, c } = require("m")`.
                let (Some(Tok::P('(')), Some(m)) = (at(1), string(at(2))) else {
                    continue;
                };
                let m = m.trim_start_matches("node:");
                if i >= 2 && toks[i - 1] == Tok::P('=') {
                    match &toks[i - 2] {
                        Tok::Name(a) => add(a, m.to_string()),
                        Tok::P('}') => js_destructured(&toks[..i - 1], m, &mut add),
                        _ => {}
                    }
                }
            }
            (Lang::Js, Some("import")) => {
                // `import * as cp from "m"`, `import { a as b } from "m"`, `import cp from "m"`.
                let mut k = 1;
                let mut names: Vec<(String, String)> = Vec::new();
                let mut module_alias: Option<&str> = None;
                while let Some(t) = toks.get(i + k) {
                    match t {
                        Tok::P('*') if name(at(k + 1)) == Some("as") => {
                            module_alias = name(at(k + 2));
                            k += 3;
                        }
                        Tok::P('{' | ',' | '}') => k += 1,
                        Tok::Name(x) if x == "from" => break,
                        Tok::Name(x) if name(at(k + 1)) == Some("as") => {
                            if let Some(a) = name(at(k + 2)) {
                                names.push((a.to_string(), x.clone()));
                            }
                            k += 3;
                        }
                        Tok::Name(x) if k == 1 => {
                            module_alias = Some(x);
                            k += 1;
                        }
                        Tok::Name(_) => k += 1,
                        _ => break,
                    }
                    if k > 64 {
                        break;
                    }
                }
                if name(at(k)) == Some("from")
                    && let Some(m) = string(at(k + 1))
                {
                    let m = m.trim_start_matches("node:");
                    if let Some(a) = module_alias {
                        add(a, m.to_string());
                    }
                    for (a, x) in names {
                        add(&a, format!("{m}.{x}"));
                    }
                }
            }
            _ => {}
        }
    }
    // `__import__("os").system(…)` → `os.system(…)`.
    for (i, full) in dynamic_import.into_iter().rev() {
        toks.splice(i..i + 5, [Tok::Name(full)]);
    }
    if aliases.is_empty() {
        return toks;
    }
    for t in &mut toks {
        let Tok::Name(n) = t else { continue };
        let (head, rest) = match n.find('.') {
            Some(0) | None => (n.as_str(), ""),
            Some(k) => n.split_at(k),
        };
        if let Some((_, to)) = aliases.iter().rev().find(|(a, _)| a == head) {
            *n = format!("{to}{rest}");
        }
    }
    toks
}

fn name(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Name(n)) => Some(n.as_str()),
        _ => None,
    }
}

fn string(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Str(Some(s))) => Some(s.as_str()),
        _ => None,
    }
}

/// `{ execSync: run, spawn } = require("m")` read backwards from its `}`: each renamed (or
/// kept) name stands for `m.<name>`.
fn js_destructured(toks: &[Tok], m: &str, add: &mut impl FnMut(&str, String)) {
    let Some(open) = toks.iter().rposition(|t| *t == Tok::P('{')) else {
        return;
    };
    let inner = &toks[open + 1..toks.len().saturating_sub(1)];
    for part in inner.split(|t| *t == Tok::P(',')) {
        match part {
            [Tok::Name(x), Tok::P(':'), Tok::Name(a)] => add(a, format!("{m}.{x}")),
            [Tok::Name(x)] => add(x, format!("{m}.{x}")),
            _ => {}
        }
    }
}

/// `Path('x').unlink()` and friends; the index after the method's call.
fn path_method(toks: &[Tok], i: usize, out: &mut Effects) -> Option<usize> {
    let c = call_at("Path", toks, i + 1);
    let path = str_arg(c.args.first())?.to_string();
    // Find the matching `)` of `Path(…)`, then `.method(`.
    let mut depth = 0usize;
    let mut j = i + 1;
    while let Some(t) = toks.get(j) {
        match t {
            Tok::P('(') => depth += 1,
            Tok::P(')') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        j += 1;
    }
    let Some(Tok::Name(m)) = toks.get(j + 1) else {
        return None;
    };
    let method = m.trim_start_matches('.');
    let call = call_at(method, toks, j + 2);
    match method {
        "unlink" => out.command(words_of(["rm", "-f", "--", &path])),
        "rmdir" => out.command(words_of(["rmdir", "--", &path])),
        "write_text" | "write_bytes" | "touch" => out.command(words_of(["tee", "--", &path])),
        "open" if str_arg(call.args.first()).is_some_and(writes_mode) => {
            out.command(words_of(["tee", "--", &path]))
        }
        "rename" | "replace" => {
            if let Some(to) = str_arg(call.args.first()) {
                out.command(words_of(["mv", "--", &path, to]));
            }
        }
        _ => return None,
    }
    Some(j + 2)
}

fn words_of<const N: usize>(w: [&str; N]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests;
