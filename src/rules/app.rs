//! Rules about the running app: restarting it, emitting over its output, building
//! outside build-renderer, and toggling the protected plugin through the bridge.

use super::args::{
    expand_braces, glob_match, has_url_path, json_unescaped, mentions_id, names_program,
    percent_decoded,
};
use super::{Env, Found, Rules, View};
use crate::shell::Word;
use crate::shell::pm::PmCall;
use crate::shell::word::{base_lower, win_switch};

fn stem(base: &str) -> &str {
    match base.bytes().rposition(|b| b == b'.') {
        Some(dot) if dot > 0 => &base[..dot],
        _ => base,
    }
}

impl Rules {
    /// `base` is a lowercased basename (or a package script name).
    fn is_restart_script(&self, base: &str) -> bool {
        let script = base
            .bytes()
            .position(|b| b == b':')
            .map_or(base, |colon| &base[..colon]);
        let stem = stem(base);
        // A name with a dot (`run.bat`) matches the whole basename, one without (`dev-rebuild`)
        // its stem or script part; the dot is looked for only once a name compares equal.
        let dotted = |s: &str| s.as_bytes().contains(&b'.');
        self.restart_scripts
            .iter()
            .any(|s| (base == s && dotted(s)) || ((stem == s || script == s) && !dotted(s)))
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
    if v.prog.is_some_and(|p| p.runs_file)
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
    if v.prog.is_some_and(|p| p.kills) {
        if let Some(app) = r.app_named_in(v.args) {
            return Some(format!("kills the app process `{app}`"));
        }
        if let Some(app) = piped_app(r, v) {
            return Some(format!(
                "kills the app process `{app}` found earlier in the pipeline"
            ));
        }
    }
    if let Some(app) = ps_kill(r, v) {
        return Some(format!("kills the app process `{app}`"));
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
    if let Some(path) = calls_path(v, &r.relaunch_paths) {
        return Some(format!(
            "calls the bridge's `{path}`, which relaunches the app"
        ));
    }
    None
}

/// A PowerShell method call that ends a process: `.Kill()`, `.CloseMainWindow()`, `% Kill`,
/// `ForEach-Object -MemberName Kill`, on processes of the app: named in the same word
/// (`(Get-Process electron).Kill()`), in an earlier pipeline stage (`Get-Process electron |
/// % { $_.Kill() }`), or in the segments just before it (the script block's pipeline).
fn ps_kill<'r>(r: &'r Rules, v: &View) -> Option<&'r str> {
    if !v.ps {
        return None;
    }
    let lower = |w: &Word| w.text.to_ascii_lowercase();
    let member =
        |t: &str| t.contains(".kill(") || t.contains(".closemainwindow(") || t.ends_with(".kill");
    let foreach = matches!(&*v.name, "%" | "foreach-object" | "foreach")
        && v.args
            .iter()
            .any(|w| matches!(lower(w).as_str(), "kill" | "closemainwindow"));
    if !foreach && !v.argv.iter().any(|w| member(&lower(w))) {
        return None;
    }
    if let Some(app) = r.app_named_in(v.argv) {
        return Some(app);
    }
    if let Some(app) = piped_app(r, v) {
        return Some(app);
    }
    // `(Get-Process electron).Kill()` and `… | % { $_.Kill() }` split into segments: the one
    // just before is the parenthesised command, or the ForEach-Object whose block this is.
    let at = v.an.segments.iter().position(|s| std::ptr::eq(s, v.seg))?;
    let prev = v.an.segments.get(at.checked_sub(1)?)?;
    if prev.source != v.seg.source {
        return None;
    }
    if matches!(prev.head().as_str(), "%" | "foreach-object" | "foreach") {
        let mut cur = prev.pipe_prev.and_then(|p| v.an.segments.get(p));
        let mut steps = 0;
        while let Some(c) = cur {
            if let Some(app) = r.app_named_in(&c.argv) {
                return Some(app);
            }
            cur = c.pipe_prev.and_then(|p| v.an.segments.get(p));
            steps += 1;
            if steps > 32 {
                break;
            }
        }
        return None;
    }
    let paren = v.argv.first().is_some_and(|w| w.text.starts_with('.'));
    if paren {
        return r.app_named_in(&prev.argv);
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
pub(super) fn emit(r: &Rules, v: &View, _env: &Env) -> Option<Found> {
    let args: &[Word] = if v.name == "tsc" {
        v.args
    } else {
        match &v.pm {
            Some(PmCall::Script { name, args, .. }) if name == "tsc" => &v.argv[*args..],
            _ => return None,
        }
    };
    // `-p` names one project (the last wins); `-b` builds every project it is given.
    let mut project: Option<String> = None;
    let mut built: Vec<String> = Vec::new();
    let mut build = false;
    let mut no_emit = false;
    let mut dry = false;
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
            "-d" | "--dry" if build => dry = true,
            "--noemit" | "-noemit" => {
                let next = args.get(i + 1).map(|w| w.text.to_ascii_lowercase());
                no_emit = next.as_deref() != Some("false");
            }
            _ => {
                if let Some(p) = t.strip_prefix("--project=") {
                    project = Some(p.to_string());
                } else if build && !t.starts_with('-') && t != "false" {
                    built.push(args[i].text.clone());
                }
            }
        }
        i += 1;
    }
    if no_emit || dry {
        return None;
    }
    let p = project
        .into_iter()
        .chain(built)
        .find(|p| r.emit_projects.contains(&base_lower(p)))?;
    Some(
        Found::from(format!("emits `{p}` without --noEmit")).instead(format!(
            "typecheck with `tsc --noEmit -p {p}`; its output is rebuilt by the restart at the end of the round"
        )),
    )
}

