//! `guard install --agent`, `uninstall` and `doctor` for Codex CLI and Gemini CLI: each client's
//! project config written and taken out again exactly, the clients found on PATH wired by
//! default, the installed hook command finding the guard from below the repo's top, and the
//! doctor's trust checks, whose instructions are followed here to the letter until the real
//! Codex CLI runs the guard's hooks without any bypass flag.

use crate::support::claude::Home;
use crate::support::codex::require_codex;
use crate::support::fake_model::{FakeModel, Turn, Wire};
use crate::support::lifecycle::{Repo, bin, run_with_stdin, text};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Codex names its events as Claude Code does.
const CODEX_EVENTS: [&str; 6] = crate::tools_install::EVENTS;
const GEMINI_EVENTS: [&str; 6] = [
    "BeforeTool",
    "AfterTool",
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
];

/// `dirs` then the suite's folder and the system's, as a PATH.
fn path_of(dirs: &[&Path]) -> String {
    let suite = Path::new(bin("guard")).parent().unwrap().to_path_buf();
    let mut all: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    all.push(suite);
    all.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    std::env::join_paths(all)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// `guard <args>` in the repo with this PATH (and HOME the repo's).
fn guard(repo: &Repo, path: &str, args: &[&str]) -> (i32, String, String) {
    guard_with(repo, path, args, &[])
}

/// [`guard`] with these variables set too (after HOME, so it can be one of them), and
/// no trust given to Gemini by the environment.
fn guard_with(
    repo: &Repo,
    path: &str,
    args: &[&str],
    env: &[(&str, &Path)],
) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.args(args)
        .current_dir(&repo.root)
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env_remove("SESSION_LOCK_GUARD")
        .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
        .env_remove("GEMINI_CLI_TRUSTED_FOLDERS_PATH");
    for (key, value) in env {
        c.env(key, value);
    }
    repo.run(c)
}

fn json_of(repo: &Repo, rel: &str) -> Value {
    let text = repo.read(rel).unwrap_or_else(|| panic!("{rel} exists"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel} is JSON ({e}): {text}"))
}

/// The guard command of each event's entries in a client's config.
fn commands(doc: &Value, events: &[&str]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            doc["hooks"][e]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g["hooks"].as_array())
                .flatten()
                .filter_map(|h| h["command"].as_str())
                .find(|c| c.contains("session-lock/guard-hook"))
                .unwrap_or_else(|| panic!("no guard entry for {e}: {doc}"))
                .to_string()
        })
        .collect()
}

