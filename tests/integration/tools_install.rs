//! `guard install`, `guard uninstall`, `guard doctor`: wiring a repo so that the same committed
//! files work on every machine, keeping everything else (formatting and modes too), and taking
//! it out again byte for byte; doctor's one check per cause.

use crate::support::lifecycle::{Repo, Verdict, bin, run_with_stdin, sid, text, verdict};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const EVENTS: [&str; 6] = [
    "PreToolUse",
    "PostToolUse",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Stop",
];

/// The hook command install writes: the committed launcher, found from the session's start dir.
const HOOK: &str = "sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\"";

const FILES: [&str; 6] = [
    ".claude/settings.json",
    ".gitignore",
    "session-lock/PROTOCOL.md",
    "session-lock/guard-hook",
    ".mcp.json",
    ".claude/settings.local.json",
];

/// The files a teammate's clone gets: everything install wrote but the person's own settings.
const COMMITTED: [&str; 5] = [
    ".claude/settings.json",
    ".gitignore",
    "session-lock/PROTOCOL.md",
    "session-lock/guard-hook",
    ".mcp.json",
];

pub(crate) fn guard_in(repo: &Repo, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.args(args).current_dir(dir);
    repo.run(c)
}

pub(crate) fn install(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["install", repo.root.to_str().unwrap()];
    all.extend_from_slice(args);
    guard_in(repo, &repo.root, &all)
}

fn files(repo: &Repo) -> Vec<Option<String>> {
    FILES.iter().map(|f| repo.read(f)).collect()
}

