//! The files a call writes, as the write checks see them, and the facts each check decides
//! from.
//!
//! A file tool (Edit, Write, an MCP writer) names its files in its input. A Bash or PowerShell
//! command's write targets come from the analysis ([`crate::shell::writes`]); each is resolved
//! against the payload `cwd` and the `cd`/`pushd` steps before it, and checked like an Edit of
//! that path, so ownership and the protected set apply to `sed -i`, `> file`, `cp`, `mv`, `rm`
//! and the rest exactly as to Edit.
//!
//! - A literal target is checked as the file it names.
//! - A pattern (`rm src/api/*.ts`) or a tree (`rm -r src`, `mv src/api x`, a git pathspec)
//!   is checked through a *witness*: a path that both the target and an `owns` (or
//!   protected) pattern can match, built segment by segment; the witness then goes through
//!   the same checks, so exclusions and the caller's own stream still apply.
//! - A target the command text cannot tell (`"$OUT/x"`, a substitution, a `cd "$X"` before
//!   it) is let through: this is coordination, not a sandbox. `$PWD`, `$(pwd)` and
//!   `$CLAUDE_PROJECT_DIR` stand for what they name; temp folders and home are outside.

use super::Payload;
use super::context::{Call, Command, Ctx};
use super::decision::{Checked, Refusal, Rule};
use crate::config::Config;
use crate::globs::Owns;
use crate::paths::RepoPath;
use crate::paths::lexical::{Anchor, Place, Rooted, anchor, join, leading_var, place};
use crate::plans;
use crate::rules::args::{expand_braces, glob_match};
use crate::rules::{CommandContext, Env as Where};
use crate::shell::word::Word;
use crate::shell::{Analysis, Dialect, DirStep, Reach, WriteTarget};
use crate::state::Held;
use std::path::Path;

/// One path a call writes, as the checks take it: as the tool names it, read the way that tool
/// reads a path rooted without a drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub raw: String,
    pub how: Rooted,
}

/// What the write checks decide a target from.
pub struct Facts {
    /// The repo path, when the target is inside the repo (not its root).
    pub rel: Option<String>,
    /// What makes it part of the protocol ([`Ctx::protected`]), if anything does.
    pub protected: Option<String>,
    /// The live locks the decision rests on: every lock for the protocol's files and the plans,
    /// else the caller's and those that could own `rel`. Never empty.
    pub live: Vec<Held>,
    /// Who keeps `rel` among `live` ([`owner_of`]).
    pub owner: Option<usize>,
    /// The owner is the caller.
    pub mine: bool,
}

impl Facts {
    /// The facts of `t`, or `None` when no live lock bears on it (then no write check can refuse
    /// it).
    pub fn of(ctx: &Ctx, call: &Call, t: &Target) -> Option<Facts> {
        if !ctx.any_live() {
            return None;
        }
        let p = call.p;
        let ci = ctx.paths.case_insensitive();
        let rel = match ctx.paths.locate_as(&p.cwd, &t.raw, t.how) {
            RepoPath::Inside(rel) => Some(rel),
            RepoPath::Root | RepoPath::Outside => None,
        };
        let protected = ctx.protected(call.env, &p.cwd, &t.raw, t.how, rel.as_deref());
        // Only the locks the decision rests on are read: every lock for the protocol's own files
        // and the plans (frozen while any other lock is live), else the caller's and those that
        // could own `rel`.
        let is_plan = rel.as_deref().is_some_and(|r| ctx.config.is_plan(r));
        let pool = match &rel {
            _ if protected.is_some() || is_plan => ctx.locks.all(),
            Some(rel) => {
                let mut pool = ctx.locks.own(&p.session_id);
                pool.extend(ctx.locks.others_for(&p.session_id, rel, ci));
                pool
            }
            None => Vec::new(),
        };
        let live: Vec<Held> = pool
            .into_iter()
            .filter(|h| h.is_live(ctx.now, ctx.stale_ms()))
            .collect();
        if live.is_empty() {
            return None;
        }
        let owner = rel.as_deref().and_then(|r| owner_of(r, &live, ci));
        let mine = owner.is_some_and(|i| live[i].record.session_id == p.session_id);
        Some(Facts {
            rel,
            protected,
            live,
            owner,
            mine,
        })
    }

