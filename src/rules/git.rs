//! Git rules: sweeping stages (`git.add-all`, always) and HEAD/working-tree changes
//! (`git.head-change`, only when another session shares the tree).
//!
//! Global options (`-C`, `-c k=v`, `--git-dir`, `--work-tree`, `--no-pager`, ...) are
//! skipped; `-c alias.x=…` aliases were already expanded by the wrapper peeler.
//!
//! Decisions:
//! - Every form that changes what HEAD points to blocks, `git checkout -b|-B <new>` and
//!   `git switch -c|-C <new>` without a start point included (the other sessions' next
//!   commits would land on the new branch), as do `git update-ref HEAD …` (and `--stdin`),
//!   `git symbolic-ref HEAD <ref>` / `-d HEAD` and `git branch -m <new>` (renames the
//!   checked-out branch). Reading (`git symbolic-ref HEAD`, `--short`) is fine.
//! - A pathspec sweeps the tree when it resolves lexically to the directory the command
//!   runs in, an ancestor or the root (`git add src/..`, `"$PWD"`, `../<repo>`, `:/`):
//!   `git add <that>` and `git commit [-m x] <that>` count as `git.add-all`.
//! - `git reset` blocks with `--hard`/`--merge`/`--keep`, or with a single commit-ish
//!   operand other than `HEAD` (`git reset HEAD~1`, `git reset --soft origin/main`,
//!   `git reset main`). `git reset`, `git reset -- <path>`, `git reset HEAD <path>`,
//!   `git reset -p` only touch the index: allowed.
//! - `git stash` blocks except `list` and `show`.
//! - `git restore` blocks unless it is `--staged` only; `git clean` unless `-n`.
//! - `git worktree remove` is allowed: it removes another worktree, not this tree.
//! - `git add -u` and `git commit -a` sweep other sessions' edits like `git add -A`.
//! - `gh pr checkout` and `gh repo sync` change the checked-out branch too.
//! - Plumbing that writes the work tree blocks: `git read-tree -u`, `git checkout-index -f`
//!   (not with `--prefix`, which writes elsewhere).
//! - `git add` of paths computed at run time (items `xargs` feeds from a pipe, a word that is
//!   only `$(…)` with unknown output) counts as `git.add-all`: they may be every change.

use super::args::Opts;
use super::{Base, Env, Found, Rules, View};
use crate::paths::lexical::{Anchor, Place, anchor, is_drive, place};
use crate::shell::Word;

/// The subcommand of a `git` argv and its arguments, global options skipped.
pub(crate) fn git_sub(argv: &[Word]) -> Option<(String, &[Word])> {
    crate::shell::writes::git_call(argv).map(|c| (c.sub, c.args))
}

/// A pathspec that sweeps a whole directory tree: `.`, `..`, `:/`, `*`, `:(top)`.
fn sweeping(pathspec: &str) -> bool {
    let t = pathspec.trim_end_matches(['/', '\\']);
    if matches!(
        t,
        "" | "*" | ":" | ":/" | ":/*" | ":/." | ":(top)" | ":(top)*" | ":(top)." | "./*"
    ) {
        return true;
    }
    t.split(['/', '\\']).all(|c| c == "." || c == "..")
}

/// A pathspec that resolves to the whole tree the command runs in: a sweeping spelling
/// ([`sweeping`]), or a path that lexically names the directory the segment runs in (after
/// its `cd` steps and `git -C`), one of its ancestors or the root (`git add src/..`,
/// `git add "$PWD"`, `git add ../<repo>`, `git add :/`, `git add "$CLAUDE_PROJECT_DIR"`).
fn whole_tree(env: &Env, v: &View, w: &Word) -> bool {
    if sweeping(&w.text) {
        return true;
    }
    let Some((top, path)) = crate::shell::writes::pathspec(&w.text) else {
        return false;
    };
    let how = v.seg.dialect.rooted();
    let mut base = env.base(v.seg);
    if let Some(call) = crate::shell::writes::git_call(v.argv) {
        for d in call.dirs {
            base = match base {
                _ if d.dynamic => Base::Unknown,
                Base::Known(b) => Base::Known(env.read(&b, &d.text, how)),
                other => other,
            };
        }
    }
    let Base::Known(base) = base else {
        return false;
    };
    let abs = if top {
        env.read(env.root(), path, how)
    } else if w.dynamic {
        match anchor(path) {
            Some((_, rest)) if rest.contains(['$', '`', '%']) => return false,
            Some((Anchor::Cwd, rest)) => env.read(&base, &format!(".{rest}"), how),
            Some((Anchor::Root, rest)) => {
                env.read(env.root(), rest.trim_start_matches(['/', '\\']), how)
            }
            _ => return false,
        }
    } else if path.contains(['*', '?', '[']) {
        return false;
    } else {
        env.read(&base, path, how)
    };
    match place(env.root(), &abs) {
        Place::Contains => true,
        Place::Outside => false,
        Place::Inside(rel) => {
            let Place::Inside(here) = place(env.root(), &base) else {
                return false;
            };
            let fold = |s: &str| {
                if is_drive(env.root()) {
                    s.to_ascii_lowercase()
                } else {
                    s.to_string()
                }
            };
            let (rel, here) = (fold(&rel), fold(&here));
            rel.is_empty() || here == rel || here.starts_with(&format!("{rel}/"))
        }
    }
}