/// Package scripts that start the app or a dev server rather than build it (the part before a
/// `:`): they are caught by `buildScripts` too, but their harm and alternative are not a build's.
const STARTS_APP: [&str; 5] = ["dev", "start", "serve", "preview", "headless"];

/// Programs that package the app (from dist/ and dist-electron/) rather than build the renderer.
fn packages_app(program: &str) -> bool {
    ["builder", "packager", "forge"]
        .iter()
        .any(|w| program.ends_with(w))
}

/// What a build command found is, and what to run instead.
fn build_found(detail: String, command: &str, program: &str) -> Found {
    if packages_app(program) {
        return Found::from(detail)
            .because("it packages the app from the output folders other sessions build into")
            .instead("leave packaging to the end of the round, after every stream is released and the app is rebuilt");
    }
    Found::from(detail).instead(format!(
        "run it through the build lock: `build-renderer` runs the configured build, `build-renderer -- {command}` this one"
    ))
}

/// A package script's hit: a start is not a build.
fn script_found(detail: String, pm: &str, name: &str) -> Found {
    let base = name.split(':').next().unwrap_or(name).to_ascii_lowercase();
    if STARTS_APP.contains(&base.as_str()) {
        return Found::from(detail)
            .because("it starts a second copy of the app (or its dev server) beside the one every session works in, and they fight over its ports, its user data and the bridge")
            .instead("the app is already running: check renderer changes with `build-renderer` and a window reload, plugin backends with `reload-plugin <id>`; starting or restarting the app waits for the end of the round");
    }
    Found::from(detail).instead(format!(
        "`build-renderer -- {pm} run {name}`, which waits its turn for the build lock"
    ))
}

/// `build.outside-build-renderer`
pub(super) fn build(r: &Rules, v: &View, _env: &Env) -> Option<Found> {
    let runs = |head: &str, args: &[Word]| -> Option<Found> {
        r.build_commands
            .iter()
            .find(|cmd| {
                cmd[0] == head
                    && cmd[1..]
                        .iter()
                        .all(|sub| args.iter().any(|w| w.text.eq_ignore_ascii_case(sub)))
            })
            .map(|cmd| {
                let command = cmd.join(" ");
                build_found(
                    format!("runs `{command}` outside build-renderer"),
                    &command,
                    &cmd[0],
                )
            })
    };
    if let Some(d) = runs(&v.name, v.args) {
        return Some(d);
    }
    match v.pm.as_ref()? {
        PmCall::Script { pm, name, args } => {
            if r.is_build_script(name) {
                return Some(script_found(
                    format!("runs the `{name}` package script ({pm})"),
                    pm,
                    name,
                ));
            }
            runs(&name.to_ascii_lowercase(), &v.argv[*args..])
        }
        PmCall::Scripts(names) => names
            .iter()
            .find(|n| r.is_build_script(n))
            .map(|n| script_found(format!("runs the `{n}` package script"), "npm", n)),
        PmCall::Exec { .. } => None,
    }
}

/// The URL-like arguments of an HTTP client: each word, plus curl's `{a,b}` alternatives
/// (curl globs its URLs unless `-g`/`--globoff`).
fn url_args(v: &View) -> Vec<String> {
    let globs = v.name == "curl"
        && !v
            .args
            .iter()
            .any(|w| w.text == "-g" || w.text == "--globoff");
    let mut out = Vec::new();
    for w in v.args {
        if globs && w.text.contains('{') {
            out.extend(expand_braces(&w.text, MAX_URL_GLOB));
        } else {
            out.push(w.text.clone());
        }
    }
    out
}

/// Most alternatives one curl URL glob expands to.
const MAX_URL_GLOB: usize = 32;