fn mode(repo: &Repo, rel: &str) -> u32 {
    std::fs::metadata(repo.path(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn settings(repo: &Repo) -> Value {
    serde_json::from_str(&repo.read(".claude/settings.json").expect("settings.json"))
        .expect("settings.json is JSON")
}

/// A PATH holding the suite's binaries and the system's tools, or only the system's.
pub(crate) fn path_with_suite(with: bool) -> String {
    let suite = Path::new(&bin("guard")).parent().unwrap().to_path_buf();
    let mut dirs: Vec<PathBuf> = vec![];
    if with {
        dirs.push(suite);
    }
    dirs.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .to_string()
}

/// Runs the installed PreToolUse command as the client does: `sh -c`, in the repo, with
/// `CLAUDE_PROJECT_DIR` set to the folder the session started in.
fn run_hook(repo: &Repo, path: &str, payload: &Value) -> std::process::Output {
    let command = settings(repo)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(&command)
        .current_dir(&repo.root)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env("CLAUDE_PROJECT_DIR", &repo.root)
        .env("SESSION_LOCK_HOME", &repo.home);
    run_with_stdin(sh, payload.to_string().as_bytes())
}

#[test]
fn install_wires_every_event_and_is_idempotent() {
    let repo = Repo::new();
    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for f in FILES {
        assert!(
            out.contains(&format!("wrote {}", repo.path(f).display())),
            "{f}: {out}"
        );
    }
    assert!(out.contains(&format!("hooks run: {HOOK}")), "{out}");
    assert!(
        out.contains("status line: added to .claude/settings.local.json"),
        "{out}"
    );

    let s = settings(&repo);
    for event in EVENTS {
        let groups = s["hooks"][event]
            .as_array()
            .unwrap_or_else(|| panic!("{event}"));
        assert_eq!(groups.len(), 1, "{event}");
        let hook = &groups[0]["hooks"][0];
        assert_eq!(hook["type"], "command", "{event}");
        assert_eq!(hook["command"], HOOK, "{event}");
        assert_eq!(hook["timeout"], 10, "{event}");
    }
    // No path of this machine in any committed file (issue 30: .mcp.json named send-message's).
    let suite_dir = Path::new(bin("guard"))
        .parent()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for f in COMMITTED {
        let text = repo.read(f).unwrap();
        assert!(
            !text.contains(&suite_dir),
            "{f} names this machine's suite: {text}"
        );
        assert!(
            !text.contains(&repo.root.to_string_lossy().to_string()),
            "{f}: {text}"
        );
    }
    let mcp: Value = serde_json::from_str(&repo.read(".mcp.json").unwrap()).unwrap();
    let entry = &mcp["mcpServers"]["session-lock"];
    assert_eq!(entry["command"], "sh", "{entry}");
    assert!(
        entry["args"][1]
            .as_str()
            .is_some_and(|a| a
                .contains("$CLAUDE_PROJECT_DIR/session-lock/guard-hook\" --tool send-message mcp")),
        "{entry}"
    );
    assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert_eq!(s["hooks"]["PostToolUse"][0]["matcher"], "*");
    let gi = repo.read(".gitignore").unwrap();
    for line in [
        "session-lock/*",
        "!session-lock/PROTOCOL.md",
        "!session-lock/config.json",
        "!session-lock/guard-hook",
        ".claude/settings.local.json",
    ] {
        assert!(gi.lines().any(|l| l == line), "{line} missing:\n{gi}");
    }
    let protocol = repo.read("session-lock/PROTOCOL.md").unwrap();
    assert_eq!(
        protocol,
        include_str!("../../PROTOCOL.md"),
        "the installed PROTOCOL.md is the suite's"
    );
    // git sees exactly the files to commit, and install says so; the backup and the person's
    // own settings stay local (issue 30: settings.local.json showed as untracked).
    let st = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    let listed = text(&st.stdout);
    let paths: Vec<&str> = listed.lines().map(|l| l[3..].trim()).collect();
    let mut want: Vec<&str> = COMMITTED.to_vec();
    want.sort();
    let mut got = paths.clone();
    got.sort();
    assert_eq!(got, want, "{listed}");
    assert!(
        out.contains(&format!(
            "commit these files: {}",
            [
                ".claude/settings.json",
                ".mcp.json",
                ".gitignore",
                "session-lock/PROTOCOL.md",
                "session-lock/guard-hook"
            ]
            .join(", ")
        )),
        "{out}"
    );

    let before = files(&repo);
    let (code, out, _) = install(&repo, &[]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(&format!(
            "{}: already wired, nothing changed\n",
            repo.root.display()
        )),
        "{out}"
    );
    assert_eq!(files(&repo), before, "byte-identical after a second run");
    let (code, out, _) = install(&repo, &["--json"]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["changed"], json!([]));
    // The repo's six files and the user-scope entry's settings file.
    assert_eq!(report["unchanged"].as_array().map(Vec::len), Some(7));
    assert_eq!(report["statusLine"]["state"], "present", "{report}");
}

#[test]
fn install_keeps_modes_and_creates_files_with_the_umask_default() {
    let repo = Repo::new();
    repo.write(".gitignore", "node_modules/\n");
    repo.write(".claude/settings.json", "{}\n");
    repo.write(".mcp.json", "{\"mcpServers\": {}}\n");
    for (f, m) in [
        (".gitignore", 0o664),
        (".claude/settings.json", 0o664),
        (".mcp.json", 0o644),
    ] {
        std::fs::set_permissions(repo.path(f), std::fs::Permissions::from_mode(m)).unwrap();
    }
    let (code, _, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&repo, ".gitignore"), 0o664);
    assert_eq!(mode(&repo, ".claude/settings.json"), 0o664);
    // Issue 30: .mcp.json went 644 -> 600.
    assert_eq!(mode(&repo, ".mcp.json"), 0o644);
    // What a plain create in the same process tree gets (the test's umask).
    repo.write("plain.txt", "x");
    let plain = mode(&repo, "plain.txt");
    assert_eq!(mode(&repo, "session-lock/PROTOCOL.md"), plain);
    assert_eq!(mode(&repo, "session-lock/guard-hook"), plain);
    assert_eq!(mode(&repo, ".claude/settings.local.json"), plain);
    let (code, _, err) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&repo, ".mcp.json"), 0o644, "and on uninstall");
    assert_eq!(mode(&repo, ".gitignore"), 0o664);
}