/// `git.add-all`
pub(super) fn add_all(_r: &Rules, v: &View, env: &Env) -> Option<Found> {
    let (sub, args) = v.git.as_ref()?;
    let args: &[Word] = args;
    match sub.as_str() {
        "add" | "stage" => {
            let o = Opts::parse(args, "", &["chmod", "pathspec-from-file"]);
            if o.help() || o.has(&["n", "--dry-run"]) {
                return None;
            }
            if o.has(&["A", "--all", "u", "--update", "--no-ignore-removal"]) {
                return Some("stages every change in the tree".to_string().into());
            }
            if let Some(w) = o.operands.iter().find(|w| whole_tree(env, v, w)) {
                return Some(format!("stages everything under `{}`", w.text).into());
            }
            o.operands.iter().find(|w| computed(w)).map(|w| {
                Found::from(format!(
                    "stages paths computed at run time (`{}`), which may be every changed file",
                    w.text
                ))
                .instead("stage the paths you own by name: `git add <path>...`")
            })
        }
        "commit" => {
            let o = Opts::parse(
                args,
                "mFCct",
                &[
                    "message",
                    "file",
                    "reuse-message",
                    "reedit-message",
                    "author",
                    "date",
                    "template",
                    "cleanup",
                    "fixup",
                    "squash",
                    "trailer",
                    "pathspec-from-file",
                ],
            );
            if o.help() || o.has(&["--dry-run"]) {
                return None;
            }
            let instead = "stage the paths you own (`git add <path>...`), then `git commit` without -a or a pathspec";
            if o.has(&["a", "--all"]) {
                return Some(
                    Found::from("commits every tracked change in the tree (-a)".to_string())
                        .instead(instead),
                );
            }
            // `git commit -m x .`: commits the working tree's state of every tracked file
            // under the pathspec, staged or not.
            o.operands.iter().find(|w| whole_tree(env, v, w)).map(|w| {
                Found::from(format!("commits every tracked change under `{}`", w.text))
                    .instead(instead)
            })
        }
        _ => None,
    }
}

/// A pathspec the command computes: items `xargs` feeds from a pipe it cannot tell, or a
/// word that is only a command substitution whose output is not known (`$(git ls-files -o)`).
fn computed(w: &Word) -> bool {
    w.dynamic
        && (w.text == crate::shell::segment::XARGS_INPUT
            || (w.text.starts_with("$(") && w.text.ends_with(')'))
            || (w.text.len() > 1 && w.text.starts_with('`') && w.text.ends_with('`')))
}

/// A reset operand that names a commit other than HEAD itself.
fn moves_head(operand: &str) -> bool {
    if matches!(operand, "HEAD" | "@") {
        return false;
    }
    let last = operand.rsplit(['/', '\\']).next().unwrap_or(operand);
    let path_like = last.contains('.') && !operand.contains(['~', '^', '@'])
        || operand.ends_with('/')
        || operand.starts_with("./")
        || operand.starts_with("../")
        || operand.contains(['*', '?']);
    !path_like
}

