//! Where the executables of a run are: the Claude Code CLI, and the suite's own `guard` (contract
//! hooks) and `run-agent` (the MCP proxy).

use super::options::{Failure, Problem};
use crate::platform::{Env, Host};
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

/// The first file in `dir` named like an executable `name`.
fn exe_in(host: &Host<impl Env>, dir: &Path, name: &str) -> Option<PathBuf> {
    host.exe_names(name)
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// `name` on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    on_path_of(&crate::platform::this(), name)
}

fn on_path_of(host: &Host<impl Env>, name: &str) -> Option<PathBuf> {
    let path = host.var("PATH")?;
    std::env::split_paths(&path).find_map(|dir| exe_in(host, &dir, name))
}

/// `p` when it is a file; else "`<named>` does not exist", where `named` says how `p` was named
/// (`claude executable /x`, `SESSION_LOCK_CLAUDE_BIN=/x`).
fn must_exist(p: PathBuf, named: String) -> Result<PathBuf, Problem> {
    if p.is_file() {
        Ok(p)
    } else {
        Err(not_found(format!("{named} does not exist")))
    }
}

/// The version of the Claude Code CLI that `scripts/install-claude-cli` installs.
pub const PINNED_CLAUDE_VERSION: &str = include_str!("../../scripts/claude-cli-version");

/// Where `scripts/install-claude-cli` puts the pinned CLI:
/// `${SESSION_LOCK_CACHE:-$HOME/.cache/session-lock}/claude-code-<version>/node_modules/.bin/claude`.
pub fn pinned_claude() -> Option<PathBuf> {
    pinned_claude_of(&crate::platform::this())
}

fn pinned_claude_of(host: &Host<impl Env>) -> Option<PathBuf> {
    let root = host
        .path_var("SESSION_LOCK_CACHE")
        .or_else(|| host.home().map(|h| h.join(".cache/session-lock")))?;
    let dir = root
        .join(format!("claude-code-{}", PINNED_CLAUDE_VERSION.trim()))
        .join("node_modules/.bin");
    exe_in(host, &dir, "claude").or_else(|| Some(dir.join("claude")))
}

/// One place the CLI was looked for, and whether it was there.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Looked {
    /// `--claude-bin`, `SESSION_LOCK_CLAUDE_BIN`, `PATH`, `pinned cache`, `client install`.
    pub place: String,
    /// The path tried (`None` for PATH when `claude` is not on it).
    pub path: Option<String>,
    pub found: bool,
}

/// Where the CLI is, in order, stopping at the first that names one: `explicit`, else
/// `SESSION_LOCK_CLAUDE_BIN` (when set it must exist: no fallback), else `claude` on `PATH`, else
/// the pinned CLI in the cache of `scripts/install-claude-cli`, else where the client's own
/// installers put it ([`crate::platform::Host::claude_install_dirs`]). Also says where it looked.
pub fn find_claude(explicit: Option<&str>) -> (Result<PathBuf, Problem>, Vec<Looked>) {
    find_claude_of(&crate::platform::this(), explicit)
}

fn find_claude_of(
    host: &Host<impl Env>,
    explicit: Option<&str>,
) -> (Result<PathBuf, Problem>, Vec<Looked>) {
    let mut looked = Vec::new();
    let mut note = |place: &str, p: Option<&Path>, found: bool| {
        looked.push(Looked {
            place: place.into(),
            path: p.map(|p| p.display().to_string()),
            found,
        })
    };
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        note("--claude-bin", Some(&p), p.is_file());
        let named = format!("claude executable {}", p.display());
        return (must_exist(p, named), looked);
    }
    if let Some(p) = host.path_var(CLAUDE_BIN_ENV) {
        note(CLAUDE_BIN_ENV, Some(&p), p.is_file());
        let named = format!("{CLAUDE_BIN_ENV}={}", p.display());
        return (must_exist(p, named), looked);
    }
    if let Some(p) = on_path_of(host, "claude") {
        note("PATH", Some(&p), true);
        return (Ok(p), looked);
    }
    note("PATH", None, false);
    let pinned = pinned_claude_of(host);
    match pinned {
        Some(p) if p.is_file() => {
            note("pinned cache", Some(&p), true);
            return (Ok(p), looked);
        }
        _ => note("pinned cache", pinned.as_deref(), false),
    }
    for dir in host.claude_install_dirs() {
        if let Some(p) = exe_in(host, &dir, "claude") {
            note("client install", Some(&p), true);
            return (Ok(p), looked);
        }
        note("client install", Some(&dir.join("claude")), false);
    }
    let problem = not_found(format!(
        "claude CLI not found: {CLAUDE_BIN_ENV} is not set, not on PATH, not in the pinned \
         cache{} and not where the client's installers put it (scripts/install-claude-cli \
         installs it)",
        pinned
            .map(|p| format!(" {}", p.display()))
            .unwrap_or_default()
    ));
    (Err(problem), looked)
}

