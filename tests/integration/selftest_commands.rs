//! The command-rule half of the selftest corpus (`selftest/commands/*.case`) through the real
//! `guard` binary. Every case runs twice: once with another live session registered in the
//! same tree and once alone, so `shared` rules are seen to block with company and to let a
//! lone session through. Every failing case is listed by file, line and name before failing.

use crate::support::cases::{CommandCase, Expect, parse_cases};
use crate::support::lifecycle::{Repo, Verdict, run_with_stdin, verdict};
use crate::support::wine::{Form, Host, require_wine};
use serde_json::json;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const ME: &str = "5e1f7e57-0000-4000-8000-00000000000a";
const OTHER: &str = "07e40000-0000-4000-8000-00000000000b";

/// Registers a session in the guard's per-user registry, as live as a process of `host`.
fn register(host: Host, home: &Path, session: &str, cwd: &Path) {
    let (pid, start) = host.live();
    let entry = json!({
        "sessionId": session,
        "cwd": host.path(cwd),
        "pid": pid,
        "procStart": start,
        "updatedAt": session_lock::time::iso(session_lock::time::now_ms()),
    });
    let dir = home.join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{session}.json")), entry.to_string()).unwrap();
}

/// A repo whose registry holds this session and, with `others`, one more in the same tree.
fn repo(host: Host, others: bool) -> Repo {
    let r = Repo::new();
    register(host, &r.home, ME, &r.root);
    if others {
        register(host, &r.home, OTHER, &r.root.join("src"));
    }
    std::fs::create_dir_all(r.base.join("claude-config")).unwrap();
    r
}