/// The alternative to a head change, by what it does: the rule's general one (commit your own
/// files, look at other revisions read-only) where no closer one fits.
fn head_change_found(detail: String, sub: &str) -> Found {
    let instead = if detail.contains("new branch (others' commits") {
        "create the branch without switching to it (`git branch <name>`) and switch once you are alone in the tree; until then commit on the current branch"
    } else if detail.starts_with("stashes") {
        "commit your own files instead of stashing them (`git add <path>`, `git commit`); `git stash list` and `git stash show` are fine"
    } else if sub == "pull" {
        "`git fetch` is fine; merge or rebase what it fetched once you are alone in the tree"
    } else if detail.starts_with("overwrites files") || detail.starts_with("resets the shared") {
        "put back only files you own, one by one: `git show HEAD:<path> > <path>`; `git reset <path>` (unstaging) is fine"
    } else if detail.starts_with("deletes untracked files") {
        "delete your own untracked files by name (`rm <path>`); `git clean -n` shows what it would delete"
    } else {
        return Found::from(detail);
    };
    Found::from(detail).instead(instead)
}

/// `git.head-change`
pub(super) fn head_change(r: &Rules, v: &View, env: &Env) -> Option<Found> {
    let sub = v.git.as_ref().map(|(s, _)| s.clone()).unwrap_or_default();
    head_change_detail(r, v, env).map(|d| head_change_found(d, &sub))
}

fn head_change_detail(_r: &Rules, v: &View, _env: &Env) -> Option<String> {
    if v.name == "gh" {
        let ops: Vec<&str> = v
            .args
            .iter()
            .filter(|w| !w.text.starts_with('-'))
            .take(2)
            .map(|w| w.text.as_str())
            .collect();
        return match ops.as_slice() {
            ["pr", "checkout" | "co"] => {
                Some("checks out a pull request in the shared working tree".to_string())
            }
            ["repo", "sync"] => Some("syncs the checked-out branch of the shared tree".to_string()),
            _ => None,
        };
    }
    let (sub, args) = v.git.as_ref()?;
    let args: &[Word] = args;
    let help = || Opts::parse(args, "", &[]).help();
    match sub.as_str() {
        "checkout" => checkout(args),
        "switch" => {
            let o = Opts::parse(
                args,
                "cC",
                &["create", "force-create", "orphan", "conflict"],
            );
            let create = o.has(&["c", "C", "--create", "--force-create"]);
            if o.help()
                || (o.operands.is_empty() && !create && !o.has(&["--orphan", "--detach", "d"]))
            {
                return None;
            }
            if create && o.operands.is_empty() {
                return Some(
                    "points the shared HEAD at a new branch (others' commits would land on it)"
                        .to_string(),
                );
            }
            Some("switches the shared working tree to another branch".to_string())
        }
        "reset" => {
            let o = Opts::parse(args, "", &["pathspec-from-file"]);
            if o.help() || o.has(&["p", "--patch"]) {
                return None;
            }
            if let Some(mode) = ["--hard", "--merge", "--keep"].iter().find(|m| o.has(&[m])) {
                return Some(format!("resets the shared working tree ({mode})"));
            }
            let before = &o.operands[..o.before_dashdash];
            if before.len() == 1 && !o.dashdash && moves_head(&before[0].text) {
                return Some(format!("moves HEAD to `{}`", before[0].text));
            }
            None
        }
        "stash" => {
            let first = args.iter().find(|w| !w.text.starts_with('-'));
            match first.map(|w| w.text.as_str()) {
                Some("list" | "show") => None,
                _ if help() => None,
                _ => Some("stashes (or applies) changes in the shared working tree".to_string()),
            }
        }
        "rebase" | "merge" | "pull" | "cherry-pick" | "revert" | "am" | "bisect" => {
            let o = Opts::parse(args, "", &[]);
            if o.help() || o.has(&["--show-current-patch"]) {
                return None;
            }
            if sub == "bisect"
                && matches!(
                    args.first().map(|w| w.text.as_str()),
                    Some("log" | "view" | "visualize" | "terms")
                )
            {
                return None;
            }
            Some(format!(
                "runs `git {sub}`, which rewrites HEAD and the shared working tree"
            ))
        }
        "clean" => {
            let o = Opts::parse(args, "e", &["exclude"]);
            if o.help() || o.has(&["n", "--dry-run"]) {
                return None;
            }
            Some("deletes untracked files from the shared working tree".to_string())
        }
        "restore" => {
            let o = Opts::parse(args, "s", &["source", "pathspec-from-file", "conflict"]);
            let staged_only = o.has(&["S", "--staged"]) && !o.has(&["W", "--worktree"]);
            if o.help()
                || staged_only
                || (o.operands.is_empty() && !o.has(&["--pathspec-from-file"]))
            {
                return None;
            }
            Some("overwrites files in the shared working tree".to_string())
        }
        "update-ref" => {
            let o = Opts::parse(args, "m", &["message", "create-reflog"]);
            if o.help() {
                return None;
            }
            let head = o
                .operands
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "HEAD" | "@"));
            if o.has(&["--stdin"]) || head {
                return Some("moves the shared HEAD with update-ref".to_string());
            }
            None
        }
        "symbolic-ref" => {
            let o = Opts::parse(args, "m", &["message"]);
            let head = o.operands.first().is_some_and(|w| w.text == "HEAD");
            if !o.help() && head && (o.operands.len() >= 2 || o.has(&["d", "--delete"])) {
                return Some("points the shared HEAD at another branch".to_string());
            }
            None
        }
        "branch" => {
            // `git branch -m <new>` renames the checked-out branch: HEAD follows it.
            let o = Opts::parse(args, "", &[]);
            let rename = o.has(&["m", "M", "--move"]);
            if rename && o.operands.len() == 1 && !o.help() {
                return Some("renames the shared tree's checked-out branch".to_string());
            }
            None
        }
        // Plumbing that writes the work tree: `read-tree -u`, `checkout-index -f` (into the
        // tree, not under `--prefix`).
        "read-tree" => {
            let o = Opts::parse(
                args,
                "",
                &["prefix", "index-output", "exclude-per-directory"],
            );
            (!o.help() && o.has(&["u"]) && !o.has(&["n", "--dry-run"]))
                .then(|| "overwrites files in the shared working tree (read-tree -u)".to_string())
        }
        "checkout-index" => {
            let o = Opts::parse(args, "", &["prefix", "stage"]);
            let force = o.has(&["f", "--force"]);
            (!o.help() && force && !o.has(&["--prefix"]) && !o.has(&["n", "--no-create"])).then(
                || "overwrites files in the shared working tree (checkout-index -f)".to_string(),
            )
        }
        "sparse-checkout" => match args.first().map(|w| w.text.as_str()) {
            Some("list") | None => None,
            _ => Some("changes which files the shared working tree holds".to_string()),
        },
        _ => None,
    }
}

