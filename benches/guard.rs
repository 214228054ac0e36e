//! The guard's whole cost per call, as Claude Code pays it: one new process reading one payload.
//!
//! For each realistic payload the real `guard` binary is spawned many times and the wall time of
//! each run is taken; `/bin/true` (the process-spawn floor) is measured the same way in the same
//! run. Medians and the difference to the floor are printed. Run: `cargo bench --bench guard`
//! (`GUARD_BENCH_RUNS` sets the runs per payload, default 200). With
//! `GUARD_BENCH_BASELINE=<folder holding another build's guard and status>` (say, one built from
//! an older commit) every payload is also run through those binaries, on beds of their own built
//! the same way, their runs interleaved with this build's, and a second table shows both side by
//! side. The same build also runs on beds with `"floor": "off"`: its side-by-side table is what
//! the kernel floor's stage adds to a call (a Bash call while locks are live is answered with the
//! rewrite into `guard floor`; the bench's payloads are in `bypassPermissions`, where it applies).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run_once(program: &Path, args: &[&str], payload: &[u8], env: &[(&str, &str)]) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
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

/// One bench repo: `locks` streams claimed by other live sessions (this process), 200 plans,
/// and the bench session's own stream `mine` (plan `src/mine/**`).
struct Bed {
    _dir: tempfile::TempDir,
    repo: std::path::PathBuf,
    home: String,
}

const PLANS: usize = 200;

/// How this build's binaries are linked: the bench is built with the same flags as they are
/// (`scripts/bench-guard` links them statically where it can, as `scripts/setup` installs them).
const LINKED: &str = if cfg!(target_feature = "crt-static") {
    "linked statically"
} else {
    "linked dynamically"
};

