//! git reads a unique prefix of a long option as the option (`git reset --ha` is
//! `--hard`): the argv is rewritten to the full names before any rule looks at it.
//! Only options in [`LONG`] for the subcommand are known; an ambiguous or unknown prefix
//! stays as written (git refuses it too).

use super::word::Word;
use super::writes::git_call;

/// The long options of the subcommands whose flags decide a rule.
const LONG: &[(&str, &[&str])] = &[
    (
        "reset",
        &[
            "hard",
            "soft",
            "mixed",
            "merge",
            "keep",
            "patch",
            "quiet",
            "no-refresh",
            "pathspec-from-file",
        ],
    ),
    (
        "checkout",
        &[
            "detach",
            "force",
            "orphan",
            "ours",
            "theirs",
            "track",
            "no-track",
            "merge",
            "patch",
            "quiet",
            "progress",
            "conflict",
            "pathspec-from-file",
            "overlay",
            "no-overlay",
            "ignore-other-worktrees",
        ],
    ),
    (
        "switch",
        &[
            "create",
            "force-create",
            "detach",
            "discard-changes",
            "force",
            "guess",
            "no-guess",
            "merge",
            "orphan",
            "track",
            "no-track",
            "quiet",
            "progress",
            "conflict",
        ],
    ),
    (
        "add",
        &[
            "all",
            "no-all",
            "update",
            "dry-run",
            "verbose",
            "force",
            "interactive",
            "patch",
            "edit",
            "intent-to-add",
            "refresh",
            "ignore-errors",
            "ignore-missing",
            "renormalize",
            "chmod",
            "pathspec-from-file",
            "sparse",
            "ignore-removal",
            "no-ignore-removal",
        ],
    ),
    (
        "commit",
        &[
            "all",
            "amend",
            "message",
            "file",
            "patch",
            "include",
            "only",
            "dry-run",
            "verbose",
            "quiet",
            "no-verify",
            "allow-empty",
            "fixup",
            "squash",
            "reuse-message",
            "reedit-message",
            "author",
            "date",
            "signoff",
            "no-edit",
            "edit",
            "interactive",
            "pathspec-from-file",
        ],
    ),
    (
        "clean",
        &["force", "dry-run", "quiet", "exclude", "interactive"],
    ),
    (
        "restore",
        &[
            "source",
            "staged",
            "worktree",
            "patch",
            "ours",
            "theirs",
            "merge",
            "conflict",
            "quiet",
            "progress",
            "overlay",
            "no-overlay",
            "ignore-unmerged",
            "pathspec-from-file",
        ],
    ),
    (
        "stash",
        &[
            "patch",
            "staged",
            "keep-index",
            "no-keep-index",
            "include-untracked",
            "all",
            "quiet",
            "message",
            "pathspec-from-file",
            "index",
        ],
    ),
];

/// Rewrites unique long-option prefixes of a `git` argv to their full names.
pub fn expand_prefixes(argv: &mut [Word]) {
    let Some(call) = git_call(argv) else { return };
    let Some((_, known)) = LONG.iter().find(|(s, _)| *s == call.sub) else {
        return;
    };
    let start = argv.len() - call.args.len();
    for w in &mut argv[start..] {
        if w.text == "--" {
            break;
        }
        let Some(rest) = w.text.strip_prefix("--") else {
            continue;
        };
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (rest, None),
        };
        if name.is_empty() || known.contains(&name) {
            continue;
        }
        let mut hits = known.iter().filter(|k| k.starts_with(name));
        if let (Some(full), None) = (hits.next(), hits.next()) {
            w.text = match value {
                Some(v) => format!("--{full}={v}"),
                None => format!("--{full}"),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(cmd: &str) -> String {
        let mut argv: Vec<Word> = cmd.split(' ').map(Word::plain).collect();
        expand_prefixes(&mut argv);
        argv.iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn unique_prefixes_become_the_option() {
        assert_eq!(expand("git reset --ha"), "git reset --hard");
        assert_eq!(
            expand("git checkout --detac main"),
            "git checkout --detach main"
        );
        assert_eq!(expand("git add --al"), "git add --all");
        assert_eq!(expand("git -C web add --upd"), "git -C web add --update");
        assert_eq!(
            expand("git commit --am --no-e"),
            "git commit --amend --no-edit"
        );
        // Ambiguous (`--a` is --all or --amend…), unknown, or after `--`: unchanged.
        assert_eq!(expand("git commit --a"), "git commit --a");
        assert_eq!(expand("git add -- --al"), "git add -- --al");
        assert_eq!(expand("git log --onel"), "git log --onel");
    }
}
