//! `rm.app-output`: recursive deletion of the directories the running app reads.
//!
//! Targets are resolved lexically against the payload cwd plus the `cd` steps of the
//! chain: `rm -rf ./dist`, `cd web && rm -rf ../dist`, `rm -rf /abs/repo/dist-electron`,
//! `rm -rf *` and `{dist,x}` are all the same deletion. Leading expansions stand for what
//! they name (see [`anchor`]): `$PWD`/`$(pwd)` the cwd, `$CLAUDE_PROJECT_DIR` and
//! `$(git rev-parse --show-toplevel)` the root, `$TMPDIR`/`$(mktemp -d)` somewhere
//! outside, `~`/`$HOME` a home that holds the repo only where the path goes through a
//! directory named like it (`~/src/<repo>/dist`). Any other unknown directory (`$OUT`,
//! `cd "$X"` before it) hits when the literal tail names an output directory
//! (`rm -rf "$OUT/dist"`): a coordination guard errs towards asking. A known folder before
//! the expansion is the folder the target is inside (`rm -rf "dist/$X"` deletes in `dist`),
//! unless a literal `..` climbs back out.

use super::args::{Opts, expand_braces, glob_match};
use super::{At, Base, Env, Rules, View};
use crate::paths::lexical::{Anchor, Place, anchor, is_temp, place};
use crate::shell::Word;
use crate::shell::programs::Writes;
use crate::shell::word::{command_name, win_switch};
use crate::shell::writes::cmd_switch;

/// Most alternatives one `{a,b}` word expands to.
const MAX_BRACE: usize = 32;

/// A deletion target after lexical resolution.
enum Target {
    /// Repo-relative components (lowercased); `glob` when they may hold patterns.
    Rel(Vec<String>, bool),
    /// An ancestor of the repository.
    Contains,
    /// Outside the repository.
    Outside,
    /// Somewhere inside these repo-relative components: a known folder and an unknown rest
    /// (`dist/$X`) that no literal `..` climbs out of.
    Inside(Vec<String>, bool),
    /// Directory unknown: the literal components after the last dynamic part.
    Unknown(Vec<String>, bool),
    /// Under the home directory: the components after `~` / `$HOME`.
    Home(Vec<String>, bool),
}

fn comps(p: &str) -> Vec<String> {
    p.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .map(str::to_ascii_lowercase)
        .collect()
}

fn is_dynamic_comp(c: &str) -> bool {
    c.contains(['$', '`', '%']) || c.starts_with('~')
}

fn unknown_tail(text: &str, glob: bool) -> Target {
    let all: Vec<&str> = text.split(['/', '\\']).collect();
    let start = all
        .iter()
        .rposition(|c| is_dynamic_comp(c))
        .map_or(0, |k| k + 1);
    let tail = all[start..]
        .iter()
        .filter(|c| !c.is_empty() && **c != "." && **c != "..")
        .map(|c| c.to_ascii_lowercase())
        .collect();
    Target::Unknown(tail, glob)
}

/// `dist/$X`, `./dist/${N}/x`: the folders before the first expansion are known and inside
/// the repository, and no literal `..` after it climbs back out, so the target is inside them.
fn known_prefix(env: &Env, at: &At, text: &str, glob: bool) -> Option<Target> {
    let all: Vec<&str> = text.split(['/', '\\']).collect();
    let k = all.iter().position(|c| is_dynamic_comp(c))?;
    if all.contains(&"..") || all[..k].iter().all(|c| c.is_empty() || *c == ".") {
        return None;
    }
    match resolve_literal(env, at, &all[..k].join("/"), glob) {
        Target::Rel(rel, g) if !rel.is_empty() => Some(Target::Inside(rel, g)),
        _ => None,
    }
}

