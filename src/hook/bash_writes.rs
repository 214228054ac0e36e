//! Ownership of the files a Bash or PowerShell command writes.
//!
//! The command analysis names the write targets ([`crate::shell::writes`]); here each one is
//! resolved against the payload `cwd` and the `cd`/`pushd` steps before it, and checked like
//! an Edit of that path through [`lifecycle::check_write`], so ownership and the protected
//! set apply to `sed -i`, `> file`, `cp`, `mv`, `rm` and the rest exactly as to Edit.
//!
//! - A literal target is checked as the file it names.
//! - A pattern (`rm src/api/*.ts`) or a tree (`rm -r src`, `mv src/api x`, a git pathspec)
//!   is checked through a *witness*: a path that both the target and an `owns` (or
//!   protected) pattern can match, built segment by segment; the witness then goes through
//!   the same check, so exclusions and the caller's own stream still apply.
//! - A target the command text cannot tell (`"$OUT/x"`, a substitution, a `cd "$X"` before
//!   it) is let through: this is coordination, not a sandbox. `$PWD`, `$(pwd)` and
//!   `$CLAUDE_PROJECT_DIR` stand for what they name; temp folders and home are outside.

use super::Payload;
use super::lifecycle::{self, Ctx, Env};
use crate::paths::lexical::{Anchor, Place, Rooted, anchor, join, leading_var, place};
use crate::round_index::LockSet;
use crate::rules::args::{expand_braces, glob_match};
use crate::rules::{CommandContext, Env as Where};
use crate::shell::word::Word;
use crate::shell::{Analysis, Dialect, DirStep, Reach, WriteTarget};

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

/// Checks every write target of `an` like an Edit of it.
pub fn check(
    ctx: &Ctx,
    p: &Payload,
    env: &Env,
    an: &Analysis,
    locks: &LockSet,
) -> Result<(), String> {
    let stale = ctx.config.heartbeat_stale_ms();
    if !locks.any_live(ctx.now, stale) {
        return Ok(());
    }
    let targets = crate::shell::writes::targets(an);
    if targets.is_empty() {
        return Ok(());
    }
    let cc = CommandContext::new(p.cwd.clone(), ctx.root.display().to_string());
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
            check_one(ctx, p, env, locks, &cmd, &r).map_err(|reason| {
                format!(
                    "{reason} (this command writes it: {} {})",
                    t.via,
                    t.word.render()
                )
            })?;
        }
    }
    Ok(())
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

fn check_one(
    ctx: &Ctx,
    p: &Payload,
    env: &Env,
    locks: &LockSet,
    cmd: &Where,
    r: &Resolved,
) -> Result<(), String> {
    if !r.glob {
        lifecycle::check_write(ctx, p, env, &r.path, r.how, locks)?;
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
    let stale = ctx.config.heartbeat_stale_ms();
    let all = locks.all();
    let others = all
        .iter()
        .filter(|h| h.is_live(ctx.now, stale) && h.record.session_id != p.session_id)
        .flat_map(|h| h.record.owns.iter());
    for pattern in others.chain(ctx.config.protected_paths.iter()) {
        if let Some(w) = witness(&rel, r.reach, pattern, ci) {
            let abs = join(cmd.root(), &w);
            lifecycle::check_write(ctx, p, env, &abs, r.how, locks).map_err(|reason| {
                // Name what the command names, and the pattern it reaches.
                let shown = match (rel.as_str(), r.reach) {
                    ("", _) => "the whole repository".to_string(),
                    (rel, Reach::Tree) => format!("{rel} (with everything below it)"),
                    (rel, Reach::File) => rel.to_string(),
                };
                reason
                    .replacen(
                        &format!("{w} is owned"),
                        &format!("{shown} reaches {pattern}, owned"),
                        1,
                    )
                    .replacen(&w, &shown, 1)
            })?;
        }
    }
    Ok(())
}

/// [`explain`] for `command` as `cmd` describes it, in the repo at `root`.
pub fn explain_command(
    root: &std::path::Path,
    config: crate::config::Config,
    cmd: &CommandContext,
    command: &str,
) -> String {
    let dialect = match cmd.shell {
        crate::rules::Shell::Bash => crate::shell::Dialect::Posix,
        crate::rules::Shell::PowerShell => crate::shell::Dialect::PowerShell,
    };
    let an =
        crate::shell::analyze_with(command, dialect, &super::script_files::RepoFiles::new(cmd));
    let mut out = String::new();
    for s in an
        .sources
        .iter()
        .filter(|s| matches!(s.via.as_str(), "script file" | "package script"))
    {
        out.push_str(&format!(
            "{} read ({} bytes): its commands are analysed like the command's own\n",
            s.via,
            s.text.len()
        ));
    }
    out + &explain(&Ctx::new(root.to_path_buf(), config), &cmd.cwd, &an)
}

/// `guard explain`'s lines for the write targets of `an`: each target as written, where it
/// resolves and what the ownership check says against the repo's locks as they stand (as a
/// session holding none of them).
pub fn explain(ctx: &Ctx, cwd: &str, an: &Analysis) -> String {
    use std::fmt::Write;
    let targets = crate::shell::writes::targets(an);
    let mut out = String::new();
    if targets.is_empty() {
        return out;
    }
    let locks = LockSet::load(&ctx.layout);
    let p = Payload {
        cwd: cwd.to_string(),
        ..Payload::default()
    };
    let env = Env::default();
    let cc = CommandContext::new(cwd.to_string(), ctx.root.display().to_string());
    let cmd = Where::new(&cc);
    let live = locks
        .all()
        .iter()
        .filter(|h| h.is_live(ctx.now, ctx.config.heartbeat_stale_ms()))
        .count();
    let _ = writeln!(out, "write targets ({live} live lock(s)):");
    for t in &targets {
        let shown = format!("[{}] {} {}", t.segment, t.via, t.word.render());
        let resolved = resolve(t, an, &cmd);
        if resolved.is_empty() {
            let _ = writeln!(
                out,
                "  {shown} → not known from the command text: not checked"
            );
        }
        for r in resolved {
            let what = match (r.glob, r.reach) {
                (true, _) => " (pattern)",
                (false, Reach::Tree) => " (and everything below it)",
                (false, Reach::File) => "",
            };
            let verdict = match check_one(ctx, &p, &env, &locks, &cmd, &r) {
                Ok(()) => "allowed".to_string(),
                Err(reason) => format!("block: {reason}"),
            };
            let _ = writeln!(out, "  {shown} → {}{what}: {verdict}", r.path);
        }
    }
    out
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
