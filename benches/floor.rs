//! The write floor's added cost per shell command, as the client's Bash tool pays it: the
//! client runs `bash -c '… eval <command> && pwd -P >| <file>'`; with the floor, `<command>` is
//! the wrapper (`guard floor` → the mechanism → `bash -c`, then `guard floor --take-cwd`).
//! The plain form and the wrapped forms (bubblewrap, Landlock) run interleaved in one run;
//! medians, p90s and the added cost are printed. Goal: ≤ 1.5 ms median added, 3 ms at most.
//! Run: `cargo bench --bench floor` (`FLOOR_BENCH_RUNS`, default 200).

use session_lock::floor::{Denied, DeniedSet, Owner, mechanism, run};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn client(command: &str, dir: &Path, cwd_file: &Path, mech: &str) -> Duration {
    let outer = format!(
        "eval {} && pwd -P >| {}",
        session_lock::shell::word::quote_posix(command),
        session_lock::shell::word::quote_posix(&cwd_file.to_string_lossy())
    );
    let start = Instant::now();
    let status = Command::new("/bin/bash")
        .args(["-c", &outer])
        .current_dir(dir)
        .env(mechanism::CHOOSE_VAR, mech)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bash");
    let took = start.elapsed();
    assert!(status.success(), "{command}: {status}");
    took
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(v[v.len() * 9 / 10]))
}

fn main() {
    let runs: usize = std::env::var("FLOOR_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let guard = Path::new(env!("CARGO_BIN_EXE_guard"));
    // Outside temp and home folders, so that Landlock denies it too.
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tempfile::tempdir_in(&base).expect("tempdir");
    let repo = dir.path().join("repo");
    for d in ["src/api", "src/web", "session-lock", "other"] {
        std::fs::create_dir_all(repo.join(d)).unwrap();
    }
    let cwd_file = dir.path().join("cwd");
    let deny = |n: usize| DeniedSet {
        denied: ["src/api", "session-lock", "other"]
            .iter()
            .cycle()
            .take(n)
            .map(|d| Denied {
                path: repo.join(d),
                owner: Owner::Stream("api".into()),
            })
            .collect(),
        ..DeniedSet::default()
    };
    let mut forms: Vec<(String, String, &str)> = vec![("plain".into(), "true".into(), "")];
    for (name, mech) in [("bubblewrap", "bubblewrap"), ("landlock", "landlock")] {
        let ok = match mech {
            "bubblewrap" => mechanism::available(None) == Ok(mechanism::Kind::Bubblewrap),
            _ => mechanism::landlock_abi().is_ok(),
        };
        if !ok {
            println!("{name}: not available here, not measured");
            continue;
        }
        let n = 3;
        forms.push((
            format!("{name}, {n} denied"),
            run::wrapper(guard, &repo, &deny(n), "true"),
            mech,
        ));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); forms.len()];
    for _ in 0..runs {
        for (i, (_, cmd, mech)) in forms.iter().enumerate() {
            times[i].push(client(cmd, &repo, &cwd_file, mech));
        }
    }
    let (base_median, _) = stats(times[0].clone());
    println!("{runs} runs each, interleaved; ms");
    println!("{:<24} {:>8} {:>8} {:>8}", "form", "median", "p90", "added");
    for ((name, _, _), t) in forms.iter().zip(times) {
        let (m, p) = stats(t);
        println!("{name:<24} {m:>8.2} {p:>8.2} {:>+8.2}", m - base_median);
    }
}
