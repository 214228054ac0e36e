//! Rules about the running app: restarting it, emitting over its output, building
//! outside build-renderer, and toggling the protected plugin through the bridge.

use super::args::{glob_match, has_url_path, mentions_id, names_program};
use super::{Env, Rules, View};
use crate::shell::Word;
use crate::shell::pm::PmCall;
use crate::shell::word::{base_lower, win_switch};

const HTTP_CLIENTS: &[&str] = &[
    "curl",
    "wget",
    "http",
    "https",
    "xh",
    "xhs",
    "httpie",
    "invoke-webrequest",
    "iwr",
    "invoke-restmethod",
    "irm",
    "aria2c",
];

/// Programs whose first operand is a script file they run.
const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "bun", "deno", "python", "python3", "py", "tsx", "ts-node", "cscript",
    "wscript", "perl", "ruby",
];

const KILLERS: &[&str] = &[
    "kill",
    "pkill",
    "killall",
    "skill",
    "tskill",
    "stop-process",
    "spps",
];

fn stem(base: &str) -> &str {
    match base.rsplit_once('.') {
        Some((s, _)) if !s.is_empty() => s,
        _ => base,
    }
}

impl Rules {
    /// `base` is a lowercased basename (or a package script name).
    fn is_restart_script(&self, base: &str) -> bool {
        let script = base.split(':').next().unwrap_or(base);
        self.restart_scripts.iter().any(|s| {
            if s.contains('.') {
                base == s
            } else {
                stem(base) == s || script == s
            }
        })
    }

    fn is_build_script(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let pattern = name.contains(['*', '?', '[']);
        self.build_scripts.iter().any(|s| {
            name == *s
                || name
                    .strip_prefix(s.as_str())
                    .is_some_and(|r| r.starts_with(':'))
                || (pattern && (glob_match(&name, s) || glob_match(&name, &format!("{s}:x"))))
        })
    }

    fn app_named_in(&self, words: &[Word]) -> Option<&str> {
        self.app_processes
            .iter()
            .find(|p| words.iter().any(|w| names_program(&w.text, p)))
            .map(String::as_str)
    }
}

/// The first operand (a script file) of an interpreter, skipping `run` (`deno run x`).
fn script_operand(args: &[Word]) -> Option<&Word> {
    args.iter()
        .find(|w| !w.text.starts_with('-') && w.text != "run")
}

/// `app.restart`
pub(super) fn restart(r: &Rules, v: &View, _env: &Env) -> Option<String> {
    if r.is_restart_script(&v.base) {
        return Some(format!("runs the app launcher `{}`", v.base));
    }
    if INTERPRETERS.contains(&v.name.as_str())
        && let Some(s) = script_operand(v.args)
    {
        let b = base_lower(&s.text);
        if r.is_restart_script(&b) {
            return Some(format!("runs the app launcher `{b}`"));
        }
    }
    if let Some(PmCall::Script { name, args, .. }) = &v.pm {
        if r.is_restart_script(&name.to_ascii_lowercase()) {
            return Some(format!(
                "runs the `{name}` package script, which restarts the app"
            ));
        }
        if let Some(app) = r
            .app_processes
            .iter()
            .find(|p| name.eq_ignore_ascii_case(p))
            && v.argv[*args..].iter().any(|w| !w.text.starts_with('-'))
        {
            return Some(format!("starts another instance of the app (`{app}`)"));
        }
    }
    if v.name == "taskkill"
        && let Some(app) = taskkill_target(r, v.args)
    {
        return Some(format!("kills the app process `{app}`"));
    }
    if KILLERS.contains(&v.name.as_str()) || (v.ps && v.name == "kill") {
        if let Some(app) = r.app_named_in(v.args) {
            return Some(format!("kills the app process `{app}`"));
        }
        if let Some(app) = piped_app(r, v) {
            return Some(format!(
                "kills the app process `{app}` found earlier in the pipeline"
            ));
        }
    }
    if v.name == "wmic"
        && v.args.iter().any(|w| {
            matches!(
                w.text.to_ascii_lowercase().as_str(),
                "delete" | "terminate" | "call"
            )
        })
        && let Some(app) = r.app_named_in(v.args)
    {
        return Some(format!("terminates the app process `{app}`"));
    }
    if let Some(app) = r.app_processes.iter().find(|p| v.name == **p)
        && v.args.iter().any(|w| !w.text.starts_with('-'))
    {
        return Some(format!("starts another instance of the app (`{app}`)"));
    }
    if HTTP_CLIENTS.contains(&v.name.as_str()) {
        for path in &r.relaunch_paths {
            if v.args.iter().any(|w| has_url_path(&w.text, path)) {
                return Some(format!(
                    "calls the bridge's `{path}`, which relaunches the app"
                ));
            }
        }
    }
    None
}