    /// The lock that keeps the target, if one does.
    pub fn owner(&self) -> Option<&Held> {
        self.owner.map(|i| &self.live[i])
    }
}

/// Each path a file tool's call writes, through `check` in order (the first refusal ends it).
pub fn of_file_tool(ctx: &Ctx, call: &Call, mut check: impl FnMut(&Target) -> Checked) -> Checked {
    if !ctx.any_live() {
        return Ok(());
    }
    let targets = write_targets(&ctx.config, &ctx.root, call.p).map_err(|cut| {
        Refusal::new(
            Rule::Unreadable,
            format!(
                "this {} call's input {cut}, so the guard cannot see every file it writes; send the paths in a flatter input",
                call.p.tool_name
            ),
        )
    })?;
    for raw in targets {
        // The client resolves these with Node's path.resolve: `\x` is on the cwd's drive.
        check(&Target {
            raw,
            how: Rooted::CurrentDrive,
        })?;
    }
    Ok(())
}

/// Each path a command writes, through `check` in order (the first refusal ends it). A refusal
/// names what the command writes and how.
pub fn of_command(
    ctx: &Ctx,
    call: &Call,
    command: &Command,
    mut check: impl FnMut(&Target) -> Checked,
) -> Checked {
    if !ctx.any_live() {
        return Ok(());
    }
    let an = &*command.analysis;
    let targets = crate::shell::writes::targets(an);
    if targets.is_empty() {
        return Ok(());
    }
    let cc = CommandContext::new(call.p.cwd.clone(), ctx.root.display().to_string());
    let cmd = Where::new(&cc);
    // A target checked once is checked: a script writing `>/dev/null` on every line costs one.
    // The same word from the same directory in the same dialect resolves the same way
    // (`resolve` reads nothing else), so it is not even resolved again.
    let mut asked: Vec<(&Word, Reach, &[DirStep], Dialect)> = Vec::new();
    let mut seen: Vec<Resolved> = Vec::new();
    for t in &targets {
        let seg = &an.segments[t.segment];
        let key = (&t.word, t.reach, seg.dirs.as_slice(), seg.dialect);
        if asked.contains(&key) {
            continue;
        }
        asked.push(key);
        for r in resolve(t, an, &cmd) {
            if is_device(&r.path) || seen.contains(&r) {
                continue;
            }
            seen.push(r.clone());
            expand(ctx, call.p, &cmd, &r, &mut check).map_err(|mut refusal| {
                refusal.reason = format!(
                    "{} (this command writes it: {} {})",
                    refusal.reason,
                    t.via,
                    t.word.render()
                );
                refusal
            })?;
        }
    }
    Ok(())
}

/// The files of each patch a Codex shell command hands `apply_patch` (Codex applies such a
/// command as a patch, not as a program), through `check` like a patch tool's: relative to the
/// call's folder. A patch that does not parse is refused, as from the patch tool.
pub fn of_patches_in(
    ctx: &Ctx,
    command: &Command,
    mut check: impl FnMut(&Target) -> Checked,
) -> Checked {
    for (_, patch) in crate::clients::patch::in_command(&command.analysis) {
        let patch = patch.map_err(|e| {
            Refusal::new(
                super::decision::Rule::Unreadable,
                format!(
                    "session-lock: the patch this command hands apply_patch cannot be read ({e}), so the guard cannot check which files it writes; send one well-formed patch (*** Begin Patch … *** End Patch)"
                ),
            )
        })?;
        if !ctx.any_live() {
            continue;
        }
        for path in patch.written_paths() {
            check(&Target {
                raw: path.to_string(),
                how: Rooted::CurrentDrive,
            })
            .map_err(|mut refusal| {
                refusal.reason =
                    format!("{} (this command's apply_patch writes it)", refusal.reason);
                refusal
            })?;
        }
    }
    Ok(())
}

