//! Wrapper peeling: find the command a segment really runs.
//!
//! Peeled in a loop, each recorded by name: `NAME=V` assignments, `env`, `sudo`/`doas`,
//! `command`, `builtin`, `exec`, `nohup`, `setsid`, `nice`, `ionice`, `stdbuf`, `time`,
//! `timeout`, `watch`, `winpty`, `cross-env`, `rtk`, a leading `\`, package runners (`npx`,
//! `npm exec`, `pnpm exec|dlx`, `yarn dlx|exec`, `bunx`, `deno run npm:…`, with `pkg@version`
//! read as the package's command), `corepack <pm>`, `node node_modules/<pkg>/bin/<cmd>`
//! (the package's command), `xargs`, `docker run|exec`,
//! `source file`, `call`, `start`, `Start-Process`, and `git -c alias.x=…` aliases.
//!
//! Wrappers that carry a command *string* hand it back as a [`Script`] to be lexed as a
//! source of its own: `bash|sh|zsh|dash -c` (bundled `-lc`, `-ec`), `eval`, `cmd /c|/k`,
//! `powershell|pwsh -Command` and `-EncodedCommand` (base64 UTF-16LE, decoded), `wsl`,
//! `watch` (without `-x`), `tmux new-session|new-window|split-window|send-keys`,
//! `Invoke-Expression`, `env -S`, `npx -c`, `concurrently`, `cross-env-shell` and `!`
//! git aliases. `find -exec|-execdir|-ok … ;|+` yields the executed commands as
//! derived segments and keeps `find` itself as the command.
//!
//! Which program is a wrapper, and which of its options take a value, is its row of the
//! program table (`shell/programs.rs`); the row names the handler here. Wrappers whose
//! grammar is only "options, N operands, then the command" (or "an option carries a command
//! string") are data alone (`table.rs` reads them): `nice`, `timeout`, `flock`, `su -c`, `runuser`,
//! `script -c`, `taskset`, `chrt`, `strace`, `systemd-run`, `chronic`, `coproc`, `numactl`,
//! `unshare`, `xvfb-run`, `entr`, `nix-shell --run`, ... and `parallel` (a template over the
//! arguments after `:::`).

mod dotnet;
mod launchers;
mod posix;
mod table;
pub mod windows;

use std::borrow::Cow;

use super::Dialect;
use super::pm::{PmCall, pm_call};
use super::programs::{self, Grammar, Pm, Wrap};
use super::word::{Word, command_name, is_assignment};

/// Upper bound on peeling steps for one segment.
const MAX_STEPS: usize = 32;
/// Upper bound on argv growth through alias expansion.
pub(super) const MAX_WORDS: usize = 512;
/// Upper bound on a decoded `-EncodedCommand`.
pub(super) const MAX_DECODED: usize = 256 * 1024;

/// A command string found inside a wrapper, to be analyzed as a nested source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The command text.
    pub text: String,
    /// How to lex it.
    pub dialect: Dialect,
    /// The wrapper that carried it (`bash -c`, `eval`, `cmd /c`, ...).
    pub via: &'static str,
    /// Its positional parameters when the wrapper gives them (`sh -c '…' arg0 a b` → `a b`).
    pub args: Option<Vec<Word>>,
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
    /// Inside a container sharing the host's network or pid namespace (`--network host`).
    pub host_app: bool,
    /// `Some(replace)` when `xargs` was peeled (its `-I` string, if any).
    pub xargs: Option<Option<String>>,
    /// A `-c` style script was peeled: stdin goes to that script.
    pub shell_c: bool,
}

/// Join words with spaces, each passed through `quote`; a lone word is kept as it is.
fn join_with(words: &[Word], quote: impl Fn(&Word) -> Cow<'_, str>) -> String {
    if let [w] = words {
        return w.text.clone();
    }
    let mut out = String::new();
    for (k, w) in words.iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(&quote(w));
    }
    out
}

/// Join words the way `eval` or PowerShell rebuild a command line.
pub(super) fn join_raw(words: &[Word]) -> String {
    join_with(words, |w| Cow::Borrowed(&w.text))
}

/// Join words re-quoting those a POSIX shell would split.
pub(super) fn join_posix(words: &[Word]) -> String {
    // Patterns and expansions the outer shell left unquoted stay so (it expands them first).
    join_with(words, |w| {
        if (w.glob || w.dynamic) && !w.quoted {
            Cow::Borrowed(&w.text)
        } else {
            crate::shell::word::quote_posix(&w.text)
        }
    })
}

/// Join words the way a Windows command line is rebuilt (quotes around spaces).
pub(super) fn join_cmd(words: &[Word]) -> String {
    join_with(words, |w| {
        let t = w.text.as_str();
        if t.is_empty() || t.contains([' ', '\t']) {
            Cow::Owned(format!("\"{t}\""))
        } else {
            Cow::Borrowed(t)
        }
    })
}

