//! Issue 27, item 4: an MCP writer's files are found wherever its input names them: nested
//! objects and lists, any key spelling, `file://` URIs, both ends of a move, patch text. Each
//! shape that writes another live stream's file is blocked; the same shape on one's own files,
//! and a tool that only reads, is allowed.

use crate::support::lifecycle::{Repo, Verdict, verdict};
use serde_json::{Value, json};

fn bed() -> Repo {
    let repo = Repo::new();
    repo.lock("api", "bob", &["src/api/**"], 1, 1_000);
    repo.lock("web", "alice", &["src/web/**"], 1, 1_000);
    repo
}

fn judged(repo: &Repo, tool: &str, input: Value) -> Verdict {
    let out = repo.guard(&repo.payload("alice", tool, input));
    verdict(&out).unwrap_or_else(|e| panic!("{e}"))
}

/// Shapes of an MCP writer's input, with `{}` where the path goes.
fn shapes(p: &str, abs: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "nested args",
            "mcp__fs__write_file",
            json!({"args": {"path": p, "content": "x"}}),
        ),
        (
            "list of files",
            "mcp__fs__write_files",
            json!({"files": [{"path": "src/web/ok.ts"}, {"path": p}]}),
        ),
        (
            "list of edits",
            "mcp__ide__apply_edits",
            json!({"edits": [{"file_path": p, "old": "a", "new": "b"}]}),
        ),
        ("key in capitals", "mcp__fs__save", json!({"FILE_PATH": p})),
        (
            "key capitalised",
            "mcp__fs__create_file",
            json!({"Path": p}),
        ),
        (
            "camel key",
            "mcp__editor__update_file",
            json!({"targetFile": p}),
        ),
        (
            "snake key",
            "mcp__editor__update_file",
            json!({"target_file": p}),
        ),
        (
            "output path",
            "mcp__gen__write_report",
            json!({"output_path": p}),
        ),
        (
            "file uri",
            "mcp__lsp__apply_workspace_edit",
            json!({"changes": [{"uri": format!("file://{abs}"), "text": "x"}]}),
        ),
        (
            "move source",
            "mcp__fs__move_file",
            json!({"source": p, "destination": "src/web/moved.ts"}),
        ),
        (
            "move destination",
            "mcp__fs__move_file",
            json!({"source": "src/web/a.ts", "destination": p}),
        ),
        (
            "rename pair",
            "mcp__fs__rename",
            json!({"from": "src/web/a.ts", "to": p}),
        ),
        (
            "unified diff",
            "mcp__git__apply_patch",
            json!({"patch": format!("--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n")}),
        ),
        (
            "patch envelope",
            "mcp__code__apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Update File: {p}\n@@\n-a\n+b\n*** End Patch\n")}),
        ),
    ]
}

#[test]
fn issue_27_an_mcp_writer_is_checked_on_every_path_its_input_names() {
    let repo = bed();
    let theirs = "src/api/x.ts";
    let theirs_abs = repo.path(theirs).to_string_lossy().into_owned();
    for (what, tool, input) in shapes(theirs, &theirs_abs) {
        match judged(&repo, tool, input.clone()) {
            Verdict::Block(r) => assert!(
                r.contains("api"),
                "{what}: blocked, but the reason does not name the owner: {r}"
            ),
            Verdict::Allow => panic!("{what}: {tool} {input} writes bob's file and was allowed"),
        }
    }
    let mine = "src/web/y.ts";
    let mine_abs = repo.path(mine).to_string_lossy().into_owned();
    for (what, tool, input) in shapes(mine, &mine_abs) {
        assert_eq!(
            judged(&repo, tool, input.clone()),
            Verdict::Allow,
            "{what}: {tool} {input} writes only alice's files"
        );
    }
}

#[test]
fn issue_27_mcp_tools_that_only_read_or_name_paths_in_content_are_allowed() {
    let repo = bed();
    for (tool, input) in [
        (
            "mcp__fs__read_file",
            json!({"args": {"path": "src/api/x.ts"}}),
        ),
        ("mcp__fs__list_directory", json!({"uri": "file:///src/api"})),
        (
            "mcp__search__find_files",
            json!({"query": "src/api/**", "paths": ["src/api"]}),
        ),
        // A writer of alice's own file whose text mentions bob's paths.
        (
            "mcp__fs__write_file",
            json!({"path": "src/web/notes.md", "content": "see src/api/x.ts", "old_string": "src/api/x.ts"}),
        ),
    ] {
        assert_eq!(
            judged(&repo, tool, input.clone()),
            Verdict::Allow,
            "{tool} {input}"
        );
    }
}

#[test]
fn issue_27_an_mcp_writer_nested_past_the_walk_is_refused_not_passed() {
    let repo = bed();
    let mut input = json!({"path": "src/web/ok.ts"});
    for _ in 0..40 {
        input = json!({ "wrap": input });
    }
    match judged(&repo, "mcp__fs__write_file", input) {
        Verdict::Block(r) => assert!(r.contains("nested deeper"), "{r}"),
        Verdict::Allow => panic!("a writer's input too deep to walk was allowed"),
    }
}

/// A git MCP tool is judged as the git command it runs: where that command is refused, so is
/// the tool; its reading neighbours pass like `git status` does.
#[test]
fn issue_27_a_git_mcp_tool_is_judged_as_the_git_command_it_runs() {
    let repo = bed();
    let root = repo.path("").to_string_lossy().into_owned();
    for (command, tool, input) in [
        (
            "git checkout main",
            "mcp__git__git_checkout",
            json!({"repo_path": root, "branch_name": "main"}),
        ),
        (
            "git reset --hard",
            "mcp__git__git_reset",
            json!({"repo_path": root, "mode": "hard"}),
        ),
        ("git stash", "mcp__vcs__gitStash", json!({})),
        (
            "git clean -f",
            "mcp__git__git_clean",
            json!({"force": true}),
        ),
        (
            "git add .",
            "mcp__git__git_add",
            json!({"repo_path": root, "files": ["."]}),
        ),
    ] {
        let by_shell = verdict(&repo.bash("alice", command)).unwrap();
        assert!(
            matches!(by_shell, Verdict::Block(_)),
            "the bed must refuse `{command}` from the shell: {by_shell:?}"
        );
        assert!(
            matches!(judged(&repo, tool, input.clone()), Verdict::Block(_)),
            "{tool} {input} runs `{command}` and was allowed"
        );
    }
    for (tool, input) in [
        ("mcp__git__git_status", json!({"repo_path": root})),
        (
            "mcp__git__git_log",
            json!({"repo_path": root, "max_count": 5}),
        ),
        (
            "mcp__git__git_diff",
            json!({"repo_path": root, "target": "main"}),
        ),
        (
            "mcp__git__git_add",
            json!({"repo_path": root, "files": ["src/web/y.ts"]}),
        ),
    ] {
        assert_eq!(
            judged(&repo, tool, input.clone()),
            Verdict::Allow,
            "{tool} {input}"
        );
    }
}
