//! What `run-agent` adds over a bare `claude -p`: the same one-turn question to the same fake
//! model on 127.0.0.1, asked alternately by both (interleaved, so load drifts hit both alike),
//! medians compared. The bare run is what run-agent itself spawns (`-p --output-format
//! stream-json --verbose --model sonnet --permission-mode bypassPermissions`, the prompt on
//! stdin); run-agent adds its own start, option checks, the registry entry, the stream fold and
//! the end-of-turn process sweep. The CLI's own start and turn vary by tens of milliseconds from
//! run to run, so a second pair of lanes measures run-agent alone: a stand-in CLI (a shell
//! script that reads its stdin and prints the init and result events) run bare and through
//! run-agent.
//!
//! Needs the Claude Code CLI (`SESSION_LOCK_CLAUDE_BIN`, `PATH` or the pinned cache of
//! `scripts/install-claude-cli`); without it the bench says so and does nothing. Run:
//! `cargo bench --bench run_agent` (`RUN_AGENT_BENCH_RUNS` sets the pairs, default 12).

// The fake model of the integration tests, reused as it is.
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/support"]
mod support {
    pub mod fake_model;
    pub mod http;
}

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUN_AGENT: &str = env!("CARGO_BIN_EXE_run-agent");
const PROMPT: &str = "Say done.";

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The environment both runs share: a fresh HOME, the fake model, nothing inherited from a
/// surrounding session.
fn env(cmd: &mut Command, home: &Path, base_url: &str) {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CLAUDE") || k.starts_with("ANTHROPIC_") || k == "AI_AGENT" {
            cmd.env_remove(&key);
        }
    }
    cmd.env("HOME", home)
        .env("SESSION_LOCK_HOME", home.join("state"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
}

fn bare(claude: &Path, home: &Path, cwd: &Path, base_url: &str) -> Duration {
    let mut cmd = Command::new(claude);
    cmd.args(["-p", "--output-format", "stream-json", "--verbose"])
        .args([
            "--model",
            "sonnet",
            "--permission-mode",
            "bypassPermissions",
        ])
        .current_dir(cwd)
        .stdin(Stdio::piped());
    env(&mut cmd, home, base_url);
    if session_lock::agent::contract::running_as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("claude starts");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(PROMPT.as_bytes()).expect("prompt written");
    }
    let out = child.wait_with_output().expect("claude ends");
    let took = t0.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("\"is_error\":false"),
        "bare claude -p failed: {text}"
    );
    took
}

/// The stand-in CLI: reads the prompt, prints a turn's first and last stream-json events.
const STAND_IN: &str = "#!/bin/sh\ncat >/dev/null\n\
echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"}'\n\
echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"}'\n";

fn wrapped(claude: &Path, home: &Path, cwd: &Path, base_url: &str) -> Duration {
    let mut cmd = Command::new(RUN_AGENT);
    cmd.arg("--cwd")
        .arg(cwd)
        .args(["--prompt", PROMPT])
        .env("SESSION_LOCK_CLAUDE_BIN", claude)
        .stdin(Stdio::null());
    env(&mut cmd, home, base_url);
    cmd.env("SESSION_LOCK_CLAUDE_BIN", claude);
    let t0 = Instant::now();
    let out = cmd.output().expect("run-agent runs");
    let took = t0.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("\"ok\":true"),
        "run-agent failed: {text}"
    );
    took
}

fn main() {
    let claude = match session_lock::agent::locate::claude_bin(None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("run_agent bench skipped: {e}");
            return;
        }
    };
    let runs: usize = std::env::var("RUN_AGENT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(12);
    // An empty script: the fake model answers every question with "done".
    let model = support::fake_model::FakeModel::start(Vec::new());
    let base_url = model.base_url();
    let home = tempfile::tempdir().expect("home");
    let cwd = tempfile::tempdir().expect("cwd");
    // One of each first, unmeasured: the CLI's first start warms caches.
    bare(&claude, home.path(), cwd.path(), &base_url);
    wrapped(&claude, home.path(), cwd.path(), &base_url);
    let (h, c, u) = (home.path(), cwd.path(), base_url.as_str());
    let (mut plain, mut ours) = pairs(runs, &claude, h, c, u);
    // The stand-in, bare and wrapped, interleaved the same way.
    let stand_in = home.path().join("stand-in-claude");
    std::fs::write(&stand_in, STAND_IN).expect("stand-in written");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755))
            .expect("stand-in made executable");
    }
    let (mut plain_s, mut ours_s) = pairs(runs * 2, &stand_in, h, c, u);
    println!("run_agent bench: {runs} interleaved pairs, one turn each, same fake model");
    report("bare claude -p", &mut plain, "run-agent", &mut ours);
    println!(
        "and {} pairs with a stand-in CLI (run-agent's own cost)",
        runs * 2
    );
    report("bare stand-in", &mut plain_s, "run-agent", &mut ours_s);
}

/// `runs` turns of `claude` bare and through run-agent, alternating which goes first so neither
/// always follows the other: the bare times and run-agent's.
fn pairs(
    runs: usize,
    claude: &Path,
    home: &Path,
    cwd: &Path,
    base_url: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut plain, mut ours) = (Vec::new(), Vec::new());
    for i in 0..runs {
        if i % 2 == 0 {
            plain.push(bare(claude, home, cwd, base_url));
            ours.push(wrapped(claude, home, cwd, base_url));
        } else {
            ours.push(wrapped(claude, home, cwd, base_url));
            plain.push(bare(claude, home, cwd, base_url));
        }
    }
    (plain, ours)
}

fn report(base: &str, plain: &mut [Duration], ours_name: &str, ours: &mut [Duration]) {
    let (p, o) = (median(plain), median(ours));
    let overhead = o.as_secs_f64() - p.as_secs_f64();
    println!("  {base:<20} median {}", ms(p));
    println!("  {ours_name:<20} median {}", ms(o));
    println!(
        "  overhead             {:+.1} ms ({:+.1} %)",
        overhead * 1000.0,
        overhead / p.as_secs_f64() * 100.0
    );
}