#[test]
fn install_wires_each_named_client_and_uninstall_takes_exactly_that_out() {
    let repo = Repo::new();
    let gemini_before = "{\n  \"theme\": \"GitHub\",\n  \"hooks\": {\"BeforeTool\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit\"}]}]}\n}\n";
    repo.write(".gemini/settings.json", gemini_before);
    let path = path_of(&[]);
    let root = repo.root.to_str().unwrap();

    let (code, out, err) = guard(
        &repo,
        &path,
        &[
            "install", root, "--agent", "codex", "--agent", "gemini", "--json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON report");
    assert_eq!(report["agents"], json!(["codex", "gemini"]));
    assert!(
        !repo.exists(".claude/settings.json"),
        "Claude Code was not named"
    );
    assert!(!repo.exists(".mcp.json"));
    let codex = json_of(&repo, ".codex/hooks.json");
    let wired = commands(&codex, &CODEX_EVENTS);
    assert!(wired.iter().all(|c| c == &wired[0]), "{wired:?}");
    assert!(
        codex["hooks"]["PreToolUse"][0].get("matcher").is_none(),
        "{codex}"
    );
    assert_eq!(codex["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 10);
    let gemini = json_of(&repo, ".gemini/settings.json");
    assert_eq!(gemini["theme"], "GitHub");
    commands(&gemini, &GEMINI_EVENTS);
    let before = gemini["hooks"]["BeforeTool"].as_array().unwrap();
    assert_eq!(before[0]["hooks"][0]["command"], "audit", "theirs first");
    assert_eq!(before[1]["matcher"], "*");
    assert_eq!(before[1]["hooks"][0]["name"], "session-lock");
    assert_eq!(before[1]["hooks"][0]["timeout"], 10_000, "milliseconds");
    assert!(repo.exists("session-lock/guard-hook"));

    let again = guard(
        &repo,
        &path,
        &["install", root, "--agent", "codex", "--agent", "gemini"],
    );
    assert_eq!(again.0, 0);
    assert!(
        again.1.contains("already wired, nothing changed"),
        "{}",
        again.1
    );

    let (code, out, err) = guard(&repo, &path, &["uninstall", root]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!repo.exists(".codex"), "the folder install made is gone");
    assert_eq!(
        repo.read(".gemini/settings.json").as_deref(),
        Some(gemini_before)
    );
    assert!(!repo.exists("session-lock/guard-hook"));

    let (code, _, err) = guard(&repo, &path, &["install", root, "--agent", "cursor"]);
    assert_eq!(code, 2);
    assert!(err.contains("'cursor' is not a supported client"), "{err}");
}

#[test]
fn install_by_default_wires_claude_code_and_the_clients_found_on_path() {
    let repo = Repo::new();
    let tools = tempfile::tempdir().unwrap();
    let gemini = tools.path().join("gemini");
    std::fs::write(&gemini, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = repo.root.to_str().unwrap();

    let (code, out, err) = guard(&repo, &path_of(&[tools.path()]), &["install", root]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("wired Claude Code (.claude/settings.json)"),
        "{out}"
    );
    assert!(
        out.contains(
            "wired Gemini CLI (.gemini/settings.json): its hooks run only in a trusted folder"
        ),
        "{out}"
    );
    assert!(!out.contains("Codex"), "{out}");
    assert!(repo.exists(".claude/settings.json") && repo.exists(".gemini/settings.json"));
    assert!(!repo.exists(".codex/hooks.json"));
}

#[test]
fn the_codex_hook_command_finds_the_guard_from_below_the_top_and_it_refuses_there() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.write("src/api/x.ts", "x\n");
    repo.lock("api", "other", &["src/api/**"], 1, 0);
    std::fs::create_dir_all(repo.path("src/ui")).unwrap();
    let root = repo.root.to_str().unwrap();
    assert_eq!(
        guard(&repo, &path_of(&[]), &["install", root, "--agent", "codex"]).0,
        0
    );
    let command = commands(&json_of(&repo, ".codex/hooks.json"), &CODEX_EVENTS)[0].clone();
    // Codex runs a hook in the call's folder (its `workdir`), here below the top.
    let sub = repo.path("src/ui");
    let payload = json!({"session_id": "01a23ac9-e795-7bd1-bfe7-13959fefd4ad", "turn_id": "t",
        "transcript_path": repo.home.join("sessions/2026/12/03/rollout-x.jsonl"),
        "cwd": sub, "hook_event_name": "PreToolUse", "model": "gpt-5.5",
        "permission_mode": "bypassPermissions", "tool_name": "Bash",
        "tool_input": {"command": "echo HIJACK > ../api/x.ts"}, "tool_use_id": "call_1"});
    let mut sh = repo.scrubbed(Command::new("sh"));
    sh.arg("-c")
        .arg(&command)
        .current_dir(&sub)
        .env("PATH", path_of(&[]));
    let out = run_with_stdin(sh, payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_str(&text(&out.stdout)).expect("one JSON answer");
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("src/api/x.ts is owned by stream 'api'"),
        "{answer}"
    );
}

/// The doctor's check `name` from its JSON report.
fn doctor_check(report: &str, name: &str) -> Value {
    let v: Value = serde_json::from_str(report).unwrap_or_else(|e| panic!("{e}: {report}"));
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// Each named check of the doctor's JSON report has this level.
#[track_caller]
fn assert_levels(report: &str, levels: &[(&str, &str)]) {
    for (name, level) in levels {
        assert_eq!(
            doctor_check(report, name)["level"],
            *level,
            "{name}: {report}"
        );
    }
}

/// The TOML lines a doctor fix says to add: what follows its first `:\n`, up to an indented
/// line of prose.
fn lines_to_add(fix: &str) -> String {
    let (_, rest) = fix
        .split_once(":\n")
        .unwrap_or_else(|| panic!("no lines in {fix}"));
    rest.lines()
        .take_while(|l| !l.starts_with("     "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn doctor_says_exactly_how_to_trust_the_codex_hooks_and_then_codex_runs_them() {
    let codex = require_codex!();
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let root = repo.root.to_str().unwrap();
    let home = Home::new();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = codex_home.join("config.toml");
    let bin_dir = codex.bin().parent().unwrap().to_path_buf();
    let path = path_of(&[&bin_dir]);
    let env = [("HOME", home.path()), ("CODEX_HOME", codex_home.as_path())];
    let doctor = |repo: &Repo| guard_with(repo, &path, &["doctor", "--json"], &env);
    assert_eq!(
        guard(&repo, &path, &["install", root, "--agent", "codex"]).0,
        0
    );

    // An untrusted project: Codex would load none of its hooks, and say nothing.
    let (code, out, _) = doctor(&repo);
    assert_eq!(code, 1, "{out}");
    assert_levels(
        &out,
        &[
            ("codex hooks", "ok"),
            ("codex guard runs", "ok"),
            ("codex trust", "fail"),
        ],
    );
    let trust = doctor_check(&out, "codex trust");
    assert!(
        trust["detail"]
            .as_str()
            .unwrap()
            .contains("does not trust the project"),
        "{trust}"
    );
    let fix = trust["fix"].as_str().unwrap();
    let project = lines_to_add(fix);
    assert_eq!(
        project,
        format!(
            "[projects.{}]\ntrust_level = \"trusted\"",
            serde_json::to_string(root).unwrap()
        )
    );
    std::fs::write(&config, format!("{project}\n")).unwrap();

    // A trusted project whose hooks nobody reviewed yet: each one's key and hash to trust.
    let (code, out, _) = doctor(&repo);
    assert_eq!(code, 1, "{out}");
    let trust = doctor_check(&out, "codex trust");
    assert_eq!(trust["level"], "fail", "{trust}");
    assert!(
        trust["detail"]
            .as_str()
            .unwrap()
            .contains("skips 6 of the 6 guard hooks"),
        "{trust}"
    );
    let hooks = lines_to_add(trust["fix"].as_str().unwrap());
    assert_eq!(
        hooks.matches("trusted_hash = \"sha256:").count(),
        6,
        "{hooks}"
    );
    std::fs::write(&config, format!("{project}\n{hooks}\n")).unwrap();
    let (_, out, _) = doctor(&repo);
    assert_eq!(doctor_check(&out, "codex trust")["level"], "ok", "{out}");

    // Now a plain Codex session (no bypass flag) runs the guard: its claim is recorded under the
    // session's own id.
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            Turn::tool_use("exec_command", json!({"cmd": "claim api"})),
            Turn::text("claimed"),
        ],
    );
    let run = codex
        .session(&repo.root, &model, "claim the api stream")
        .home(&home)
        .bypass_trust(false)
        .env("PATH", path_of(&[&bin_dir]))
        .env("SESSION_LOCK_HOME", &repo.home)
        .run();
    run.assert_success();
    let lock = repo
        .lock_json("api")
        .unwrap_or_else(|| panic!("{}", run.describe("no lock: the hook did not run")));
    assert_eq!(lock["sessionId"].as_str(), run.session_id(), "{lock}");
    let results = model.tool_results();
    assert!(
        results[0].content.contains("exited with code 0"),
        "claim ran and succeeded: {results:?}"
    );
}

#[test]
fn doctor_says_how_to_trust_the_gemini_folder_and_sees_hooks_switched_off() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let root = repo.root.to_str().unwrap();
    let gemini_home = tempfile::tempdir().unwrap();
    let path = path_of(&[]);
    let env = [("GEMINI_CLI_HOME", gemini_home.path())];
    let doctor = |repo: &Repo| guard_with(repo, &path, &["doctor", "--json"], &env);
    assert_eq!(
        guard(&repo, &path, &["install", root, "--agent", "gemini"]).0,
        0
    );

    let (code, out, _) = doctor(&repo);
    assert_eq!(code, 1, "{out}");
    assert_levels(
        &out,
        &[
            ("gemini hooks", "ok"),
            ("gemini guard runs", "ok"),
            ("gemini trust", "fail"),
        ],
    );
    let trust = doctor_check(&out, "gemini trust");
    assert!(
        trust["detail"]
            .as_str()
            .unwrap()
            .contains("is not a trusted folder"),
        "{trust}"
    );
    let rule = lines_to_add(trust["fix"].as_str().unwrap());
    assert_eq!(rule, format!("{{\"{root}\": \"TRUST_FOLDER\"}}"));
    let folders = gemini_home.path().join(".gemini/trustedFolders.json");
    std::fs::create_dir_all(folders.parent().unwrap()).unwrap();
    std::fs::write(&folders, &rule).unwrap();
    let (_, out, _) = doctor(&repo);
    assert_eq!(doctor_check(&out, "gemini trust")["level"], "ok", "{out}");
    // Claude Code was not wired: said, not failed.
    assert_eq!(doctor_check(&out, "hooks")["level"], "warn", "{out}");

    // The project switches the guard's hook off by name.
    let mut settings = json_of(&repo, ".gemini/settings.json");
    settings["hooksConfig"] = json!({"disabled": ["session-lock"]});
    repo.write(".gemini/settings.json", &settings.to_string());
    let (code, out, _) = doctor(&repo);
    assert_eq!(code, 1);
    let trust = doctor_check(&out, "gemini trust");
    assert!(
        trust["detail"]
            .as_str()
            .unwrap()
            .contains("hooksConfig.disabled lists \"session-lock\""),
        "{trust}"
    );
}
