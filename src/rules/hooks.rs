//! Rules about the guard's own wiring: a session cannot switch the hooks off from inside,
//! whatever spelling reaches the program. The program is the analysis's resolved head (wrappers
//! such as `env`, `sh -c` and `exec` peeled, paths and `.exe` dropped), looked up in the program
//! table's [`Hooks`] column: `guard`, its launcher `guard-hook` (also as `sh guard-hook …`), and
//! the Claude Code client.

use super::{Env, Found, Rules, View};
use crate::shell::Word;
use crate::shell::programs::{self, Hooks};
use crate::shell::word::command_name;

/// The guard's subcommands that rewrite the hook wiring.
const WIRING: [&str; 2] = ["install", "uninstall"];

/// The arguments the guard runs with in this segment, if it runs the guard: its own for `guard`,
/// those after the launcher for `guard-hook` (not `--tool <other>`), also when a shell runs the
/// launcher as its script file.
fn guard_args<'a>(v: &View<'a>) -> Option<&'a [Word]> {
    let launcher =
        |args: &'a [Word]| (args.first().is_none_or(|w| w.text != "--tool")).then_some(args);
    let prog = v.prog?;
    match prog.hooks {
        Some(Hooks::Wiring) => Some(v.args),
        Some(Hooks::Launcher) => launcher(v.args),
        _ if prog.shell_file => {
            let i = v.args.iter().position(|w| !w.text.starts_with('-'))?;
            let script = &v.args[i];
            let is_launcher = !script.dynamic
                && programs::get(&command_name(&script.text))
                    .is_some_and(|p| p.hooks == Some(Hooks::Launcher));
            if is_launcher {
                launcher(&v.args[i + 1..])
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `hooks.self-disarm`
pub(super) fn self_disarm(_r: &Rules, v: &View, _env: &Env) -> Option<Found> {
    let args = guard_args(v)?;
    let sub = args.iter().find(|w| !w.text.starts_with('-'))?;
    if sub.dynamic || !WIRING.contains(&sub.text.as_str()) {
        return None;
    }
    Some(Found::from(format!(
        "runs `guard {}`, which rewrites the hooks every session in this tree runs",
        sub.text
    )))
}

/// The value of the option word `w` (`--x=v` or `--x v`), taking the next word when it is
/// separate; `None` for another option.
fn value<'a>(
    w: &'a Word,
    name: &str,
    rest: &mut std::slice::Iter<'a, Word>,
) -> Option<Option<&'a Word>> {
    let t = w.text.strip_prefix("--")?.strip_prefix(name)?;
    if t.is_empty() {
        return Some(rest.next());
    }
    t.starts_with('=').then_some(Some(w))
}

/// The text of an option's value word (after `=` when it is inline).
fn value_text<'a>(w: &'a Word, name: &str) -> &'a str {
    w.text
        .strip_prefix("--")
        .and_then(|t| t.strip_prefix(name))
        .and_then(|t| t.strip_prefix('='))
        .unwrap_or(&w.text)
}

/// `hooks.start-unguarded`
pub(super) fn start_unguarded(_r: &Rules, v: &View, _env: &Env) -> Option<Found> {
    if v.prog?.hooks != Some(Hooks::Client) {
        return None;
    }
    let mut rest = v.args.iter();
    while let Some(w) = rest.next() {
        if w.text == "--" {
            break;
        }
        if w.text == "--bare" {
            return Some(Found::from(
                "starts a session with `--bare`, which runs no hooks".to_string(),
            ));
        }
        if let Some(val) = value(w, "settings", &mut rest) {
            let text = val.map(|x| value_text(x, "settings")).unwrap_or_default();
            let parsed = serde_json::from_str::<serde_json::Value>(text).ok();
            let Some(obj) = parsed.as_ref().and_then(|p| p.as_object()) else {
                return Some(Found::from(
                    "takes settings the guard cannot read (a file or a value made at run time), which may switch the hooks off".to_string(),
                ));
            };
            if obj
                .get("disableAllHooks")
                .is_some_and(|d| d != &serde_json::Value::Bool(false))
            {
                return Some(Found::from("sets `disableAllHooks`".to_string()));
            }
            continue;
        }
        if let Some(val) = value(w, "setting-sources", &mut rest) {
            let text = val
                .map(|x| value_text(x, "setting-sources"))
                .unwrap_or_default();
            let has =
                |s: &str| !val.is_some_and(|x| x.dynamic) && text.split(',').any(|x| x.trim() == s);
            if !(has("user") && has("project")) {
                return Some(Found::from(format!(
                    "reads only the settings sources `{text}`, without both the user's and the project's, where the guard's hooks are"
                )));
            }
        }
    }
    None
}