/// The HTTP path in `paths` that an HTTP client segment calls.
fn calls_path<'r>(v: &View, paths: &'r [String]) -> Option<&'r str> {
    if !v.prog.is_some_and(|p| p.http) {
        return None;
    }
    let urls = url_args(v);
    paths
        .iter()
        .find(|p| urls.iter().any(|u| has_url_path(u, p)))
        .map(String::as_str)
}

/// `text` names `id` as written, percent-decoded (`ai%2Dchat`) or JSON-unescaped
/// (`ai\u002dchat`).
fn names_id(text: &str, id: &str) -> bool {
    if mentions_id(text, id) {
        return true;
    }
    let pct = percent_decoded(text);
    let json = json_unescaped(pct.as_deref().unwrap_or(text));
    pct.iter().chain(json.iter()).any(|t| mentions_id(t, id))
}

fn words_name(words: &[Word], id: &str) -> bool {
    words.iter().any(|w| names_id(&w.text, id))
}

/// Only prints its words to the terminal: `echo`/`printf`/`Write-Host` with no redirect
/// and no pipe.
fn prints_only(s: &crate::shell::Segment) -> bool {
    let printer = matches!(
        s.head().as_str(),
        "echo" | "printf" | "write-host" | "write-output" | "write" | "out-host" | ":"
    );
    printer
        && s.pipe_next.is_none()
        && s.redirects
            .iter()
            .all(|r| r.target.is_none() || matches!(r.op, "<" | "<<" | "<<-" | "<<<"))
}

/// Hands data to later commands: an assignment (`body='…'`, `ID=x cmd`, PowerShell
/// `$b = …`) or a write to a file (`echo … > body.json`, `cat > f <<EOF`).
fn hands_data(s: &crate::shell::Segment) -> bool {
    let words = s.words();
    let ps_assign = s.dialect == crate::shell::Dialect::PowerShell
        && words.first().is_some_and(|w| w.text.starts_with('$'))
        && words
            .get(1)
            .is_some_and(|w| w.text == "=" || w.text.ends_with('='));
    ps_assign
        || s.wrappers.iter().any(|w| w.ends_with('='))
        || words
            .first()
            .is_some_and(|w| crate::shell::word::is_assignment(&w.text))
        || s.redirects
            .iter()
            .any(|r| r.target.is_some() && matches!(r.op, ">" | ">>" | ">|" | "&>" | "&>>"))
        || matches!(
            s.head().as_str(),
            "tee"
                | "export"
                | "declare"
                | "local"
                | "typeset"
                | "readonly"
                | "set-content"
                | "out-file"
                | "set"
                | "set-variable"
        )
}

/// Whether the protected `id` reaches the request `v` makes: its own words and stdin
/// (heredocs, earlier pipeline stages), or data the command handed on before it, in its
/// own text or the scripts that carry it (assignments, files it wrote). Text that is only
/// printed (`echo "ai-chat left alone"`) and comments do not count.
fn id_reaches(v: &View, id: &str) -> bool {
    let seg = v.seg;
    if words_name(seg.words(), id) || words_name(&seg.argv, id) {
        return true;
    }
    if seg.heredocs.iter().any(|h| names_id(&h.body, id)) {
        return true;
    }
    let mut prev = seg.pipe_prev;
    let mut steps = 0;
    while let Some(i) = prev {
        let Some(s) = v.an.segments.get(i) else { break };
        if words_name(s.words(), id) || s.heredocs.iter().any(|h| names_id(&h.body, id)) {
            return true;
        }
        prev = s.pipe_prev;
        steps += 1;
        if steps > 64 {
            break;
        }
    }
    // The command's own source and the sources that carry it.
    let mut chain = Vec::new();
    let mut src = Some(seg.source);
    while let Some(i) = src {
        if chain.len() > 64 || chain.contains(&i) {
            break;
        }
        chain.push(i);
        src = v.an.sources.get(i).and_then(|s| s.parent);
    }
    v.an.segments.iter().any(|s| {
        chain.contains(&s.source)
            && !prints_only(s)
            && hands_data(s)
            && (words_name(s.words(), id) || s.heredocs.iter().any(|h| names_id(&h.body, id)))
    })
}

/// `plugin.protected-toggle` for commands: an HTTP call to a plugin toggle path whose
/// request carries the protected id (URL, JSON body, a variable, a heredoc, a file written
/// earlier in the command).
pub(super) fn plugin_toggle(r: &Rules, v: &View, _env: &Env) -> Option<String> {
    let path = calls_path(v, &r.plugin_paths)?;
    let id = r.protected_plugins.iter().find(|id| id_reaches(v, id))?;
    Some(format!(
        "calls the bridge's `{path}` for the protected plugin `{id}`"
    ))
}