fn checkout(args: &[Word]) -> Option<String> {
    let o = Opts::parse(args, "bB", &["orphan", "conflict", "pathspec-from-file"]);
    if o.help() {
        return None;
    }
    if o.has(&["--orphan"]) {
        return Some("switches the shared working tree to an orphan branch".to_string());
    }
    if o.has(&["b", "B"]) {
        if o.operands.is_empty() {
            return Some(
                "points the shared HEAD at a new branch (others' commits would land on it)"
                    .to_string(),
            );
        }
        return Some(
            "checks out a new branch at another revision in the shared working tree".to_string(),
        );
    }
    if o.operands.is_empty() {
        if o.has(&["f", "--force", "m", "--merge", "--detach", "p", "--patch"]) {
            return Some("resets the shared working tree to HEAD".to_string());
        }
        return None;
    }
    if o.dashdash || o.operands.len() > 1 || o.operands[0].text.contains(['.', '/', '*']) {
        return Some("overwrites files in the shared working tree".to_string());
    }
    Some(format!(
        "switches the shared working tree to `{}`",
        o.operands[0].text
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeping_pathspecs() {
        for s in [".", "./", "..", "../..", ":/", "*", ":(top)", "-"] {
            assert_eq!(sweeping(s), s != "-", "{s}");
        }
        assert!(!sweeping("src"));
        assert!(!sweeping("src/a.ts"));
        assert!(!sweeping("*.ts"));
    }

    #[test]
    fn reset_operands() {
        assert!(moves_head("HEAD~1"));
        assert!(moves_head("HEAD^"));
        assert!(moves_head("origin/main"));
        assert!(moves_head("abc1234"));
        assert!(moves_head("main"));
        assert!(!moves_head("HEAD"));
        assert!(!moves_head("src/app.ts"));
        assert!(!moves_head("./x"));
        assert!(!moves_head("dir/"));
        assert!(moves_head("v1.2^{}"));
    }
}