fn resolve(env: &Env, at: &At, text: &str, glob: bool) -> Target {
    if let Some((kind, rest)) = anchor(text) {
        if rest.split(['/', '\\']).any(is_dynamic_comp) {
            if kind == Anchor::Cwd
                && let Some(t) = known_prefix(env, at, &format!(".{rest}"), glob)
            {
                return t;
            }
            return unknown_tail(text, glob);
        }
        return match kind {
            Anchor::Cwd => resolve_literal(env, at, &format!(".{rest}"), glob),
            Anchor::Root => place_of(
                env,
                &env.read(env.root(), rest.trim_start_matches(['/', '\\']), at.how),
                glob,
            ),
            Anchor::Temp => Target::Outside,
            Anchor::Home => Target::Home(comps(rest), glob),
            Anchor::Other => unknown_tail(text, glob),
        };
    }
    if text.split(['/', '\\']).any(is_dynamic_comp) {
        return known_prefix(env, at, text, glob).unwrap_or_else(|| unknown_tail(text, glob));
    }
    resolve_literal(env, at, text, glob)
}

fn resolve_literal(env: &Env, at: &At, text: &str, glob: bool) -> Target {
    match (env.absolute(&at.base, text, at.how), &at.base) {
        (Some(abs), _) => place_of(env, &abs, glob),
        (None, Base::Outside) => Target::Outside,
        (None, _) => unknown_tail(text, glob),
    }
}

fn place_of(env: &Env, abs: &str, glob: bool) -> Target {
    match place(env.root(), abs) {
        Place::Inside(rel) => Target::Rel(comps(&rel), glob),
        // A temp folder is somewhere else, like `$TMPDIR`, even when the repo lives in one.
        Place::Contains if is_temp(abs) => Target::Outside,
        Place::Contains => Target::Contains,
        Place::Outside => Target::Outside,
    }
}

fn comp_eq(pattern: &str, name: &str, glob: bool) -> bool {
    pattern == name || (glob && glob_match(pattern, name))
}

/// `rel` is an output dir, inside one, or one of its ancestors.
fn rel_hits(rel: &[String], glob: bool, dir: &[String]) -> bool {
    rel.iter().zip(dir).all(|(c, d)| comp_eq(c, d, glob))
}

/// An unknown-directory target whose literal tail names `dir`.
fn tail_hits(tail: &[String], glob: bool, dir: &[String]) -> bool {
    let Some(last) = dir.last() else { return false };
    tail.iter().enumerate().any(|(k, c)| {
        comp_eq(c, last, glob)
            && (1..=k.min(dir.len() - 1))
                .all(|j| comp_eq(&tail[k - j], &dir[dir.len() - 1 - j], glob))
    })
}

/// A path under home that goes through a directory named like this repository and then
/// reaches `dir` (or stops at the repository itself).
fn home_hits(tail: &[String], glob: bool, repo: &str, dir: &[String]) -> bool {
    tail.iter()
        .enumerate()
        .any(|(k, c)| comp_eq(c, repo, glob) && rel_hits(&tail[k + 1..], glob, dir))
}

impl Rules {
    /// The output dir a deletion of `word` hits, if any.
    fn output_hit(&self, env: &Env, at: &At, word: &Word) -> Option<String> {
        let texts = if word.glob && word.text.contains('{') {
            expand_braces(&word.text, MAX_BRACE)
        } else {
            vec![word.text.clone()]
        };
        for text in texts {
            if text.is_empty() {
                continue;
            }
            let target = resolve(env, at, &text, word.glob);
            let hit = self.output_dirs.iter().find(|d| match &target {
                Target::Rel(rel, glob) => rel_hits(rel, *glob, d),
                Target::Inside(rel, glob) => rel.len() >= d.len() && rel_hits(rel, *glob, d),
                Target::Contains => true,
                Target::Outside => false,
                Target::Unknown(tail, glob) => tail_hits(tail, *glob, d),
                Target::Home(tail, glob) => home_hits(tail, *glob, &env.repo_name(), d),
            });
            if let Some(d) = hit {
                return Some(d.join("/"));
            }
        }
        None
    }

    fn first_hit<'w>(
        &self,
        env: &Env,
        at: &At,
        targets: impl IntoIterator<Item = &'w Word>,
    ) -> Option<String> {
        targets
            .into_iter()
            .find_map(|w| self.output_hit(env, at, w))
    }
}

/// Split PowerShell `a,b` lists into separate words.
fn split_commas(words: &[&Word]) -> Vec<Word> {
    words
        .iter()
        .flat_map(|w| {
            w.text.split(',').filter(|s| !s.is_empty()).map(|s| Word {
                text: s.to_string(),
                ..(*w).clone()
            })
        })
        .collect()
}