/// A resolved target through `check`: itself when it is a literal path, and for a pattern or a
/// tree a witness of each pattern it can reach (another live stream's `owns`, `protectedPaths`).
pub(crate) fn expand(
    ctx: &Ctx,
    p: &Payload,
    cmd: &Where,
    r: &Resolved,
    check: &mut impl FnMut(&Target) -> Checked,
) -> Checked {
    if !r.glob {
        check(&Target {
            raw: r.path.clone(),
            how: r.how,
        })?;
        if r.reach == Reach::File {
            return Ok(());
        }
    }
    let rel = match place(cmd.root(), &r.path) {
        Place::Inside(rel) => rel,
        Place::Contains if r.reach == Reach::Tree => String::new(),
        _ => return Ok(()),
    };
    let ci = ctx.paths.case_insensitive();
    let all = ctx.locks.all();
    let others = all
        .iter()
        .filter(|h| h.is_live(ctx.now, ctx.stale_ms()) && h.record.session_id != p.session_id)
        .flat_map(|h| h.record.owns.iter());
    for pattern in others.chain(ctx.config.protected_paths.iter()) {
        if let Some(w) = witness(&rel, r.reach, pattern, ci) {
            let raw = join(cmd.root(), &w);
            check(&Target { raw, how: r.how }).map_err(|refusal| {
                // Name what the command names, and the pattern it reaches.
                let shown = match (rel.as_str(), r.reach) {
                    ("", _) => "the whole repository".to_string(),
                    (rel, Reach::Tree) => format!("{rel} (with everything below it)"),
                    (rel, Reach::File) => rel.to_string(),
                };
                let reason = refusal
                    .reason
                    .replacen(
                        &format!("{w} is owned"),
                        &format!("{shown} reaches {pattern}, owned"),
                        1,
                    )
                    .replacen(&w, &shown, 1);
                Refusal {
                    reason,
                    path: Some(rel.clone()),
                    ..refusal
                }
            })?;
        }
    }
    Ok(())
}

/// Most alternatives a `{a,b}` target expands to.
const MAX_BRACE: usize = 32;
/// Most steps one witness search may take (patterns with many `**` are cut short).
const MAX_STEPS: u32 = 4096;
/// What a wildcard stands for in a witness path.
const FILL: &str = "x-any";

/// One write target resolved to an absolute, normalized path (still a pattern if `glob`), and how
/// the shell that writes it reads a path rooted without a drive (a Git Bash `/tmp/x` stays below
/// the MSYS root when it is checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub path: String,
    pub glob: bool,
    pub reach: Reach,
    pub how: Rooted,
}

/// Where `t` points, or `None` when the command text cannot tell.
pub(crate) fn resolve(t: &WriteTarget, an: &Analysis, cmd: &Where) -> Vec<Resolved> {
    let seg = &an.segments[t.segment];
    let how = seg.dialect.rooted();
    let text = t.word.text.as_str();
    let rel = if t.word.dynamic {
        match anchor(text) {
            Some((_, rest)) if rest.contains(['$', '`', '%']) => return Vec::new(),
            Some((Anchor::Cwd, rest)) => format!(".{rest}"),
            Some((Anchor::Root, rest)) => {
                cmd.read(cmd.root(), rest.trim_start_matches(['/', '\\']), how)
            }
            // `~/.claude/settings.json`, `$CLAUDE_CONFIG_DIR/settings.json`: a variable the
            // command did not set (those are substituted already) is the one the shell inherits,
            // and the guard runs with the client's environment as the Bash tool's shell does.
            Some((kind @ (Anchor::Home | Anchor::Other), rest)) => {
                let value = match kind {
                    Anchor::Home => crate::sessions::home_dir(),
                    _ => leading_var(text)
                        .and_then(std::env::var_os)
                        .filter(|v| !v.is_empty())
                        .map(std::path::PathBuf::from),
                };
                let Some(dir) = value else {
                    return Vec::new();
                };
                cmd.read(
                    &dir.to_string_lossy(),
                    rest.trim_start_matches(['/', '\\']),
                    how,
                )
            }
            _ => return Vec::new(),
        }
    } else {
        text.to_string()
    };
    let Some(abs) = cmd.absolute(&cmd.base(seg), &rel, how) else {
        return Vec::new();
    };
    let alts = if t.word.glob && abs.contains('{') {
        expand_braces(&abs, MAX_BRACE)
    } else {
        vec![abs]
    };
    alts.into_iter()
        .map(|path| Resolved {
            glob: t.word.glob && path.contains(['*', '?', '[']),
            path,
            reach: t.reach,
            how,
        })
        .collect()
}