#[test]
fn install_keeps_other_hooks_settings_and_ignore_lines() {
    let repo = Repo::new();
    repo.write(
        ".claude/settings.json",
        &serde_json::to_string_pretty(&json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "rtk-hook"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
            }
        }))
        .unwrap(),
    );
    repo.write(".gitignore", "node_modules/\ndist");
    let (code, _, err) = install(&repo, &["--timeout", "7"]);
    assert_eq!(code, 0, "{err}");
    let s = settings(&repo);
    assert_eq!(s["model"], "opus");
    assert_eq!(s["permissions"]["allow"][0], "Bash(ls:*)");
    assert_eq!(
        s["hooks"]["Notification"][0]["hooks"][0]["command"],
        "notify-send hi"
    );
    let pre = s["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    assert_eq!(pre[0]["hooks"][0]["command"], "rtk-hook");
    assert_eq!(pre[1]["hooks"][0]["command"], HOOK);
    assert_eq!(pre[1]["hooks"][0]["timeout"], 7);
    let gi = repo.read(".gitignore").unwrap();
    assert!(
        gi.starts_with("node_modules/\ndist\n# session-lock"),
        "{gi}"
    );

    // Re-installing with another program replaces the old guard entries instead of adding more.
    let other = repo.base.join("bin dir/guard");
    let (code, _, _) = install(&repo, &["--guard", &other.to_string_lossy()]);
    assert_eq!(code, 0);
    let s = settings(&repo);
    let pre = s["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{pre:?}");
    assert_eq!(
        pre[1]["hooks"][0]["command"],
        format!("'{}'", other.display())
    );
    let gi_after = repo.read(".gitignore").unwrap();
    assert_eq!(gi_after, gi, ".gitignore lines are not added twice");
}

#[test]
fn invalid_settings_change_nothing() {
    let repo = Repo::new();
    for bad in [
        "{\"hooks\": ",
        "[1, 2]",
        "{\"hooks\": []}",
        "{\"hooks\": {\"Stop\": {}}}",
    ] {
        repo.write(".claude/settings.json", bad);
        let (code, out, err) = install(&repo, &[]);
        assert_eq!(code, 2, "{bad}: {out}{err}");
        assert!(
            err.starts_with("guard install: ")
                && err.contains(".claude/settings.json")
                && err.contains("nothing changed"),
            "{bad}: {err}"
        );
        assert_eq!(repo.read(".claude/settings.json").as_deref(), Some(bad));
        assert!(!repo.exists(".gitignore"), "{bad}");
        assert!(!repo.exists("session-lock/PROTOCOL.md"), "{bad}");
        assert!(!repo.exists(".mcp.json"), "{bad}");
    }
    // The other JSON files install edits: checked before anything is written.
    let _ = std::fs::remove_file(repo.path(".claude/settings.json"));
    for (file, bad) in [
        (".mcp.json", "{\"mcpServers\": []}"),
        (".mcp.json", "{'mcpServers': {}}"),
        (
            ".claude/settings.local.json",
            "{\"enabledMcpjsonServers\": \"x\"}",
        ),
    ] {
        repo.write(file, bad);
        let (code, _, err) = install(&repo, &[]);
        assert_eq!(code, 2, "{file} {bad}: {err}");
        assert!(
            err.contains(file) && err.contains("nothing changed"),
            "{err}"
        );
        assert_eq!(repo.read(file).as_deref(), Some(bad));
        assert!(
            !repo.exists(".claude/settings.json"),
            "{file}: settings written"
        );
        assert!(!repo.exists(".gitignore"));
        std::fs::remove_file(repo.path(file)).unwrap();
    }
}