fn run(host: Host, repo: &Repo, case: &CommandCase, others: bool) -> Result<(), String> {
    let cwd = match &case.cwd {
        Some(rel) => repo.root.join(rel),
        None => repo.root.clone(),
    };
    std::fs::create_dir_all(&cwd).map_err(|e| format!("cwd: {e}"))?;
    let input = if case.is_mcp() {
        case.input.clone()
    } else {
        json!({"command": case.command})
    };
    let cwd_text = match (host, &case.cwd) {
        (Host::Linux, _) => host.path(&cwd),
        (Host::Windows(_, form), Some(rel)) => form.join(&repo.root, rel),
        (Host::Windows(_, form), None) => form.of(&repo.root),
    };
    let payload = json!({
        "session_id": ME,
        "transcript_path": host.path(Path::new("/nonexistent/transcript.jsonl")),
        "cwd": cwd_text,
        "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse",
        "tool_name": case.tool,
        "tool_input": input,
        "tool_use_id": "toolu_selftest",
    });
    let make = || {
        let mut cmd = host.guard(repo, &cwd);
        cmd.env(
            "CLAUDE_CONFIG_DIR",
            host.path(&repo.base.join("claude-config")),
        );
        cmd
    };
    let out = host.run(make, payload.to_string().as_bytes());
    let want: Option<&str> = match &case.expect {
        Expect::Allow => None,
        Expect::Block(id) => Some(id),
        Expect::Shared(id) => others.then_some(id.as_str()),
    };
    let company = if others {
        "with another session"
    } else {
        "alone"
    };
    match (verdict(&out)?, want) {
        (Verdict::Allow, None) => Ok(()),
        (Verdict::Block(reason), Some(id)) if reason.contains(id) => Ok(()),
        (Verdict::Block(reason), Some(id)) => {
            Err(format!("{company}: blocked, but not by {id}: {reason}"))
        }
        (Verdict::Block(reason), None) => {
            Err(format!("{company}: expected allow, blocked: {reason}"))
        }
        (Verdict::Allow, Some(id)) => Err(format!(
            "{company}: expected a block by {id}, allowed (stderr: {:?})",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// Runs every command case on the host `host_for` picks for it, alone and with company;
/// lists every failure, then fails once.
fn run_corpus(label: &str, host_for: impl Fn(usize) -> Host + Sync) {
    let files = crate::support::lifecycle::case_files("commands");
    let mut cases = Vec::new();
    let mut failures = Vec::new();
    for (name, text) in &files {
        match parse_cases(text, name) {
            Ok(c) => cases.extend(c),
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(cases.len() >= 300, "only {} command cases", cases.len());
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                // One repo per thread and company: the rules leave the tree as it was.
                let base = host_for(0);
                let alone = repo(base, false);
                let shared = repo(base, true);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let host = host_for(i);
                    for (r, others) in [(&alone, false), (&shared, true)] {
                        if let Err(e) = run(host, r, case, others) {
                            let shown = match host {
                                Host::Linux => String::new(),
                                Host::Windows(_, form) => format!(" [cwd {form:?}]"),
                            };
                            failed.lock().unwrap().push(format!(
                                "{}:{} {}{shown}\n      {e}",
                                case.file, case.line, case.name
                            ));
                        }
                    }
                }
            });
        }
    });
    let mut run_failures = failed.into_inner().unwrap();
    run_failures.sort();
    failures.extend(run_failures);
    println!(
        "selftest: {label}: {} command cases in {} files, each alone and shared; {} failed ({} started again after wine failed to start them)",
        cases.len(),
        files.len(),
        failures.len(),
        crate::support::wine::RESTARTS.load(Ordering::SeqCst)
    );
    assert!(
        failures.is_empty(),
        "{} command case failure(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn command_corpus() {
    run_corpus("linux", |_| Host::Linux);
}

/// The same corpus through the Windows `guard.exe` under wine: the other session is a live
/// Windows process, and each case names its cwd in one of the Windows path forms in turn.
#[test]
fn command_corpus_on_windows() {
    let wine = require_wine!();
    run_corpus("windows", |i| {
        Host::Windows(wine, Form::ALL[i % Form::ALL.len()])
    });
}

#[test]
fn a_missing_live_sessions_file_is_unknown_and_blocks_shared_rules() {
    let r = repo(Host::Linux, false);
    r.config(&json!({"liveSessionsFile": "app-live.json"}));
    let payload = json!({
        "session_id": ME, "cwd": r.root.to_string_lossy(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git checkout main"},
    });
    let mut cmd = r.tool("guard");
    cmd.env("CLAUDE_CONFIG_DIR", r.base.join("claude-config"));
    let out = run_with_stdin(cmd, payload.to_string().as_bytes());
    match verdict(&out).unwrap() {
        Verdict::Block(reason) => {
            assert!(reason.contains("git.head-change"), "{reason}");
            assert!(
                reason.contains("cannot tell") && reason.contains("app-live.json"),
                "{reason}"
            );
        }
        Verdict::Allow => panic!("an unreadable live-sessions file must block the git rules"),
    }
    // The app publishes the file (its pid is alive, only this session listed): alone again.
    r.write(
        "app-live.json",
        &json!({"pid": std::process::id(), "procStart": session_lock::liveness::start_time(std::process::id()),
                "sessions": [{"sessionId": ME, "cwd": r.root.to_string_lossy()}]}).to_string(),
    );
    let mut cmd = r.tool("guard");
    cmd.env("CLAUDE_CONFIG_DIR", r.base.join("claude-config"));
    let out = run_with_stdin(cmd, payload.to_string().as_bytes());
    assert_eq!(verdict(&out).unwrap(), Verdict::Allow);
}

#[test]
fn a_session_the_registries_do_not_know_is_unknown_and_blocks_shared_rules() {
    let r = repo(Host::Linux, false);
    let payload = json!({
        "session_id": "unregistered-0000-4000-8000-000000000000", "cwd": r.root.to_string_lossy(),
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "git stash"},
    });
    let mut cmd = r.tool("guard");
    cmd.env("CLAUDE_CONFIG_DIR", r.base.join("claude-config"));
    let out = run_with_stdin(cmd, payload.to_string().as_bytes());
    match verdict(&out).unwrap() {
        Verdict::Block(reason) => assert!(
            reason.contains("no session registry lists this session"),
            "{reason}"
        ),
        Verdict::Allow => panic!("a session nobody registered cannot be known to be alone"),
    }
}