/// The device files commands write to that are never anyone's file (`>/dev/null`, `2>/dev/tty`).
fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/tty" | "/dev/stdout" | "/dev/stderr"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Words of an MCP tool name that make it a writer of the files its input names.
const WRITE_WORDS: &[&str] = &[
    "write", "edit", "create", "save", "put", "delete", "remove", "rm", "move", "mv", "rename",
    "copy", "cp", "patch", "update", "append", "replace", "mkdir", "upload", "insert", "apply",
];

/// The most paths taken from one call's input (a longer list is cut, each one still checked).
const MAX_TARGETS: usize = 256;

/// Every file a write tool names: every string under an `mcpPathKeys` key at any depth of its
/// input (a list, a nested object, a `file://` URI, a patch's files; see
/// [`super::input_paths`]). An MCP call naming a plugin (`pluginId`) with a relative path names
/// a file in that plugin's folder (`reloadPlugin.pluginFolder`). Another client's file tool
/// names its files itself (`Payload::writes`): those, every one. An input too deep or too large
/// to walk to its end is an error.
pub fn write_targets(
    cfg: &Config,
    root: &Path,
    p: &Payload,
) -> Result<Vec<String>, super::input_paths::Cut> {
    if !p.writes.is_empty() {
        return Ok(p.writes.iter().map(|w| w.path.clone()).collect());
    }
    let Some(input) = p.tool_input.as_object() else {
        return Ok(Vec::new());
    };
    let plugin = p.mcp_tool().and_then(|_| {
        ["pluginId", "plugin_id", "plugin"]
            .iter()
            .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
            .filter(|id| plans::valid_stream_name(id))
    });
    let mut out = Vec::new();
    for raw in super::input_paths::paths(&p.tool_input, &cfg.mcp_path_keys)? {
        if out.len() >= MAX_TARGETS || raw.is_empty() {
            continue;
        }
        let relative = !crate::paths::lexical::is_absolute(&raw);
        match plugin {
            Some(id) if relative => {
                let folder = cfg.reload_plugin.plugin_folder.replace("{id}", id);
                out.push(root.join(folder).join(&raw).to_string_lossy().into_owned());
            }
            _ => out.push(raw),
        }
    }
    Ok(out)
}

/// The most entries looked at for a hard link's other names.
#[cfg(unix)]
const MAX_LINK_WALK: usize = 200_000;

/// The other names in the repo of the file `t` names, when it is a hard link (a regular file
/// with more than one name): a write through one name changes them all, so each is checked
/// like the target. Found by device and inode, walking the repo (not `.git`) only for such a
/// file; a repo too large to walk to the end is a refusal, never a pass.
pub fn other_links(ctx: &Ctx, call: &Call, t: &Target) -> Result<Vec<Target>, Refusal> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let RepoPath::Inside(rel) = ctx.paths.locate_as(&call.p.cwd, &t.raw, t.how) else {
            return Ok(Vec::new());
        };
        let path = ctx.root.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Ok(Vec::new());
        };
        if !meta.is_file() || meta.nlink() < 2 {
            return Ok(Vec::new());
        }
        let (dev, ino, others) = (meta.dev(), meta.ino(), meta.nlink() - 1);
        let mut out = Vec::new();
        let walk = walkdir::WalkDir::new(&ctx.root)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| e.depth() != 1 || e.file_name() != ".git");
        for (n, entry) in walk.enumerate() {
            if n >= MAX_LINK_WALK {
                return Err(Refusal::new(
                    Rule::Unreadable,
                    format!(
                        "session-lock: {rel} is a hard link, and the repo is too large ({MAX_LINK_WALK} entries) to find all its other names; write a copy instead (cp --remove-destination, or delete it and write it anew)"
                    ),
                )
                .with_path(rel));
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_file() || entry.path() == path {
                continue;
            }
            if let Ok(m) = entry.metadata()
                && m.dev() == dev
                && m.ino() == ino
            {
                out.push(Target {
                    raw: entry.path().to_string_lossy().into_owned(),
                    how: Rooted::CurrentDrive,
                });
                if out.len() as u64 >= others {
                    break;
                }
            }
        }
        Ok(out)
    }
    #[cfg(not(unix))]
    {
        let _ = (ctx, call, t);
        Ok(Vec::new())
    }
}