#[test]
fn install_takes_only_a_git_top_level_and_names_what_was_given() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path("src")).unwrap();
    // No argument: the top level of the current folder, even from below it.
    let (code, _, err) = guard_in(&repo, &repo.path("src"), &["install"]);
    assert_eq!(code, 0, "{err}");
    assert!(repo.exists(".claude/settings.json"));
    assert!(!repo.exists("src/.claude"));

    // A folder below the top level: refused, naming the top level to wire.
    let (code, _, err) = guard_in(&repo, &repo.path("src"), &["install", "."]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("guard install: . is inside the git repo ")
            && err.contains(&repo.root.display().to_string())
            && err.contains("not its top level"),
        "{err}"
    );
    assert!(!repo.exists("src/.claude"), "nothing written below the top");

    let missing = repo.base.join("nope");
    let (code, _, err) = guard_in(&repo, &repo.root, &["install", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim(),
        format!("guard install: {}: no such folder", missing.display())
    );

    let plain = repo.base.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let (code, _, err) = guard_in(&repo, &repo.root, &["install", plain.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not in a git repo"), "{err}");
    assert!(!plain.join(".claude").exists());

    // Not in a repo and nothing given: the message says how to name one, and there is one
    // spelling (no --repo).
    let (code, _, err) = guard_in(&repo, &plain, &["install"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("name one: guard install REPO"), "{err}");
    let (code, _, err) = guard_in(&repo, &repo.root, &["install", "--repo", "."]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("guard: unexpected argument '--repo'"),
        "{err}"
    );
}

#[test]
fn the_installed_hook_command_runs_the_guard_found_on_path() {
    let repo = Repo::new();
    assert_eq!(install(&repo, &[]).0, 0);
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    let payload = repo.payload(
        "alice",
        "Edit",
        json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
    );
    let out = run_hook(&repo, &path_with_suite(true), &payload);
    match verdict(&out) {
        Ok(Verdict::Block(reason)) => assert!(
            reason.contains("owned by stream 'api'") && reason.contains(&sid("bob")[..8]),
            "{reason}"
        ),
        other => panic!("{other:?}; stderr {}", text(&out.stderr)),
    }
}

#[test]
fn the_launcher_blocks_and_says_so_when_no_guard_is_installed() {
    let repo = Repo::new();
    assert_eq!(install(&repo, &[]).0, 0);
    let payload = repo.payload("alice", "Read", json!({"file_path": "README.md"}));
    let out = run_hook(&repo, &path_with_suite(false), &payload);
    assert_eq!(out.status.code(), Some(2), "exit 2 blocks the call");
    let err = text(&out.stderr);
    assert!(
        err.contains("none was found") && err.contains("SESSION_LOCK_GUARD"),
        "{err}"
    );
}

#[test]
fn uninstall_after_install_leaves_the_files_byte_identical() {
    // A repo with its own settings (4-space indent, not what install writes), a .gitignore
    // without a final newline, and modes of its own.
    let repo = Repo::new();
    let own = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"PreToolUse\": [\n            {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"rtk-hook\"}]}\n        ]\n    }\n}";
    repo.write(".claude/settings.json", own);
    repo.write(".gitignore", "node_modules/\ndist");
    // Issue 30: .mcp.json was missing from the backup and came back rewritten.
    repo.write(
        ".mcp.json",
        "{\n  // the team's servers\n  \"mcpServers\": {\"db\": {\"command\": \"db-mcp\"}},\n}\n",
    );
    repo.write(
        ".claude/settings.local.json",
        "{ \"permissions\": { \"allow\": [\"Bash(ls:*)\"] } }",
    );
    std::fs::set_permissions(
        repo.path(".gitignore"),
        std::fs::Permissions::from_mode(0o664),
    )
    .unwrap();
    let before = files(&repo);
    assert_eq!(install(&repo, &[]).0, 0);
    assert_ne!(files(&repo), before);
    let (code, out, err) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&repo), before, "{out}");
    assert_eq!(mode(&repo, ".gitignore"), 0o664);
    assert!(
        !repo.exists("session-lock"),
        "the folder install made is gone"
    );
    let (code, out, _) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0);
    assert!(out.contains("not wired, nothing changed"), "{out}");

    // A repo with nothing: install then uninstall leaves nothing.
    let bare = Repo::new();
    assert_eq!(install(&bare, &[]).0, 0);
    assert_eq!(guard_in(&bare, &bare.root, &["uninstall", "--json"]).0, 0);
    assert_eq!(files(&bare), vec![None; FILES.len()]);
    assert!(!bare.exists(".claude"));
}