/// tmux subcommands that only read the server's state (and `-V`), when no format holds a
/// `#(…)`; every other one can start a command in the server (`new-window`, `send-keys`, `run-shell`, `if-shell`, `source-file`,
/// `pipe-pane`, hooks and key bindings) or end other sessions' panes (`kill-server`).
const TMUX_READS: [&str; 22] = [
    "ls",
    "list-sessions",
    "lsw",
    "list-windows",
    "lsp",
    "list-panes",
    "lsc",
    "list-clients",
    "lsb",
    "list-buffers",
    "lsk",
    "list-keys",
    "lscm",
    "list-commands",
    "has",
    "has-session",
    "show",
    "show-options",
    "showw",
    "show-window-options",
    "capture-pane",
    "display-message",
];

/// The first operand of a program's words (after its options, `takes` naming the short
/// options that take a value).
fn first_operand<'a>(args: &'a [Word], takes: &str) -> Option<&'a Word> {
    let mut it = args.iter();
    while let Some(w) = it.next() {
        let t = w.text.as_str();
        if !t.starts_with('-') || t == "-" {
            return Some(w);
        }
        if t.len() == 2 && takes.contains(&t[1..]) {
            it.next();
        }
    }
    None
}

/// `hooks.outside-session`: the segment hands a command to a server that is already running
/// (tmux, screen, atd, systemd), which starts it outside this session's process tree: the
/// kernel floor a command inherits and the tree that tells whose a call is stop at the
/// server. Read on the segment as written, since a peeled tmux leaves nothing to run here.
pub(super) fn outside_session(seg: &crate::shell::Segment) -> Option<Found> {
    let found = |what: &str| {
        Some(Found::from(format!(
            "hands its command to {what}, a server already running"
        )))
    };
    let words = seg.words();
    let after = |name: &str| {
        let i = words
            .iter()
            .position(|w| !w.quoted && command_name(&w.text) == name)?;
        Some(&words[i + 1..])
    };
    if seg.wrappers.iter().any(|w| w == "tmux") {
        return found("tmux");
    }
    if seg.wrappers.iter().any(|w| w == "systemd-run") {
        let scoped = after("systemd-run").is_some_and(|a| {
            a.iter()
                .take_while(|w| w.text.starts_with('-'))
                .any(|w| w.text == "--scope")
        });
        return if scoped { None } else { found("systemd") };
    }
    let head = seg.argv.first()?;
    if head.dynamic {
        return None;
    }
    let args = &seg.argv[1..];
    let flag = |f: &str| args.iter().any(|w| w.text == f);
    match command_name(&head.text).as_ref() {
        "tmux" => {
            // A format's `#(…)` runs a shell command in the server, even in a listing.
            if args.iter().any(|w| w.dynamic || w.text.contains("#(")) {
                return found("tmux");
            }
            if flag("-V") {
                return None;
            }
            match first_operand(args, "LSfTc") {
                Some(sub) if sub.dynamic => found("tmux"),
                Some(sub) if TMUX_READS.contains(&sub.text.as_str()) => None,
                _ => found("tmux"),
            }
        }
        "screen" if flag("-X") => found("screen"),
        "at" | "batch" if !["-l", "-r", "-d", "-c"].iter().any(|f| flag(f)) => found("atd"),
        _ => None,
    }
}