/// Index of the first operand of `args` after options, reading them by `g`: its short
/// options take a value (`-u root`, `-uroot`), and its long ones (`--user root`).
pub(super) fn first_operand(args: &[Word], from: usize, g: Grammar) -> usize {
    let (short_val, long_val) = (g.short, g.long);
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

/// Whether [`peel`] could change `words`: a cheap look at the head, so that the common
/// plain command is not copied.
pub fn may_peel(words: &[Word], dialect: Dialect) -> bool {
    let Some(head) = words.first() else {
        return false;
    };
    if head.backslashed
        || (dialect == Dialect::Posix && is_assignment(&head.text))
        || (dialect == Dialect::Cmd && head.text.starts_with('@'))
    {
        return true;
    }
    if dialect == Dialect::PowerShell && dotnet::may_be_call(&head.text) {
        return true;
    }
    let Some(prog) = programs::get(&command_name(&head.text)) else {
        return false;
    };
    match prog.wrap {
        None => false,
        Some(Wrap::GitAlias) => words.iter().any(|w| w.text == "-c"),
        // A package manager peels only when it runs a package's command (`npm exec`).
        Some(Wrap::Runner(_)) if !matches!(prog.pm, Some(Pm::Npx | Pm::Bunx)) => {
            matches!(pm_call(words), Some(PmCall::Exec { .. }))
        }
        Some(Wrap::NodeBin) => words.iter().any(|w| w.text.contains("node_modules")),
        Some(_) => true,
    }
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
        if dialect == Dialect::PowerShell && dotnet::may_be_call(&p.argv[0].text) {
            dotnet::call(&mut p);
            break;
        }
        let name = command_name(&p.argv[0].text).into_owned();
        let Some(prog) = programs::get(&name) else {
            break;
        };
        let more = match prog.wrap {
            None => false,
            Some(Wrap::Prefix(g)) => table::peel(&mut p, prog, g),
            Some(Wrap::Drop) => drop_head(&mut p, prog.name),
            Some(Wrap::Env) => posix::env(&mut p, prog),
            Some(Wrap::Sudo) => posix::sudo(&mut p, prog),
            Some(Wrap::Command) => posix::command(&mut p),
            Some(Wrap::Watch) => posix::watch(&mut p, prog),
            Some(Wrap::Rtk) => posix::rtk(&mut p),
            Some(Wrap::Runner(via)) => posix::runner(&mut p, via),
            Some(Wrap::Corepack) => posix::corepack(&mut p, prog),
            Some(Wrap::NodeBin) => launchers::node_bin(&mut p, prog),
            Some(Wrap::Shell(via)) => posix::shell(&mut p, prog, via),
            Some(Wrap::Multicall) => multicall(&mut p, prog.name),
            Some(Wrap::Eval) => script_rest(&mut p, dialect, "eval"),
            Some(Wrap::Iex) => script_rest(&mut p, Dialect::PowerShell, "Invoke-Expression"),
            Some(Wrap::Source) => posix::source(&mut p),
            Some(Wrap::Cmd) => windows::cmd(&mut p),
            Some(Wrap::PowerShell) => windows::powershell(&mut p),
            Some(Wrap::Start) if dialect == Dialect::PowerShell => windows::start_process(&mut p),
            Some(Wrap::Start) => windows::start(&mut p),
            Some(Wrap::StartProcess) => windows::start_process(&mut p),
            Some(Wrap::Tmux) => launchers::tmux(&mut p, prog),
            Some(Wrap::Xargs) => posix::xargs(&mut p, prog),
            Some(Wrap::Find) => {
                posix::find(&mut p);
                false
            }
            Some(Wrap::Container) => launchers::docker(&mut p),
            Some(Wrap::Wsl) => windows::wsl(&mut p),
            Some(Wrap::Concurrently) => launchers::concurrently(&mut p, prog),
            Some(Wrap::CrossEnvShell) => script_rest(&mut p, Dialect::Posix, "cross-env-shell"),
            Some(Wrap::GitAlias) => launchers::git_alias(&mut p, prog, &mut aliases_done),
            Some(Wrap::Parallel) => table::parallel(&mut p, prog),
            Some(Wrap::Trap) => posix::trap(&mut p),
        };
        if !more {
            break;
        }
    }
    p
}

pub(super) fn drop_head(p: &mut Peel, name: &str) -> bool {
    p.argv.remove(0);
    p.wrappers.push(name.to_string());
    true
}

/// `busybox rm …`, `toybox rm …`, `coreutils --coreutils-prog=rm …`: the program named.
fn multicall(p: &mut Peel, name: &str) -> bool {
    let named = p.argv.get(1).and_then(|w| {
        let v = w.text.strip_prefix("--coreutils-prog")?;
        Some(v.strip_prefix('=').map(str::to_string))
    });
    match named {
        Some(Some(prog)) => {
            p.argv[1].text = prog;
            drop_head(p, name)
        }
        // `--coreutils-prog NAME`.
        Some(None) if p.argv.len() > 2 => {
            p.argv.remove(1);
            drop_head(p, name)
        }
        Some(None) => false,
        None => drop_head(p, name),
    }
}

pub(super) fn keep_from(p: &mut Peel, i: usize, name: impl Into<String>) -> bool {
    let i = i.min(p.argv.len());
    p.argv.drain(..i);
    p.wrappers.push(name.into());
    true
}

pub(super) fn add_script(p: &mut Peel, text: String, dialect: Dialect, via: &'static str) -> bool {
    p.scripts.push(Script {
        text,
        dialect,
        via,
        args: None,
    });
    p.wrappers.push(via.to_string());
    p.argv.clear();
    p.shell_c = true;
    false
}

fn script_rest(p: &mut Peel, dialect: Dialect, via: &'static str) -> bool {
    // `Invoke-Expression -Command '…'` (any prefix of `-Command`).
    let named = dialect == Dialect::PowerShell
        && p.argv.get(1).is_some_and(|w| {
            let t = w.text.to_ascii_lowercase();
            t.len() > 1 && "-command".starts_with(&t)
        });
    let mut text = join_raw(&p.argv[1 + usize::from(named)..]);
    // `iex ('np'+'m run build')`: the string the expression makes.
    if dialect == Dialect::PowerShell
        && let Some(v) = super::vars::ps_concat(&text)
    {
        text = v;
    }
    add_script(p, text, dialect, via)
}

#[cfg(test)]
mod tests;