#[test]
fn uninstall_without_the_backup_removes_only_the_guard_and_keeps_edits() {
    let repo = Repo::new();
    repo.write(".gitignore", "node_modules/\n");
    assert_eq!(install(&repo, &[]).0, 0);
    // A teammate's clone: the backup is not committed.
    std::fs::remove_file(repo.path("session-lock/install-backup.json")).unwrap();
    let mut s = settings(&repo);
    s["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "notify-send done"}));
    s["model"] = json!("opus");
    repo.write(
        ".claude/settings.json",
        &serde_json::to_string_pretty(&s).unwrap(),
    );
    repo.write("session-lock/PROTOCOL.md", "# our own rules\n");
    let (code, out, err) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("kept ") && out.contains("PROTOCOL.md"),
        "{out}"
    );
    assert_eq!(
        settings(&repo),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}, "model": "opus"})
    );
    assert_eq!(repo.read(".gitignore").as_deref(), Some("node_modules/\n"));
    assert_eq!(
        repo.read("session-lock/PROTOCOL.md").as_deref(),
        Some("# our own rules\n")
    );
    assert!(!repo.exists("session-lock/guard-hook"));
}

/// Each original line is in the new text, in order, unchanged but for a comma after it: what a
/// diff of the two shows is the added block alone.
fn only_added(before: &str, after: &str) -> Result<(), String> {
    let mut new = after.lines();
    for old in before.lines() {
        loop {
            let Some(line) = new.next() else {
                return Err(format!("`{old}` is gone:\n{after}"));
            };
            if line == old || line == format!("{old},") {
                break;
            }
        }
    }
    Ok(())
}

