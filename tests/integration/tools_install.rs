//! `guard install`: wires the hook into a repo, keeps everything else, and changes nothing the
//! second time.

use crate::lifecycle_support::{Repo, Verdict, bin, run_with_stdin, sid, text, verdict};
use serde_json::{Value, json};
use std::process::Command;

const EVENTS: [&str; 6] = [
    "PreToolUse",
    "PostToolUse",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Stop",
];

fn install(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.arg("install").arg(&repo.root).args(args);
    repo.run(c)
}

fn files(repo: &Repo) -> Vec<Option<String>> {
    [
        ".claude/settings.json",
        ".gitignore",
        "session-lock/PROTOCOL.md",
    ]
    .iter()
    .map(|f| repo.read(f))
    .collect()
}

fn settings(repo: &Repo) -> Value {
    serde_json::from_str(&repo.read(".claude/settings.json").expect("settings.json"))
        .expect("settings.json is JSON")
}

#[test]
fn install_wires_every_event_and_is_idempotent() {
    let repo = Repo::new();
    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for f in [
        ".claude/settings.json",
        ".gitignore",
        "session-lock/PROTOCOL.md",
    ] {
        assert!(
            out.contains(&format!("wrote {}", repo.path(f).display())),
            "{f}: {out}"
        );
    }
    assert!(
        out.contains(&format!("hooks run: {}", bin("guard"))),
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
        assert_eq!(hook["command"], bin("guard"), "{event}");
        assert_eq!(hook["timeout"], 10, "{event}");
    }
    assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert_eq!(s["hooks"]["PostToolUse"][0]["matcher"], "*");
    let gi = repo.read(".gitignore").unwrap();
    for line in [
        "session-lock/*",
        "!session-lock/PROTOCOL.md",
        "!session-lock/config.json",
    ] {
        assert!(gi.lines().any(|l| l == line), "{line} missing:\n{gi}");
    }
    let protocol = repo.read("session-lock/PROTOCOL.md").unwrap();
    assert_eq!(
        protocol,
        include_str!("../../PROTOCOL.md"),
        "the installed PROTOCOL.md is the suite's"
    );

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
    // settings.json, .gitignore, PROTOCOL.md, .mcp.json, settings.local.json
    assert_eq!(report["unchanged"].as_array().map(Vec::len), Some(5));
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
    assert_eq!(pre[1]["hooks"][0]["command"], bin("guard"));
    assert_eq!(pre[1]["hooks"][0]["timeout"], 7);
    let gi = repo.read(".gitignore").unwrap();
    assert!(
        gi.starts_with("node_modules/\ndist\n# session-lock"),
        "{gi}"
    );

    // Re-installing from another path replaces the old guard entries instead of adding more.
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
            err.contains(".claude/settings.json") && err.contains("nothing changed"),
            "{bad}: {err}"
        );
        assert_eq!(repo.read(".claude/settings.json").as_deref(), Some(bad));
        assert!(!repo.exists(".gitignore"), "{bad}");
        assert!(!repo.exists("session-lock/PROTOCOL.md"), "{bad}");
    }
}

#[test]
fn install_defaults_to_the_current_repo_and_refuses_a_missing_folder() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path("src")).unwrap();
    let mut c = repo.tool("guard");
    c.arg("install").current_dir(repo.path("src"));
    let (code, _, err) = repo.run(c);
    assert_eq!(code, 0, "{err}");
    assert!(repo.exists(".claude/settings.json"));
    let missing = repo.base.join("nope");
    let mut c = repo.tool("guard");
    c.arg("install").arg(&missing);
    let (code, _, err) = repo.run(c);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a folder"), "{err}");
}

#[test]
fn the_installed_hook_command_runs_the_guard() {
    let repo = Repo::new();
    assert_eq!(install(&repo, &[]).0, 0);
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    let command = settings(&repo)["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    // The client runs the hook as `sh -c '<command>'` in the session's cwd.
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(&command).current_dir(&repo.root);
    sh.env_remove("CLAUDE_PROJECT_DIR")
        .env("SESSION_LOCK_HOME", &repo.home);
    let payload = repo.payload(
        "alice",
        "Edit",
        json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
    );
    let out = run_with_stdin(sh, payload.to_string().as_bytes());
    match verdict(&out) {
        Ok(Verdict::Block(reason)) => assert!(
            reason.contains("owned by stream 'api'") && reason.contains(&sid("bob")[..8]),
            "{reason}"
        ),
        other => panic!("{other:?}; stderr {}", text(&out.stderr)),
    }
}
