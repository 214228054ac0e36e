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
