//! Property tests of the guard binary: whatever arrives on stdin, the real `guard` process never
//! panics visibly, never hangs, exits 0 or 2, and prints nothing on stdout but at most one JSON
//! deny decision.

use crate::support::repo::GitRepo;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const GUARD: &str = env!("CARGO_BIN_EXE_guard");

/// Runs the guard on `input` in `cwd`; panics (failing the property) on any contract breach.
fn check_guard(cwd: &std::path::Path, state: &std::path::Path, input: &[u8]) {
    let start = Instant::now();
    let mut child = Command::new(GUARD)
        .current_dir(cwd)
        .env("SESSION_LOCK_HOME", state)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("SESSION_LOCK_GUARD_CRASH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn guard");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        // The guard may stop reading early (size cap); a broken pipe is fine.
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().expect("wait guard");
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(8),
        "guard took {took:?} on {} input bytes",
        input.len()
    );
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(2)),
        "exit {code:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked at") && !stderr.contains("RUST_BACKTRACE"),
        "panic text on stderr: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.trim().is_empty() {
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout}"));
        assert!(
            v.get("hookSpecificOutput").is_some(),
            "unexpected stdout: {stdout}"
        );
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("tool_name".to_string()),
                    Just("tool_input".to_string()),
                    Just("command".to_string()),
                    Just("file_path".to_string()),
                    Just("cwd".to_string()),
                    "[a-z_]{1,12}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_payload() -> impl Strategy<Value = Value> {
    let tool = prop_oneof![
        Just("Bash"),
        Just("PowerShell"),
        Just("Edit"),
        Just("Write"),
        Just("MultiEdit"),
        Just("NotebookEdit"),
        Just("Read"),
        Just("mcp__app__write_project_file"),
        Just("mcp__app__kill_process"),
        Just("mcp__app__live_plugin_toggle"),
    ];
    let event = prop_oneof![
        Just("PreToolUse"),
        Just("PostToolUse"),
        Just("SessionStart"),
        Just("SessionEnd"),
        Just("UserPromptSubmit"),
        Just("Stop"),
        Just("Bogus"),
    ];
    let command = prop_oneof![
        ".{0,120}",
        "(claim|release|git|rm|npm|bash -c|eval|cat <<EOF|vite) [ -~]{0,60}",
        prop::collection::vec("[ -~\\n\\t]{0,30}", 0..6).prop_map(|v| v.join("\n")),
    ];
    (tool, event, command, ".{0,60}", arb_json(), any::<bool>()).prop_map(
        |(tool, event, command, path, extra, relative_cwd)| {
            json!({
                "session_id": "prop-session",
                "hook_event_name": event,
                "cwd": if relative_cwd { "sub/dir".to_string() } else { String::new() },
                "tool_name": tool,
                "tool_input": {"command": command, "file_path": path, "path": path, "extra": extra},
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_break_the_contract(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let repo = GitRepo::new();
        let state = tempfile::tempdir().unwrap();
        check_guard(repo.path(), state.path(), &bytes);
    }

    #[test]
    fn arbitrary_json_never_breaks_the_contract(v in arb_json()) {
        let repo = GitRepo::new();
        let state = tempfile::tempdir().unwrap();
        check_guard(repo.path(), state.path(), v.to_string().as_bytes());
    }

    #[test]
    fn arbitrary_payloads_never_break_the_contract(mut v in arb_payload()) {
        let repo = GitRepo::with_files(&[
            ("plans/r-ms-01-api/plan.md", "---\nowns:\n  - src/api/**\n---\n"),
            ("src/api/a.ts", "a\n"),
        ]);
        let state = tempfile::tempdir().unwrap();
        let cwd = v["cwd"].as_str().unwrap_or_default().to_string();
        v["cwd"] = json!(repo.path().join(cwd).display().to_string());
        check_guard(repo.path(), state.path(), v.to_string().as_bytes());
    }
}

#[test]
fn issue_11_an_oversized_payload_is_read_whole_and_checked() {
    let repo = GitRepo::new();
    let state = tempfile::tempdir().unwrap();
    let big = format!(
        "{{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"{}\"}}}}",
        "x".repeat(17 * 1024 * 1024)
    );
    let mut child = Command::new(GUARD)
        .current_dir(repo.path())
        .env("SESSION_LOCK_HOME", state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(big.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    // Read whole (stdin drained), and checked: a 17 MiB command is over the analysis budget.
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"permissionDecision\":\"deny\"")
            && stdout.contains("split it into several smaller commands"),
        "{stdout}"
    );
}

#[test]
fn a_crashing_guard_allows_with_one_line() {
    let repo = GitRepo::new();
    let out = Command::new(GUARD)
        .current_dir(repo.path())
        .env("SESSION_LOCK_GUARD_CRASH", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(br#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#)?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line, no backtrace: {err}");
    assert!(err.starts_with("guard: internal error"), "{err}");
}