/// Is this tool one that writes the files named in its input? The built-in writers by name;
/// an MCP tool by its tool part (case-insensitive) in `mcpWriteTools`, or by a writing word in
/// its name (`save_file`, `createDirectory`); another client's file tool by the files it writes.
pub fn is_write_tool(cfg: &Config, p: &Payload) -> bool {
    if !p.writes.is_empty() || cfg.write_tools.iter().any(|t| t == p.tool_name.as_str()) {
        return true;
    }
    p.mcp_tool().is_some_and(|t| {
        cfg.mcp_write_tools
            .iter()
            .any(|w| w.eq_ignore_ascii_case(t))
            || crate::rules::mcp_name_words(t)
                .iter()
                .any(|w| WRITE_WORDS.contains(&w.as_str()))
    })
}

/// Who keeps `rel` among `live` locks: of the locks whose `owns` match, the earliest claim (ties
/// by stream name). A later claim cannot take a path an earlier live one owns, so a stream cannot
/// widen itself over another's files. A pure function over lock records, whatever their source.
/// Returns its index in `live`.
pub fn owner_of(rel: &str, live: &[Held], case_insensitive: bool) -> Option<usize> {
    live.iter()
        .enumerate()
        .filter(|(_, h)| !crate::globs::cannot_match(&h.record.owns, rel, case_insensitive))
        .filter(|(_, h)| Owns::new(&h.record.owns, case_insensitive).is_ok_and(|o| o.is_match(rel)))
        .min_by(|(_, a), (_, b)| a.claim_order().cmp(&b.claim_order()))
        .map(|(i, _)| i)
}

/// A repo-relative path that both the target (a pattern, and everything below it for a
/// tree) and the `owns` pattern can match, if one is found.
pub fn witness(target: &str, reach: Reach, pattern: &str, ci: bool) -> Option<String> {
    let pattern = pattern.trim();
    if pattern.starts_with('!') || pattern.is_empty() {
        return None;
    }
    let lower = |s: &str| {
        if ci {
            s.to_ascii_lowercase()
        } else {
            s.to_string()
        }
    };
    let (target, pattern) = (lower(target), lower(&pattern.replace('\\', "/")));
    let mut t: Vec<&str> = target
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if reach == Reach::Tree {
        t.push("**");
    }
    let mut o: Vec<&str> = pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if pattern.ends_with('/') {
        o.push("**");
    }
    let mut out = Vec::new();
    let mut steps = 0;
    meet(&t, &o, &mut out, &mut steps)
        .then(|| out.join("/"))
        .filter(|w| !w.is_empty())
}