/// `taskkill /im electron.exe` or `/fi "imagename eq electron.exe"`.
fn taskkill_target<'r>(r: &'r Rules, args: &[Word]) -> Option<&'r str> {
    let mut i = 0;
    while i < args.len() {
        let t = win_switch(&args[i].text);
        if matches!(t.as_str(), "/im" | "-im" | "/fi" | "-fi") {
            if let Some(v) = args.get(i + 1) {
                let value = v.text.to_ascii_lowercase();
                let about_image = t.ends_with("im") || value.contains("imagename");
                if about_image
                    && let Some(app) = r.app_processes.iter().find(|p| names_program(&value, p))
                {
                    return Some(app);
                }
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    None
}

/// An earlier pipeline stage naming the app (`pgrep electron | xargs kill`,
/// `Get-Process electron | Stop-Process`).
fn piped_app<'r>(r: &'r Rules, v: &View) -> Option<&'r str> {
    let mut prev = v.seg.pipe_prev;
    let mut steps = 0;
    while let Some(i) = prev {
        let s = v.an.segments.get(i)?;
        if let Some(app) = r.app_named_in(&s.argv) {
            return Some(app);
        }
        prev = s.pipe_prev;
        steps += 1;
        if steps > 32 {
            break;
        }
    }
    None
}

/// `app.emit-over-running`
pub(super) fn emit(r: &Rules, v: &View, _env: &Env) -> Option<String> {
    let args: &[Word] = if v.name == "tsc" {
        v.args
    } else {
        match &v.pm {
            Some(PmCall::Script { name, args, .. }) if name == "tsc" => &v.argv[*args..],
            _ => return None,
        }
    };
    let mut project: Option<String> = None;
    let mut build = false;
    let mut no_emit = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.to_ascii_lowercase();
        match t.as_str() {
            "-p" | "--project" | "-project" => {
                project = args.get(i + 1).map(|w| w.text.clone());
                i += 2;
                continue;
            }
            "-b" | "--build" | "-build" => build = true,
            "--noemit" | "-noemit" => {
                let next = args.get(i + 1).map(|w| w.text.to_ascii_lowercase());
                no_emit = next.as_deref() != Some("false");
            }
            _ => {
                if let Some(p) = t.strip_prefix("--project=") {
                    project = Some(p.to_string());
                } else if build && !t.starts_with('-') && project.is_none() {
                    project = Some(args[i].text.clone());
                }
            }
        }
        i += 1;
    }
    let p = project?;
    if no_emit || !r.emit_projects.contains(&base_lower(&p)) {
        return None;
    }
    Some(format!("emits `{p}` without --noEmit"))
}

/// `build.outside-build-renderer`
pub(super) fn build(r: &Rules, v: &View, _env: &Env) -> Option<String> {
    let runs = |head: &str, args: &[Word]| -> Option<String> {
        r.build_commands
            .iter()
            .find(|cmd| {
                cmd[0] == head
                    && cmd[1..]
                        .iter()
                        .all(|sub| args.iter().any(|w| w.text.eq_ignore_ascii_case(sub)))
            })
            .map(|cmd| format!("runs `{}` outside build-renderer", cmd.join(" ")))
    };
    if let Some(d) = runs(&v.name, v.args) {
        return Some(d);
    }
    match v.pm.as_ref()? {
        PmCall::Script { pm, name, args } => {
            if r.is_build_script(name) {
                return Some(format!("runs the `{name}` package script ({pm})"));
            }
            runs(&name.to_ascii_lowercase(), &v.argv[*args..])
        }
        PmCall::Scripts(names) => names
            .iter()
            .find(|n| r.is_build_script(n))
            .map(|n| format!("runs the `{n}` package script")),
        PmCall::Exec { .. } => None,
    }
}

/// `plugin.protected-toggle` for commands: an HTTP call to a plugin toggle path, with the
/// protected id anywhere in the command text (URL, JSON body, variable, heredoc).
pub(super) fn plugin_toggle(r: &Rules, v: &View, _env: &Env) -> Option<String> {
    if !HTTP_CLIENTS.contains(&v.name.as_str()) {
        return None;
    }
    let path = r
        .plugin_paths
        .iter()
        .find(|p| v.args.iter().any(|w| has_url_path(&w.text, p)))?;
    for id in &r.protected_plugins {
        let mut src = Some(v.seg.source);
        let mut steps = 0;
        while let Some(i) = src {
            let Some(s) = v.an.sources.get(i) else { break };
            if mentions_id(&s.text, id) {
                return Some(format!(
                    "calls the bridge's `{path}` for the protected plugin `{id}`"
                ));
            }
            src = s.parent;
            steps += 1;
            if steps > 64 {
                break;
            }
        }
        if v.seg.heredocs.iter().any(|h| mentions_id(&h.body, id)) {
            return Some(format!(
                "calls the bridge's `{path}` for the protected plugin `{id}`"
            ));
        }
    }
    None
}