/// `rm.app-output`
pub(super) fn rm_app_output(r: &Rules, v: &View, env: &Env) -> Option<String> {
    let name = &*v.name;
    let deleter = matches!(
        name,
        "rm" | "rmdir" | "rd" | "del" | "erase" | "find" | "rsync" | "remove-item" | "ri"
    ) || v.prog.is_some_and(|p| p.writes == Some(Writes::DeleteTree))
        || v.git.as_ref().is_some_and(|(sub, _)| sub == "clean");
    if !deleter {
        return None;
    }
    let at = env.at(v.seg);
    let at = &at;
    let dir = if v.ps
        && matches!(
            name,
            "rm" | "remove-item" | "ri" | "del" | "erase" | "rd" | "rmdir"
        ) {
        remove_item(r, v, env, at)
    } else {
        match name {
            "rm" => {
                let o = Opts::parse(v.args, "", &[]);
                if !o.has(&["r", "R", "--recursive"]) {
                    return None;
                }
                r.first_hit(env, at, o.operands)
            }
            "rmdir" | "rd" | "del" | "erase" => {
                // Switches may be joined (`/S/Q`) and spelled `//s` in Git Bash.
                let switch = |w: &&Word| cmd_switch(&win_switch(&w.text));
                let recursive = v.args.iter().any(|w| {
                    let s = win_switch(&w.text);
                    cmd_switch(&s) && s[1..].split('/').any(|p| p == "s")
                });
                if !recursive {
                    return None;
                }
                r.first_hit(env, at, v.args.iter().filter(|w| !switch(w)))
            }
            _ if v.prog.is_some_and(|p| p.writes == Some(Writes::DeleteTree)) => {
                r.first_hit(env, at, v.args.iter().filter(|w| !w.text.starts_with('-')))
            }
            "find" => find_delete(r, v, env, at),
            "rsync" => rsync_delete(r, v, env, at),
            "git" => git_clean(r, v, env, at),
            _ => None,
        }
    }?;
    Some(format!("deletes the app output directory `{dir}`"))
}