fn bed(locks: usize, config: &str) -> Bed {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    let home = dir.path().join("state").display().to_string();
    std::fs::create_dir_all(repo.join("session-lock")).unwrap();
    std::fs::write(repo.join("session-lock/config.json"), config).unwrap();
    sh(&repo, &["init", "-q"]);
    let now = session_lock::time::iso(session_lock::time::now_ms());
    let me = std::process::id();
    let start = session_lock::liveness::start_time(me).unwrap_or_default();
    for i in 0..PLANS {
        let plan_dir = repo.join(format!("plans/r-ms-01-s{i:03}"));
        std::fs::create_dir_all(&plan_dir).unwrap();
        std::fs::write(
            plan_dir.join("plan.md"),
            format!("---\nowns:\n  - src/s{i:03}/**\n  - \"!src/s{i:03}/gen/**\"\n---\n"),
        )
        .unwrap();
        if i >= locks {
            continue;
        }
        let lock = serde_json::json!({
            "stream": format!("s{i:03}"), "sessionId": format!("other-{i:03}"), "owns": [format!("src/s{i:03}/**"), format!("!src/s{i:03}/gen/**")],
            "plan": format!("plans/r-ms-01-s{i:03}/plan.md"), "milestone": 1, "claimedAt": now, "heartbeatAt": now,
            "round": 0, "cwd": repo.display().to_string(), "clientPid": me, "clientStart": start,
        });
        std::fs::write(
            repo.join(format!("session-lock/s{i:03}.lock")),
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
    Bed {
        _dir: dir,
        repo,
        home,
    }
}

/// One measured command: the guard on a payload, or a tool with arguments.
enum Call {
    Guard(Vec<u8>),
    /// A tool of the build under test (`status`), with arguments.
    Tool(&'static str, Vec<String>),
    /// `status --statusline` with a session's status-line JSON on stdin, as the client runs it
    /// (a build without it shows n/a).
    Statusline(Vec<u8>),
}

fn payloads(bed: &Bed, locks: usize) -> Vec<(String, Call)> {
    let cwd = bed.repo.display().to_string();
    let payload = |tool: &str, input: serde_json::Value| {
        Call::Guard(
            serde_json::json!({
                "session_id": "bench-session", "transcript_path": "/nonexistent/t.jsonl", "cwd": cwd,
                "permission_mode": "bypassPermissions", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_bench",
            })
            .to_string()
            .into_bytes(),
        )
    };
    // Codex and Gemini CLI payloads, as each client sends them (see `clients`).
    let codex = |tool: &str, input: serde_json::Value| {
        Call::Guard(
            serde_json::json!({
                "session_id": "01a23ac9-ac6b-70a3-935c-c236735b5600", "turn_id": "bench-turn",
                "transcript_path": "/nonexistent/rollout.jsonl", "cwd": cwd,
                "hook_event_name": "PreToolUse", "model": "gpt-5.5",
                "permission_mode": "bypassPermissions", "tool_name": tool, "tool_input": input,
                "tool_use_id": "call_bench",
            })
            .to_string()
            .into_bytes(),
        )
    };
    let gemini = |tool: &str, input: serde_json::Value| {
        Call::Guard(
            serde_json::json!({
                "session_id": "74e8b17c-bench", "transcript_path": "/nonexistent/chat.jsonl",
                "cwd": cwd, "hook_event_name": "BeforeTool",
                "timestamp": "2026-12-03T07:25:54.625Z", "tool_name": tool, "tool_input": input,
            })
            .to_string()
            .into_bytes(),
        )
    };
    let heredoc = format!(
        "cat > notes.md <<'EOF'\n{}EOF",
        "git reset --hard && rm -rf dist # prose, not a command\n".repeat(200)
    );
    let last = locks - 1;
    vec![
        (
            "bash, no keyword".into(),
            payload(
                "Bash",
                serde_json::json!({"command": "ls -la src && echo done"}),
            ),
        ),
        (
            "bash, git command".into(),
            payload(
                "Bash",
                serde_json::json!({"command": "git status && git log --oneline -5"}),
            ),
        ),
        (
            "bash, 10 KB heredoc".into(),
            payload("Bash", serde_json::json!({"command": heredoc})),
        ),
        (
            "bash, echo > owned file".into(),
            payload(
                "Bash",
                serde_json::json!({"command": format!("echo x > src/s{last:03}/deep/x.ts")}),
            ),
        ),
        (
            "bash write, another's file".into(),
            payload(
                "Bash",
                serde_json::json!({"command": format!("sed -i 's/a/b/' src/s{last:03}/deep/x.ts")}),
            ),
        ),
        (
            "bash, assignments + loop".into(),
            payload(
                "Bash",
                serde_json::json!({"command": "OUT=build; for d in a b c; do mkdir -p \"$OUT/$d\" && echo ok > \"$OUT/$d/log\"; done"}),
            ),
        ),
        (
            "bash, runs a 10 KB script".into(),
            payload(
                "Bash",
                serde_json::json!({"command": "bash scripts/check.sh"}),
            ),
        ),
        (
            "bash, npm run (package.json)".into(),
            payload("Bash", serde_json::json!({"command": "npm run lint"})),
        ),
        (
            "edit, another's file".into(),
            payload(
                "Edit",
                serde_json::json!({"file_path": format!("{cwd}/src/s{last:03}/deep/x.ts"), "old_string": "a", "new_string": "b", "replace_all": false}),
            ),
        ),
        (
            "edit, own file".into(),
            payload(
                "Edit",
                serde_json::json!({"file_path": format!("{cwd}/src/mine/x.ts"), "old_string": "a", "new_string": "b", "replace_all": false}),
            ),
        ),
        (
            "codex bash, another's file".into(),
            codex(
                "Bash",
                serde_json::json!({"command": format!("sed -i 's/a/b/' src/s{last:03}/deep/x.ts")}),
            ),
        ),
        (
            "codex apply_patch, another's".into(),
            codex(
                "apply_patch",
                serde_json::json!({"command": format!("*** Begin Patch\n*** Update File: src/s{last:03}/deep/x.ts\n@@\n-a\n+b\n*** End Patch\n")}),
            ),
        ),
        (
            "gemini shell, no keyword".into(),
            gemini(
                "run_shell_command",
                serde_json::json!({"command": "ls -la src && echo done", "dir_path": cwd}),
            ),
        ),
        (
            "gemini write_file, another's".into(),
            gemini(
                "write_file",
                serde_json::json!({"file_path": format!("{cwd}/src/s{last:03}/deep/x.ts"), "content": "b\n"}),
            ),
        ),
        (
            "gemini replace, own file".into(),
            gemini(
                "replace",
                serde_json::json!({"file_path": format!("{cwd}/src/mine/x.ts"), "old_string": "a", "new_string": "b"}),
            ),
        ),
        (
            "bash, re-claim (200 plans)".into(),
            payload("Bash", serde_json::json!({"command": "claim mine"})),
        ),
        (
            "status (all streams)".into(),
            Call::Tool("status", vec!["--repo".into(), cwd.clone()]),
        ),
        (
            "status --statusline".into(),
            Call::Statusline(
                serde_json::json!({
                    "session_id": "bench-session", "cwd": cwd,
                    "workspace": {"current_dir": cwd, "project_dir": cwd},
                    "model": {"id": "claude-opus-5-5", "display_name": "Opus"}, "version": "2.1.328",
                })
                .to_string()
                .into_bytes(),
            ),
        ),
    ]
}

/// One build's binaries: the guard and the tools a payload runs.
#[derive(Clone)]
struct Build {
    label: String,
    guard: std::path::PathBuf,
    status: std::path::PathBuf,
    /// Its `status` has `--statusline`.
    statusline: bool,
}

impl Build {
    fn tool(&self, name: &str) -> &Path {
        match name {
            "status" => &self.status,
            other => panic!("no tool {other} in the bench"),
        }
    }

    /// A build's binaries in `dir`, each checked to exist.
    fn from_dir(label: &str, dir: &Path) -> Build {
        let exe = |name: &str| {
            let p = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
            assert!(
                p.is_file(),
                "GUARD_BENCH_BASELINE: {} does not exist",
                p.display()
            );
            p
        };
        let status = exe("status");
        let statusline = Command::new(&status)
            .arg("--statusline")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Build {
            label: label.to_string(),
            guard: exe("guard"),
            status,
            statusline,
        }
    }
}

fn run_call(build: &Build, call: &Call, env: &[(&str, &str)]) -> Duration {
    match call {
        Call::Guard(p) => run_once(&build.guard, &[], p, env),
        Call::Statusline(_) if !build.statusline => Duration::ZERO,
        Call::Statusline(input) => run_once(&build.status, &["--statusline"], input, env),
        Call::Tool(name, args) => {
            let program = build.tool(name);
            let start = Instant::now();
            let status = Command::new(program)
                .args(args)
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn");
            let took = start.elapsed();
            assert!(status.success(), "{program:?} failed: {status}");
            took
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A median over the floor, `n/a` when the build has no such command.
fn over_text(o: f64) -> String {
    if o.is_nan() {
        "n/a".into()
    } else {
        format!("+{o:.3}")
    }
}

/// One build's runs on its own beds: `times[scale][payload]`.
struct Series {
    build: Build,
    beds: Vec<Bed>,
    calls: Vec<Vec<(String, Call)>>,
    times: Vec<Vec<Vec<Duration>>>,
}

impl Series {
    /// `build` on beds whose `session-lock/config.json` is `config`.
    fn new(build: Build, scales: &[usize], config: &str) -> Series {
        let beds: Vec<Bed> = scales.iter().map(|n| bed(*n, config)).collect();
        let calls: Vec<Vec<(String, Call)>> = beds
            .iter()
            .zip(scales)
            .map(|(b, n)| payloads(b, *n))
            .collect();
        let times = vec![vec![Vec::new(); calls[0].len()]; scales.len()];
        let s = Series {
            build,
            beds,
            calls,
            times,
        };
        // Warm the page cache, record the bench session's claim, build each round index, and
        // check each call runs.
        for (i, set) in s.calls.iter().enumerate() {
            for (_, c) in set.iter().rev() {
                run_call(&s.build, c, &s.env(i));
            }
        }
        s
    }

    fn env(&self, scale: usize) -> [(&str, &str); 1] {
        [("SESSION_LOCK_HOME", self.beds[scale].home.as_str())]
    }

    fn run_round(&mut self) {
        for s in 0..self.calls.len() {
            for i in 0..self.calls[s].len() {
                let took = run_call(&self.build, &self.calls[s][i].1, &self.env(s));
                self.times[s][i].push(took);
            }
        }
    }

    /// Median over the floor, per payload and scale: `over[payload][scale]`.
    fn over(&self, floor: Duration) -> Vec<Vec<f64>> {
        (0..self.calls[0].len())
            .map(|i| {
                self.times
                    .iter()
                    .map(|scale| match median(scale[i].clone()) {
                        // Not measured: the build has no such command.
                        Duration::ZERO => f64::NAN,
                        m => ms(m) - ms(floor),
                    })
                    .collect()
            })
            .collect()
    }

    fn keep(self, scales: &[usize]) {
        for (s, set) in self.calls.iter().enumerate() {
            for (i, (name, c)) in set.iter().enumerate() {
                if let Call::Guard(p) = c {
                    let file = self.beds[s].repo.join(format!("../payload-{i}.json"));
                    std::fs::write(&file, p).expect("write payload");
                    eprintln!("{} locks, '{name}': {}", scales[s], file.display());
                }
            }
        }
        for b in self.beds {
            eprintln!("bench repo kept at {}", b._dir.keep().display());
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists benches; nothing to list here
    }
    let runs: usize = std::env::var("GUARD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let floor = Path::new("/bin/true");
    let scales = [5usize, 50, 200];
    let this = Build {
        label: "this build".into(),
        guard: env!("CARGO_BIN_EXE_guard").into(),
        status: env!("CARGO_BIN_EXE_status").into(),
        statusline: true,
    };
    // The same build with the kernel floor's stage switched off: the stage's own cost (the
    // denied set computed, the rewrite written) is the difference, measured in the same run.
    let floor_off = Build {
        label: "this build, floor off".into(),
        ..this.clone()
    };
    let mut series = vec![
        Series::new(this, &scales, "{}"),
        Series::new(floor_off, &scales, r#"{"floor": "off"}"#),
    ];
    if let Some(dir) = std::env::var_os("GUARD_BENCH_BASELINE").filter(|d| !d.is_empty()) {
        let dir = Path::new(&dir);
        let label = format!("baseline {}", dir.display());
        series.push(Series::new(Build::from_dir(&label, dir), &scales, "{}"));
    }
    let names: Vec<String> = series[0].calls[0].iter().map(|(n, _)| n.clone()).collect();
    let mut floor_times = Vec::new();
    // Interleave so machine noise hits every series alike.
    for _ in 0..runs {
        floor_times.push(run_once(floor, &[], b"", &[]));
        for s in &mut series {
            s.run_round();
        }
    }
    let floor_med = median(floor_times);
    let over: Vec<Vec<Vec<f64>>> = series.iter().map(|s| s.over(floor_med)).collect();
    println!(
        "guard per call, {runs} runs each, medians in ms; {PLANS} plans; this build {LINKED}; spawn floor /bin/true {:.3} ms",
        ms(floor_med)
    );
    print!("{:<28}", "payload (over the floor)");
    for n in scales {
        print!(" {:>10}", format!("{n} locks"));
    }
    println!(" {:>12}", "200 vs 5");
    for (i, name) in names.iter().enumerate() {
        print!("{name:<28}");
        let row = &over[0][i];
        for o in row {
            print!(" {:>10}", over_text(*o));
        }
        println!(" {:>12}", format!("{:+.3}", row[row.len() - 1] - row[0]));
    }
    for (k, base) in over.iter().enumerate().skip(1) {
        println!();
        println!(
            "side by side, over the floor: this build / {}",
            series[k].build.label
        );
        print!("{:<28}", "payload");
        for n in scales {
            print!(" {:>18}", format!("{n} locks"));
        }
        println!();
        for (i, name) in names.iter().enumerate() {
            print!("{name:<28}");
            for (o, b) in over[0][i].iter().zip(&base[i]) {
                print!(" {:>18}", format!("{} / {}", over_text(*o), over_text(*b)));
            }
            println!();
        }
    }
    if std::env::var_os("GUARD_BENCH_KEEP").is_some() {
        for s in series {
            s.keep(&scales);
        }
    }
}