fn wild(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// `s` with each wildcard replaced by something it matches.
fn fill(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                out.push_str(FILL);
            }
            '?' => out.push('x'),
            '[' => {
                let mut class: Vec<char> = Vec::new();
                for d in chars.by_ref() {
                    if d == ']' && !class.is_empty() {
                        break;
                    }
                    class.push(d);
                }
                match class.first() {
                    Some('!' | '^') => out.push('~'),
                    Some(&d) => out.push(d),
                    None => {}
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// One path segment matched by both `a` and `b`.
fn segment(a: &str, b: &str) -> Option<String> {
    match (wild(a), wild(b)) {
        (false, false) => (a == b).then(|| a.to_string()),
        (false, true) => glob_match(b, a).then(|| a.to_string()),
        (true, false) => glob_match(a, b).then(|| b.to_string()),
        (true, true) => [fill(a), fill(b)]
            .into_iter()
            .find(|c| glob_match(a, c) && glob_match(b, c)),
    }
}

/// Walks both segment lists together; `**` matches any number of segments on either side.
fn meet(t: &[&str], o: &[&str], out: &mut Vec<String>, steps: &mut u32) -> bool {
    *steps += 1;
    if *steps > MAX_STEPS {
        return false;
    }
    let mark = out.len();
    let ok = match (t.first(), o.first()) {
        (None, None) => true,
        (Some(&"**"), Some(&"**")) => {
            out.push(FILL.to_string());
            meet(&t[1..], &o[1..], out, steps) || {
                out.truncate(mark);
                meet(&t[1..], o, out, steps) || meet(t, &o[1..], out, steps)
            }
        }
        (Some(&"**"), rest) => {
            meet(&t[1..], o, out, steps)
                || rest.is_some_and(|seg| {
                    out.truncate(mark);
                    out.push(fill(seg));
                    meet(t, &o[1..], out, steps)
                })
        }
        (rest, Some(&"**")) => {
            meet(t, &o[1..], out, steps)
                || rest.is_some_and(|seg| {
                    out.truncate(mark);
                    out.push(fill(seg));
                    meet(&t[1..], o, out, steps)
                })
        }
        (Some(a), Some(b)) => match segment(a, b) {
            Some(s) => {
                out.push(s);
                meet(&t[1..], &o[1..], out, steps)
            }
            None => false,
        },
        _ => false,
    };
    if !ok {
        out.truncate(mark);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: &str, reach: Reach, p: &str) -> Option<String> {
        witness(t, reach, p, false)
    }

    #[test]
    fn device_files_are_nobody_s_files() {
        for d in ["/dev/null", "/dev/stderr", "/dev/fd/2", "/dev/tty"] {
            assert!(is_device(d), "{d}");
        }
        for f in [
            "/dev/fd/",
            "/dev/fd/x",
            "/dev/shm/repo/src/x",
            "/dev/nullx",
            "dev/null",
        ] {
            assert!(!is_device(f), "{f}");
        }
    }

    #[test]
    fn witnesses_meet_where_both_patterns_can_match() {
        assert_eq!(
            w("src/api/*.ts", Reach::File, "src/api/**").as_deref(),
            Some("src/api/x-any.ts")
        );
        assert_eq!(
            w("src", Reach::Tree, "src/api/**").as_deref(),
            Some("src/api/x-any")
        );
        assert_eq!(
            w("", Reach::Tree, "src/api/").as_deref(),
            Some("src/api/x-any")
        );
        assert_eq!(
            w("src/*", Reach::File, "src/*.ts").as_deref(),
            Some("src/x-any.ts")
        );
        assert_eq!(
            w("src/*.ts", Reach::File, "src/main.ts").as_deref(),
            Some("src/main.ts")
        );
        assert_eq!(w("**/c", Reach::File, "**/b/c").as_deref(), Some("b/c"));
        assert_eq!(w("*.md", Reach::File, "src/api/**"), None);
        assert_eq!(w("docs", Reach::Tree, "src/api/**"), None);
        assert_eq!(w("src/*.md", Reach::File, "src/*.ts"), None);
        assert_eq!(w("src/api/*", Reach::File, "!src/api/**"), None);
        assert_eq!(
            witness("SRC/*", Reach::File, "src/a.ts", true).as_deref(),
            Some("src/a.ts")
        );
    }

    #[test]
    fn witness_search_is_bounded() {
        let t = vec!["**"; 40].join("/") + "/a";
        let p = vec!["**"; 40].join("/") + "/b";
        assert_eq!(w(&t, Reach::File, &p), None);
    }
}
