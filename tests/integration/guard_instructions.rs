//! Issue 27, item 4: files other sessions run or read as instructions (git's hooks and config,
//! the clients' folders, CLAUDE.md and its kin, node_modules/.bin) are frozen while a round
//! runs, for Edit and for the shell alike, but for the stream whose plan names them; their
//! look-alikes and reads stay free.

use crate::support::lifecycle::{Repo, Verdict, verdict};

fn bed() -> Repo {
    let repo = Repo::new();
    repo.lock("api", "bob", &["src/api/**"], 1, 1_000);
    repo.lock(
        "web",
        "alice",
        &["src/web/**", ".claude/commands/**"],
        1,
        1_000,
    );
    repo
}

#[test]
fn issue_27_instruction_files_are_frozen_for_edit_and_shell() {
    let repo = bed();
    for rel in [
        ".git/hooks/pre-commit",
        ".git/config",
        ".claude/agents/reviewer.md",
        ".claude/skills/x/SKILL.md",
        ".claude/hooks/run.sh",
        ".codex/config.toml",
        ".gemini/extensions/x.json",
        "CLAUDE.md",
        "docs/CLAUDE.md",
        "AGENTS.md",
        "GEMINI.md",
        "CLAUDE.local.md",
        "node_modules/.bin/eslint",
        "packages/app/node_modules/.bin/tsc",
    ] {
        match verdict(&repo.edit("alice", rel)).unwrap() {
            Verdict::Block(r) => assert!(r.contains("frozen"), "{rel}: {r}"),
            Verdict::Allow => panic!("an Edit of {rel} was allowed while bob works"),
        }
        let by_shell = verdict(&repo.bash("alice", &format!("echo x >> {rel}"))).unwrap();
        assert!(
            matches!(by_shell, Verdict::Block(_)),
            "`echo x >> {rel}` was allowed while bob works"
        );
    }
}

#[test]
fn issue_27_instruction_look_alikes_reads_and_named_ones_stay_free() {
    let repo = bed();
    // Alice's plan names .claude/commands/**: hers to change.
    for rel in [
        ".claude/commands/ship.md",
        "src/web/CLAUDE.md.bak",
        "src/web/claude-notes.md",
        "src/web/node_modules_bin.txt",
        "src/web/git/hooks/x",
        // The seed's feature notes are ordinary files, not the client's configuration.
        ".claude/features/notes.md",
    ] {
        assert_eq!(
            verdict(&repo.edit("alice", rel)).unwrap(),
            Verdict::Allow,
            "{rel}"
        );
    }
    for cmd in [
        "cat .git/config CLAUDE.md",
        "ls node_modules/.bin",
        "git config --get user.name",
        "grep -r TODO .claude/agents",
    ] {
        assert_eq!(
            verdict(&repo.bash("alice", cmd)).unwrap(),
            Verdict::Allow,
            "{cmd}"
        );
    }
}