/// The CLI (see [`find_claude`]).
pub fn claude_bin(explicit: Option<&str>) -> Result<PathBuf, Problem> {
    find_claude(explicit).0
}

/// One of the suite's executables: `explicit`, else `env_var`, else next to the running one.
pub fn suite_bin(name: &str, explicit: Option<&str>, env_var: &str) -> Result<PathBuf, Problem> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        let named = format!("{name} executable {p}");
        return must_exist(PathBuf::from(p), named);
    }
    let host = crate::platform::this();
    if let Some(p) = host.path_var(env_var) {
        let named = format!("{env_var}={}", p.display());
        return must_exist(p, named);
    }
    let here = std::env::current_exe().map_err(|e| {
        not_found(format!(
            "{name} not found: cannot locate this executable: {e}"
        ))
    })?;
    let dir = here.parent().unwrap_or(Path::new("."));
    exe_in(&host, dir, name).ok_or_else(|| {
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

    #[test]
    fn an_explicit_path_is_the_only_place_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope-claude");
        let (r, looked) = find_claude(Some(&missing.to_string_lossy()));
        let e = r.unwrap_err();
        assert_eq!(
            e.message,
            format!("claude executable {} does not exist", missing.display())
        );
        assert_eq!(looked.len(), 1);
        assert!(!looked[0].found);
    }

    /// With nothing on PATH, no SESSION_LOCK_CLAUDE_BIN and an empty cache, the client's own
    /// installer's `~/.local/bin/claude` is found; without it, the answer names every place.
    #[test]
    fn the_client_s_own_install_is_found_when_nothing_else_names_it() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().to_path_buf();
        let host = Host::new(crate::platform::Os::Linux, move |name: &str| {
            (name == "HOME").then(|| h.clone().into_os_string())
        });
        let bin = home.path().join(".local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("claude"), "").unwrap();
        let (found, looked) = find_claude_of(&host, None);
        assert_eq!(found.unwrap(), bin.join("claude"));
        let places: Vec<(&str, bool)> =
            looked.iter().map(|l| (l.place.as_str(), l.found)).collect();
        assert_eq!(
            places,
            [
                ("PATH", false),
                ("pinned cache", false),
                ("client install", true)
            ]
        );

        std::fs::remove_file(bin.join("claude")).unwrap();
        let (found, looked) = find_claude_of(&host, None);
        let e = found.unwrap_err();
        assert_eq!(e.failure, Failure::NotFound);
        assert!(
            e.message
                .contains("not where the client's installers put it"),
            "{}",
            e.message
        );
        // Compared as paths: on Windows `/` and `\\` part the same names.
        let installs: Vec<&Path> = looked
            .iter()
            .filter(|l| l.place == "client install" && !l.found)
            .filter_map(|l| l.path.as_deref().map(Path::new))
            .collect();
        assert_eq!(
            installs,
            [bin.join("claude"), home.path().join(".claude/local/claude")]
        );
    }

    #[test]
    fn the_pinned_cache_is_where_the_install_script_puts_it() {
        let version = PINNED_CLAUDE_VERSION.trim();
        assert!(!version.is_empty() && !version.contains('\n'));
        if let Some(p) = pinned_claude() {
            let text = p.to_string_lossy().replace('\\', "/");
            assert!(
                text.ends_with(&format!("claude-code-{version}/node_modules/.bin/claude"))
                    || text.contains(&format!("claude-code-{version}/node_modules/.bin/claude.")),
                "{text}"
            );
        }
    }
}
