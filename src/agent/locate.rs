//! Where the executables of a run are: the Claude Code CLI, and the suite's own `guard` (contract
//! hooks) and `run-agent` (the MCP proxy).

use super::options::{Failure, Problem};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Names the Claude Code executable; when set it must exist (no fallback).
pub const CLAUDE_BIN_ENV: &str = "SESSION_LOCK_CLAUDE_BIN";
/// Names the `guard` executable.
pub const GUARD_BIN_ENV: &str = "SESSION_LOCK_GUARD_BIN";
/// Names the `run-agent` executable.
pub const RUN_AGENT_BIN_ENV: &str = "SESSION_LOCK_RUN_AGENT_BIN";

fn not_found(msg: String) -> Problem {
    Problem::new(Failure::NotFound, msg)
}

fn exe_names(name: &str) -> Vec<String> {
    if cfg!(windows) {
        vec![
            format!("{name}.exe"),
            format!("{name}.cmd"),
            name.to_string(),
        ]
    } else {
        vec![name.to_string()]
    }
}

/// `name` on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        exe_names(name)
            .into_iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
    })
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn must_exist(p: PathBuf, how: &str) -> Result<PathBuf, Problem> {
    if p.is_file() {
        Ok(p)
    } else {
        Err(not_found(format!("{how} {} does not exist", p.display())))
    }
}

/// The CLI: `explicit`, else `SESSION_LOCK_CLAUDE_BIN`, else `claude` on `PATH`.
pub fn claude_bin(explicit: Option<&str>) -> Result<PathBuf, Problem> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return must_exist(PathBuf::from(p), "claude executable");
    }
    if let Some(p) = env_path(CLAUDE_BIN_ENV) {
        return must_exist(p, &format!("{CLAUDE_BIN_ENV}="));
    }
    on_path("claude").ok_or_else(|| {
        not_found(format!(
            "claude CLI not found: not on PATH and {CLAUDE_BIN_ENV} is not set"
        ))
    })
}

/// One of the suite's executables: `explicit`, else `env_var`, else next to the running one.
pub fn suite_bin(name: &str, explicit: Option<&str>, env_var: &str) -> Result<PathBuf, Problem> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return must_exist(PathBuf::from(p), &format!("{name} executable"));
    }
    if let Some(p) = env_path(env_var) {
        return must_exist(p, &format!("{env_var}="));
    }
    let here = std::env::current_exe().map_err(|e| {
        not_found(format!(
            "{name} not found: cannot locate this executable: {e}"
        ))
    })?;
    let dir = here.parent().unwrap_or(Path::new("."));
    exe_names(name)
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            not_found(format!(
                "{name} not found next to {} (set {env_var})",
                here.display()
            ))
        })
}

/// The first line `<bin> --version` prints, within 20 seconds.
pub fn version(bin: &Path) -> Result<String, String> {
    let mut child = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {} --version: {e}", bin.display()))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} --version did not answer", bin.display()));
            }
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{} --version: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match (out.status.success(), text.lines().next().map(str::trim)) {
        (true, Some(line)) if !line.is_empty() => Ok(line.to_string()),
        _ => Err(format!(
            "{} --version failed ({})",
            bin.display(),
            out.status
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_path_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("claude");
        let e = claude_bin(Some(&missing.to_string_lossy())).unwrap_err();
        assert_eq!(e.failure, Failure::NotFound);
        assert!(e.message.contains("does not exist"));
        std::fs::write(&missing, "").unwrap();
        assert_eq!(
            claude_bin(Some(&missing.to_string_lossy())).unwrap(),
            missing
        );
        let e = suite_bin(
            "guard",
            Some(&dir.path().join("g").to_string_lossy()),
            GUARD_BIN_ENV,
        )
        .unwrap_err();
        assert!(e.message.contains("guard executable"));
    }
}