/// `Remove-Item -Recurse` (and its aliases) in PowerShell.
fn remove_item(r: &Rules, v: &View, env: &Env, at: &At) -> Option<String> {
    let mut recurse = false;
    let mut targets: Vec<&Word> = Vec::new();
    let mut i = 0;
    while i < v.args.len() {
        let w = &v.args[i];
        let t = w.text.to_ascii_lowercase();
        if t.len() > 1 && t.starts_with('-') {
            let name = t[1..].split(':').next().unwrap_or_default();
            if name.starts_with('r') && "recurse".starts_with(&name[..name.len().min(7)]) {
                recurse = true;
            } else if name.starts_with('r') && name.chars().all(|c| c == 'r' || c == 'f') {
                recurse = true; // `rm -rf` typed into PowerShell
            } else if ["path", "literalpath", "lp", "pspath"].contains(&name) {
                if let Some(p) = v.args.get(i + 1) {
                    targets.push(p);
                }
                i += 2;
                continue;
            } else if ["filter", "include", "exclude", "credential", "stream"]
                .iter()
                .any(|f| f.starts_with(name) && name.len() >= 2)
            {
                i += 2;
                continue;
            }
            i += 1;
            continue;
        }
        targets.push(w);
        i += 1;
    }
    // `… | % { Remove-Item $_ -Recurse }`: the items of the pipeline into the ForEach-Object
    // whose block this is (the segment just before it).
    let current = |w: &&Word| {
        let t = w.text.to_ascii_lowercase();
        ["$_", "$psitem"]
            .iter()
            .any(|c| t == *c || t.strip_prefix(c).is_some_and(|m| m.starts_with('.')))
    };
    let mut feeder = v.seg.pipe_prev.and_then(|p| v.an.segments.get(p));
    if !targets.is_empty() && targets.iter().all(current) {
        let at = v.an.segments.iter().position(|s| std::ptr::eq(s, v.seg))?;
        let foreach = at
            .checked_sub(1)
            .and_then(|k| v.an.segments.get(k))
            .filter(|s| matches!(s.head().as_str(), "%" | "foreach-object" | "foreach"))?;
        feeder = foreach.pipe_prev.and_then(|p| v.an.segments.get(p));
        targets.clear();
    }
    if targets.is_empty() {
        // `Get-ChildItem dist | Remove-Item`: the items come from the previous stage.
        let prev = feeder?;
        // `'dist', 'dist-electron' | Remove-Item -Recurse`: literal items.
        if prev.argv.iter().all(|w| w.quoted && !w.dynamic) && !prev.argv.is_empty() {
            return r.first_hit(
                env,
                at,
                &split_commas(&prev.argv.iter().collect::<Vec<_>>()),
            );
        }
        let lister = prev.argv.first().map(|w| command_name(&w.text))?;
        if matches!(
            &*lister,
            "resolve-path" | "rvpa" | "write-output" | "echo" | "write"
        ) {
            let items: Vec<&Word> = prev.argv[1..]
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .collect();
            return r.first_hit(env, at, &split_commas(&items));
        }
        if !matches!(
            &*lister,
            "get-childitem" | "gci" | "ls" | "dir" | "get-item" | "gi"
        ) {
            return None;
        }
        let items: Vec<&Word> = prev.argv[1..]
            .iter()
            .scan(false, |skip, w| {
                let value = *skip;
                let flag = w.text.starts_with('-');
                *skip = flag
                    && ["-filter", "-include", "-exclude", "-depth", "-attributes"]
                        .contains(&w.text.to_ascii_lowercase().as_str());
                Some((value || flag, w))
            })
            .filter(|(skip, _)| !skip)
            .map(|(_, w)| w)
            .collect();
        let filtered = prev.argv[1..].iter().any(|w| {
            let t = w.text.to_ascii_lowercase();
            t.starts_with("-fi") || t.starts_with("-inc")
        });
        // `gci -Filter dist` in the cwd lists what the filter names.
        let filters: Vec<&Word> = prev.argv[1..]
            .windows(2)
            .filter(|p| {
                let t = p[0].text.to_ascii_lowercase();
                t.starts_with("-fi") || t.starts_with("-inc")
            })
            .map(|p| &p[1])
            .collect();
        let dot = Word::plain(".");
        let items = match (items.is_empty(), filtered) {
            (false, _) => items,
            (true, false) => vec![&dot],
            (true, true) => filters,
        };
        return r.first_hit(env, at, &split_commas(&items));
    }
    if !recurse {
        return None;
    }
    let words = split_commas(&targets);
    r.first_hit(env, at, &words)
}

/// `find <paths> … -delete` or `-exec rm -r {}`.
fn find_delete(r: &Rules, v: &View, env: &Env, at: &At) -> Option<String> {
    let args = v.args;
    let deletes = args.iter().enumerate().any(|(i, w)| match w.text.as_str() {
        "-delete" => true,
        "-exec" | "-execdir" | "-ok" | "-okdir" => args.get(i + 1).is_some_and(|c| {
            let n = command_name(&c.text);
            (n == "rm"
                && args[i + 2..].iter().take_while(|a| a.text != ";").any(|a| {
                    a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains(['r', 'R'])
                        || a.text == "--recursive"
                }))
                || n == "rmdir"
                || n == "rimraf"
        }),
        _ => false,
    });
    if !deletes {
        return None;
    }
    let starts: Vec<&Word> = args
        .iter()
        .take_while(|w| !w.text.starts_with('-') && !matches!(w.text.as_str(), "(" | "!" | ")"))
        .collect();
    let dot = Word::plain(".");
    let starts = if starts.is_empty() {
        vec![&dot]
    } else {
        starts
    };
    // Name filters that select what is deleted; a filter followed by `-prune` excludes.
    let mut filters: Vec<&str> = Vec::new();
    let mut k = 0;
    while k + 1 < args.len() {
        let is_filter = matches!(
            args[k].text.as_str(),
            "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" | "-regex"
        );
        if is_filter {
            if args.get(k + 2).is_none_or(|w| w.text != "-prune") {
                filters.push(args[k + 1].text.as_str());
            }
            k += 2;
        } else {
            k += 1;
        }
    }
    for s in starts {
        let target = resolve(env, at, &s.text, s.glob);
        for d in &r.output_dirs {
            let hit = match &target {
                Target::Rel(rel, glob) if rel.len() >= d.len() => rel_hits(rel, *glob, d),
                Target::Rel(rel, glob) => rel_hits(rel, *glob, d) && filters_allow(&filters, d),
                Target::Inside(rel, glob) => rel.len() >= d.len() && rel_hits(rel, *glob, d),
                Target::Contains => filters_allow(&filters, d),
                Target::Outside => false,
                Target::Unknown(tail, glob) => tail_hits(tail, *glob, d),
                Target::Home(tail, glob) => home_hits(tail, *glob, &env.repo_name(), d),
            };
            if hit {
                return Some(d.join("/"));
            }
        }
    }
    None
}

