//! `guard install`, `guard uninstall`, `guard doctor`: wiring a repo so that the same committed
//! files work on every machine, keeping everything else, and taking it out again byte for byte.

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

const FILES: [&str; 4] = [
    ".claude/settings.json",
    ".gitignore",
    "session-lock/PROTOCOL.md",
    "session-lock/guard-hook",
];

fn guard_in(repo: &Repo, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.args(args).current_dir(dir);
    repo.run(c)
}

fn install(repo: &Repo, args: &[&str]) -> (i32, String, String) {
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
fn path_with_suite(with: bool) -> String {
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
    assert!(
        !repo
            .read(".claude/settings.json")
            .unwrap()
            .contains(bin("guard")),
        "no path of this machine in the committed settings"
    );
    assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert_eq!(s["hooks"]["PostToolUse"][0]["matcher"], "*");
    let gi = repo.read(".gitignore").unwrap();
    for line in [
        "session-lock/*",
        "!session-lock/PROTOCOL.md",
        "!session-lock/config.json",
        "!session-lock/guard-hook",
    ] {
        assert!(gi.lines().any(|l| l == line), "{line} missing:\n{gi}");
    }
    let protocol = repo.read("session-lock/PROTOCOL.md").unwrap();
    assert_eq!(
        protocol,
        include_str!("../../PROTOCOL.md"),
        "the installed PROTOCOL.md is the suite's"
    );
    // git sees exactly the files to commit, the backup stays local.
    let st = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    let listed = text(&st.stdout);
    for f in FILES {
        assert!(listed.contains(f), "{f} is committable: {listed}");
    }
    assert!(!listed.contains("install-backup"), "{listed}");

    let before = files(&repo);
    let (code, out, _) = install(&repo, &[]);
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        format!("{}: already wired, nothing changed", repo.root.display())
    );
    assert_eq!(files(&repo), before, "byte-identical after a second run");
    let (code, out, _) = install(&repo, &["--json"]);
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["changed"], json!([]));
    assert_eq!(report["unchanged"].as_array().map(Vec::len), Some(6));
}

#[test]
fn install_keeps_modes_and_creates_files_with_the_umask_default() {
    let repo = Repo::new();
    repo.write(".gitignore", "node_modules/\n");
    repo.write(".claude/settings.json", "{}\n");
    for f in [".gitignore", ".claude/settings.json"] {
        std::fs::set_permissions(repo.path(f), std::fs::Permissions::from_mode(0o664)).unwrap();
    }
    let (code, _, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(mode(&repo, ".gitignore"), 0o664);
    assert_eq!(mode(&repo, ".claude/settings.json"), 0o664);
    // What a plain create in the same process tree gets (the test's umask).
    repo.write("plain.txt", "x");
    let plain = mode(&repo, "plain.txt");
    assert_eq!(mode(&repo, "session-lock/PROTOCOL.md"), plain);
    assert_eq!(mode(&repo, "session-lock/guard-hook"), plain);
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
    assert_eq!(files(&bare), vec![None, None, None, None]);
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

fn doctor(repo: &Repo, path: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.arg("doctor")
        .args(args)
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env_remove("SESSION_LOCK_GUARD");
    repo.run(c)
}

#[test]
fn doctor_passes_a_wired_repo_and_names_each_failure_with_its_fix() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let (code, out, _) = doctor(&repo, &path_with_suite(true), &[]);
    assert_eq!(code, 1, "not wired yet: {out}");
    assert!(
        out.contains("FAIL hooks: ") && out.contains("fix: guard install"),
        "{out}"
    );

    assert_eq!(install(&repo, &[]).0, 0);
    let (code, out, err) = doctor(&repo, &path_with_suite(true), &[]);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "ok   hooks: every event runs",
        "ok   guard runs: ",
        "ok   versions: ",
        "ok   hooks enabled: ",
        "ok   state folder: ",
        "ok   plans: 1 stream(s): api",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(out.contains("claude cli: "), "{out}");
    assert!(!repo.exists("blocks.jsonl") && !repo.exists("session-lock/blocks.jsonl"));

    // The hooks are there, but this machine has no guard: the launcher blocks, doctor says so.
    let (code, out, _) = doctor(&repo, &path_with_suite(false), &["--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(v["ok"], false);
    let runs = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "guard runs")
        .unwrap();
    assert_eq!(runs["level"], "fail");
    assert!(
        runs["detail"].as_str().unwrap().contains("exit 2")
            && runs["fix"].as_str().unwrap().contains("scripts/setup"),
        "{runs}"
    );

    // Hooks turned off in a settings file the session reads; a plan that does not parse.
    repo.write(".claude/settings.local.json", "{\"disableAllHooks\": true}");
    repo.write("plans/r-ms-01-ui/plan.md", "---\nowns: [\n---\n");
    let (code, out, _) = doctor(&repo, &path_with_suite(true), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL hooks enabled: disableAllHooks is true in ")
            && out.contains("settings.local.json"),
        "{out}"
    );
    assert!(out.contains("FAIL plans: "), "{out}");
}
