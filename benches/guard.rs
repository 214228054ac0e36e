//! The guard's whole cost per call, as Claude Code pays it: one new process reading one payload.
//!
//! For each realistic payload the real `guard` binary is spawned many times and the wall time of
//! each run is taken; `/bin/true` (the process-spawn floor) is measured the same way in the same
//! run. Medians and the difference to the floor are printed. Run: `cargo bench --bench guard`
//! (`GUARD_BENCH_RUNS` sets the runs per payload, default 300).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run_once(program: &Path, payload: &[u8], env: &[(&str, &str)]) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(program)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload);
    }
    let status = child.wait().expect("wait");
    let took = start.elapsed();
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 2),
        "{program:?} failed: {status}"
    );
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn sh(repo: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(repo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists benches; nothing to list here
    }
    let runs: usize = std::env::var("GUARD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let guard = Path::new(env!("CARGO_BIN_EXE_guard"));
    let floor = Path::new("/bin/true");
    let dir = tempfile::tempdir().expect("tempdir");
    if std::env::var_os("GUARD_BENCH_KEEP").is_some() {
        // Keep the bench repo to measure one payload by hand (perf stat, strace).
        eprintln!("bench repo kept at {}", dir.path().display());
    }
    let repo = dir.path().join("repo");
    let home = dir.path().join("state");
    std::fs::create_dir_all(repo.join("session-lock")).unwrap();
    sh(&repo, &["init", "-q"]);
    // 20 streams, each claimed by another live session (this process), heartbeat fresh.
    let now = session_lock::time::iso(session_lock::time::now_ms());
    let me = std::process::id();
    let start = session_lock::liveness::start_time(me).unwrap_or_default();
    for i in 0..20 {
        let plan_dir = repo.join(format!("plans/r-ms-01-s{i:02}"));
        std::fs::create_dir_all(&plan_dir).unwrap();
        std::fs::write(
            plan_dir.join("plan.md"),
            format!("---\nowns:\n  - src/s{i:02}/**\n  - \"!src/s{i:02}/gen/**\"\n---\n"),
        )
        .unwrap();
        let lock = serde_json::json!({
            "stream": format!("s{i:02}"), "sessionId": format!("other-{i:02}"), "owns": [format!("src/s{i:02}/**"), format!("!src/s{i:02}/gen/**")],
            "plan": format!("plans/r-ms-01-s{i:02}/plan.md"), "milestone": 1, "claimedAt": now, "heartbeatAt": now,
            "round": 0, "cwd": repo.display().to_string(), "clientPid": me, "clientStart": start,
        });
        std::fs::write(
            repo.join(format!("session-lock/s{i:02}.lock")),
            lock.to_string(),
        )
        .unwrap();
    }
    let plan_dir = repo.join("plans/r-ms-02-mine");
    std::fs::create_dir_all(&plan_dir).unwrap();
    std::fs::write(
        plan_dir.join("plan.md"),
        "---\nowns:\n  - src/mine/**\n---\n",
    )
    .unwrap();
    // A 10 KB script a command runs, and package scripts `npm run` reads.
    std::fs::create_dir_all(repo.join("scripts")).unwrap();
    std::fs::write(
        repo.join("scripts/check.sh"),
        "echo checking src; grep -rn TODO src >/dev/null || true\n".repeat(180),
    )
    .unwrap();
    std::fs::write(
        repo.join("package.json"),
        r#"{"scripts": {"lint": "eslint src && tsc --noEmit -p tsconfig.json", "pretest": "npm run lint"}}"#,
    )
    .unwrap();
    let cwd = repo.display().to_string();
    let payload = |tool: &str, input: serde_json::Value| {
        serde_json::json!({
            "session_id": "bench-session", "transcript_path": "/nonexistent/t.jsonl", "cwd": cwd,
            "permission_mode": "bypassPermissions", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_bench",
        })
        .to_string()
        .into_bytes()
    };
    let heredoc = format!(
        "cat > notes.md <<'EOF'\n{}EOF",
        "git reset --hard && rm -rf dist # prose, not a command\n".repeat(200)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "bash, no keyword",
            payload(
                "Bash",
                serde_json::json!({"command": "ls -la src && echo done"}),
            ),
        ),
        (
            "bash, git command",
            payload(
                "Bash",
                serde_json::json!({"command": "git status && git log --oneline -5"}),
            ),
        ),
        (
            "bash, 10 KB heredoc",
            payload("Bash", serde_json::json!({"command": heredoc})),
        ),
        (
            "edit, 20 live locks",
            payload(
                "Edit",
                serde_json::json!({"file_path": format!("{cwd}/src/s19/deep/x.ts"), "old_string": "a", "new_string": "b", "replace_all": false}),
            ),
        ),
        (
            "bash write, 20 live locks",
            payload(
                "Bash",
                serde_json::json!({"command": "sed -i 's/a/b/' src/s19/deep/x.ts"}),
            ),
        ),
        (
            "bash, assignments + loop",
            payload(
                "Bash",
                serde_json::json!({"command": "OUT=build; for d in a b c; do mkdir -p \"$OUT/$d\" && echo ok > \"$OUT/$d/log\"; done"}),
            ),
        ),
        (
            "bash, runs a 10 KB script",
            payload(
                "Bash",
                serde_json::json!({"command": "bash scripts/check.sh"}),
            ),
        ),
        (
            "bash, npm run (package.json)",
            payload("Bash", serde_json::json!({"command": "npm run lint"})),
        ),
        (
            "bash, claim",
            payload("Bash", serde_json::json!({"command": "claim mine"})),
        ),
    ];
    let home_s = home.display().to_string();
    let env = [("SESSION_LOCK_HOME", home_s.as_str())];
    // Warm the page cache and check each payload runs.
    for (_, p) in &cases {
        run_once(guard, p, &env);
    }
    let mut floor_times = Vec::new();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    // Interleave so machine noise hits every series alike.
    for _ in 0..runs {
        floor_times.push(run_once(floor, b"", &[]));
        for (i, (name, p)) in cases.iter().enumerate() {
            if name.ends_with("claim") {
                // Measure a first claim every time: it creates the lock, durably.
                let _ = std::fs::remove_file(repo.join("session-lock/mine.lock"));
            }
            times[i].push(run_once(guard, p, &env));
        }
    }
    let floor_med = median(floor_times);
    if std::env::var_os("GUARD_BENCH_KEEP").is_some() {
        let kept = dir.keep();
        for (i, (name, p)) in cases.iter().enumerate() {
            let file = kept.join(format!("payload-{i}.json"));
            std::fs::write(&file, p).expect("write payload");
            eprintln!("payload '{name}': {}", file.display());
        }
    }
    println!("guard per call, {runs} runs each, medians (spawn floor: /bin/true)");
    println!(
        "{:<30} {:>10} {:>14} {:>8}",
        "payload", "median", "over floor", "ratio"
    );
    println!(
        "{:<30} {:>8.3}ms {:>14} {:>8}",
        "/bin/true (floor)",
        floor_med.as_secs_f64() * 1e3,
        "-",
        "1.00"
    );
    for (i, (name, _)) in cases.iter().enumerate() {
        let m = median(times[i].clone());
        let over = m.as_secs_f64() - floor_med.as_secs_f64();
        println!(
            "{:<30} {:>8.3}ms {:>12.3}ms {:>8.2}",
            name,
            m.as_secs_f64() * 1e3,
            over * 1e3,
            m.as_secs_f64() / floor_med.as_secs_f64()
        );
    }
}