/// A `find` from an ancestor of `dir` reaches it when it has no name filter or one that
/// names the directory.
fn filters_allow(filters: &[&str], dir: &[String]) -> bool {
    let Some(last) = dir.last() else { return false };
    filters.is_empty()
        || filters.iter().any(|f| {
            let f = f.to_ascii_lowercase();
            glob_match(&f, last)
                || glob_match(&f, &format!("./{}", dir.join("/")))
                || f.trim_start_matches("./").trim_end_matches('/') == dir.join("/")
        })
}

/// `rsync --delete* src dest` empties `dest`; `--remove-source-files` deletes sources.
fn rsync_delete(r: &Rules, v: &View, env: &Env, at: &At) -> Option<String> {
    let o = Opts::parse(
        v.args,
        "efTBM",
        &[
            "rsh",
            "filter",
            "exclude",
            "include",
            "temp-dir",
            "exclude-from",
            "include-from",
            "files-from",
            "partial-dir",
            "backup-dir",
            "suffix",
            "log-file",
            "password-file",
            "chmod",
            "chown",
            "rsync-path",
            "max-size",
            "min-size",
            "timeout",
            "port",
            "compare-dest",
            "copy-dest",
            "link-dest",
            "out-format",
            "bwlimit",
        ],
    );
    let (dest, sources) = o.operands.split_last()?;
    if o.flags.iter().any(|f| f.starts_with("--del"))
        && let Some(d) = r.output_hit(env, at, dest)
    {
        return Some(d);
    }
    if o.has(&["--remove-source-files"]) {
        return r.first_hit(env, at, sources.iter().copied());
    }
    None
}

/// `git clean -x|-X` deletes ignored files, which is where the app output lives.
fn git_clean(r: &Rules, v: &View, env: &Env, at: &At) -> Option<String> {
    let (sub, args) = v.git.as_ref()?;
    if sub != "clean" {
        return None;
    }
    let o = Opts::parse(args, "e", &["exclude"]);
    if !o.has(&["x", "X"]) || o.has(&["n", "--dry-run"]) {
        return None;
    }
    let dot = Word::plain(".");
    if o.operands.is_empty() {
        return r.first_hit(env, at, [&dot]);
    }
    r.first_hit(env, at, o.operands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_string()).collect()
    }

    #[test]
    fn relative_hits() {
        assert!(rel_hits(&s(&["dist"]), false, &s(&["dist"])));
        assert!(rel_hits(&s(&["dist", "assets"]), false, &s(&["dist"])));
        assert!(rel_hits(&s(&[]), false, &s(&["dist"])));
        assert!(rel_hits(&s(&["*"]), true, &s(&["dist"])));
        assert!(!rel_hits(&s(&["*"]), false, &s(&["dist"])));
        assert!(!rel_hits(&s(&["web", "dist"]), false, &s(&["dist"])));
        assert!(!rel_hits(&s(&["distro"]), false, &s(&["dist"])));
    }

    #[test]
    fn tails() {
        assert!(tail_hits(&s(&["dist"]), false, &s(&["dist"])));
        assert!(tail_hits(&s(&["dist", "assets"]), false, &s(&["dist"])));
        assert!(tail_hits(
            &s(&["foo", "dist"]),
            false,
            &s(&["plugins", "foo", "dist"])
        ));
        assert!(!tail_hits(
            &s(&["bar", "dist"]),
            false,
            &s(&["plugins", "foo", "dist"])
        ));
        assert!(!tail_hits(&s(&[]), false, &s(&["dist"])));
        assert!(!tail_hits(&s(&["build"]), false, &s(&["dist"])));
    }
}