#[test]
fn install_edits_json_in_place_so_a_diff_shows_only_the_added_block() {
    let repo = Repo::new();
    let own = "{\n    // the team's model\n    \"model\": \"opus\",\n\n    \"hooks\": {\n        \"PreToolUse\": [\n            {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"rtk-hook\"}]}\n        ]\n    },\n    \"env\": {\"A\": \"1\"}\n}\n";
    let mcp = "{\n\t\"mcpServers\": {\n\t\t\"db\": {\"command\": \"db-mcp\", \"args\": [\"--ro\"]}\n\t}\n}\n";
    repo.write(".claude/settings.json", own);
    repo.write(".mcp.json", mcp);
    let (code, _, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    let after = repo.read(".claude/settings.json").unwrap();
    only_added(own, &after).unwrap();
    assert!(
        after.contains("\n            {\n                \"matcher\": \"*\","),
        "indented like its neighbours:\n{after}"
    );
    let after = repo.read(".mcp.json").unwrap();
    only_added(mcp, &after).unwrap();
    assert!(
        after.contains("\n\t\t\"session-lock\": {\n\t\t\t\"type\": \"stdio\","),
        "tabs kept:\n{after}"
    );
    assert!(
        only_added("{\n  \"a\": 1\n}", "{\n  \"a\": 2\n}").is_err(),
        "the check can fail"
    );
}

#[test]
fn uninstall_of_a_repo_never_wired_changes_nothing_and_says_so() {
    let repo = Repo::new();
    let mcp = "{\"mcpServers\":{\"db\":{\"command\":\"db-mcp\"}}}";
    repo.write(".mcp.json", mcp);
    repo.write(
        ".claude/settings.local.json",
        "{ \"enabledMcpjsonServers\": [\"db\"] }\n",
    );
    repo.write(".claude/settings.json", "{\"hooks\": {\"Stop\": []}}");
    repo.write(".gitignore", "node_modules/\n.claude/settings.local.json\n");
    std::fs::set_permissions(
        repo.path(".mcp.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let before = files(&repo);
    let (code, out, err) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("{}: not wired, nothing changed", repo.root.display())
    );
    assert_eq!(files(&repo), before);
    assert_eq!(mode(&repo, ".mcp.json"), 0o644);
    let (_, out, _) = guard_in(&repo, &repo.root, &["uninstall", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changed"], json!([]), "{v}");
}

/// The statusLine of a settings file, if it sets one.
fn statusline_in(repo: &Repo, rel: &str) -> Option<String> {
    let v: Value = serde_json::from_str(&repo.read(rel)?).ok()?;
    v["statusLine"]["command"].as_str().map(String::from)
}

#[test]
fn the_status_line_is_offered_without_replacing_one_the_person_has() {
    // None anywhere: ours goes into the person's own settings.
    let repo = Repo::new();
    assert_eq!(install(&repo, &[]).0, 0);
    let ours = statusline_in(&repo, ".claude/settings.local.json").expect("added");
    assert!(ours.ends_with("--tool status --statusline"), "{ours}");
    assert!(
        statusline_in(&repo, ".claude/settings.json").is_none(),
        "not in the committed file"
    );
    // --no-statusline takes ours out again and says so.
    let (_, out, _) = install(&repo, &["--no-statusline"]);
    assert!(
        out.contains("status line: left out (--no-statusline)"),
        "{out}"
    );
    assert!(statusline_in(&repo, ".claude/settings.local.json").is_none());

    // One in the user's settings (what the client reads as CLAUDE_CONFIG_DIR/settings.json):
    // kept, not shadowed by ours, and named.
    let repo = Repo::new();
    let theirs = json!({"statusLine": {"type": "command", "command": "~/.claude/line.sh"}});
    std::fs::create_dir_all(repo.home.join("claude")).unwrap();
    std::fs::write(repo.home.join("claude/settings.json"), theirs.to_string()).unwrap();
    let (code, out, _) = install(&repo, &[]);
    assert_eq!(code, 0);
    assert!(
        out.contains("status line: yours in ")
            && out.contains("line.sh")
            && out.contains("is kept"),
        "{out}"
    );
    assert!(statusline_in(&repo, ".claude/settings.local.json").is_none());
    let (_, out, _) = install(&repo, &["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["statusLine"]["state"], "theirs", "{v}");

    // One in the person's local settings: the same.
    let repo = Repo::new();
    repo.write(
        ".claude/settings.local.json",
        "{\"statusLine\": {\"type\": \"command\", \"command\": \"mine\"}}\n",
    );
    assert_eq!(install(&repo, &[]).0, 0);
    assert_eq!(
        statusline_in(&repo, ".claude/settings.local.json").as_deref(),
        Some("mine")
    );
    let (_, out, _) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(
        repo.read(".claude/settings.local.json").as_deref(),
        Some("{\"statusLine\": {\"type\": \"command\", \"command\": \"mine\"}}\n"),
        "{out}"
    );
}

/// Runs `command` as the client runs a statusLine or MCP command: `sh -c`, in the repo, with
/// `CLAUDE_PROJECT_DIR`, a PATH with or without the suite, and `input` on stdin.
fn as_client(
    repo: &Repo,
    program: &str,
    args: &[&str],
    path: &str,
    input: &[u8],
) -> std::process::Output {
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(&repo.root)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env("CLAUDE_PROJECT_DIR", &repo.root)
        .env("SESSION_LOCK_HOME", &repo.home);
    run_with_stdin(c, input)
}

#[test]
fn the_launcher_runs_the_mcp_server_and_the_status_line_beside_the_guard_it_finds() {
    let repo = Repo::new();
    assert_eq!(install(&repo, &[]).0, 0);
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    // The status line, as the client runs it (sh -c, the session's JSON on stdin).
    let line = statusline_in(&repo, ".claude/settings.local.json").unwrap();
    let input =
        json!({"session_id": sid("alice"), "workspace": {"project_dir": repo.root}}).to_string();
    let out = as_client(
        &repo,
        "sh",
        &["-c", &line],
        &path_with_suite(true),
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "session-lock: you hold api");
    // Without the suite on this machine it says what is missing.
    let out = as_client(
        &repo,
        "sh",
        &["-c", &line],
        &path_with_suite(false),
        input.as_bytes(),
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("status needs the session-lock suite"),
        "{}",
        text(&out.stderr)
    );
    // A tool name the launcher does not run is refused.
    let out = as_client(
        &repo,
        "sh",
        &["session-lock/guard-hook", "--tool", "rm"],
        &path_with_suite(true),
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--tool takes send-message or status"),
        "{}",
        text(&out.stderr)
    );
    // The MCP server, as .mcp.json starts it: it answers initialize.
    let mcp: Value = serde_json::from_str(&repo.read(".mcp.json").unwrap()).unwrap();
    let e = &mcp["mcpServers"]["session-lock"];
    let args: Vec<&str> = e["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let init = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "\n"
    );
    let out = as_client(
        &repo,
        e["command"].as_str().unwrap(),
        &args,
        &path_with_suite(true),
        init.as_bytes(),
    );
    let answer = text(&out.stdout);
    assert!(
        answer.contains(r#""serverInfo":{"name":"session-lock""#),
        "{answer}{}",
        text(&out.stderr)
    );
}

/// Issue 27, item 1: install also writes the user-scope entry (`<guard> --user-scope`, every
/// event) into the user's Claude Code settings, keeping what else is there; it guards a session
/// started in a subfolder, does nothing at the top level (the repo's entry runs there) or
/// outside a wired repo; doctor checks it; uninstall takes it out again.
#[test]
fn issue_27_the_user_scope_entry_guards_subfolder_sessions_and_goes_with_uninstall() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    let user = repo.home.join("claude/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "{\n  \"model\": \"sonnet\"\n}\n").unwrap();
    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("user-scope entry"), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    assert_eq!(
        v["model"], "sonnet",
        "the user's own settings are kept: {v}"
    );
    let want = format!(
        "{} --user-scope",
        session_lock::shell::word::quote_posix(bin("guard"))
    );
    for event in EVENTS {
        assert_eq!(
            v["hooks"][event][0]["hooks"][0]["command"],
            want.as_str(),
            "{event}: {v}"
        );
    }

    // What the entry does, by the folder the session started in (CLAUDE_PROJECT_DIR).
    let edit = repo.payload(
        "alice",
        "Edit",
        json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
    );
    let user_entry = |project: &Path| {
        let mut c = repo.tool("guard");
        c.arg("--user-scope").env("CLAUDE_PROJECT_DIR", project);
        run_with_stdin(c, edit.to_string().as_bytes())
    };
    std::fs::create_dir_all(repo.path("src/ui")).unwrap();
    let sub = user_entry(&repo.path("src/ui"));
    assert!(
        matches!(verdict(&sub), Ok(Verdict::Block(r)) if r.contains("owned by stream 'api'")),
        "a subfolder session is guarded: {sub:?}"
    );
    let top = user_entry(&repo.root);
    assert_eq!(
        verdict(&top),
        Ok(Verdict::Allow),
        "the repo's own entry decides at the top"
    );
    assert!(top.stdout.is_empty() && top.stderr.is_empty(), "{top:?}");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = user_entry(elsewhere.path());
    assert_eq!(
        verdict(&out),
        Ok(Verdict::Allow),
        "outside a wired repo: nothing"
    );
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");

    // doctor checks it.
    let doctor = |repo: &Repo| {
        let mut c = repo.tool("guard");
        c.args(["doctor", "--json"])
            .env("PATH", path_with_suite(true));
        let (_, out, _) = repo.run(c);
        let v: Value = serde_json::from_str(&out).unwrap();
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "user-scope hooks")
            .cloned()
            .unwrap_or_else(|| panic!("no user-scope row: {v}"))
    };
    assert_eq!(doctor(&repo)["level"], "ok", "{}", doctor(&repo));

    // uninstall takes it out and keeps the rest of the user's file.
    let (code, out, err) = guard_in(&repo, &repo.root, &["uninstall"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    assert_eq!(v, json!({"model": "sonnet"}), "{v}");

    // Wired again without it: doctor warns, naming the cause.
    assert_eq!(install(&repo, &["--no-user-scope"]).0, 0);
    let row = doctor(&repo);
    assert_eq!(row["level"], "warn", "{row}");
    assert!(
        row["detail"].as_str().unwrap().contains("subfolder"),
        "{row}"
    );
}
