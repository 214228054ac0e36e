//! `scripts/setup`: it shows cargo's progress while it builds (issue 30: 3.5 minutes of
//! nothing), then wires the repo it is given. A stand-in `cargo` first on PATH plays the build
//! (it prints what cargo prints and installs this build's binaries where it is told), so the
//! script itself runs as it does for a person, without a second build of the suite.

use crate::support::lifecycle::{Repo, bin, text};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const SETUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup");

#[test]
fn setup_shows_cargos_progress_and_wires_the_repo() {
    let repo = Repo::new();
    let tools = repo.base.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let args_file = repo.base.join("cargo-args");
    let suite = Path::new(bin("guard")).parent().unwrap();
    let cargo = format!(
        r#"#!/bin/sh
printf '%s\n' "$@" > '{args}'
root=
while [ $# -gt 0 ]; do [ "$1" = --root ] && root=$2; shift; done
echo '   Compiling session-lock v0.1.0' >&2
mkdir -p "$root/bin"
for t in guard claim release status wait-milestone build-renderer reload-plugin run-agent send-message; do
  cp '{suite}'/$t "$root/bin/$t"
done
echo '    Finished `release` profile [optimized] target(s)' >&2
"#,
        args = args_file.display(),
        suite = suite.display()
    );
    let stand_in = tools.join("cargo");
    std::fs::write(&stand_in, cargo).unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = repo.base.join("prefix");
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(SETUP)
        .arg(&repo.root)
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env("SESSION_LOCK_PREFIX", &prefix)
        .env("SESSION_LOCK_HOME", &repo.home)
        .output()
        .unwrap();
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{so}{se}");
    assert!(so.contains("cargo's progress follows"), "{so}");
    assert!(
        se.contains("Compiling session-lock") && se.contains("Finished"),
        "cargo's own lines reach the person: {se}"
    );
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(args.lines().next() == Some("install"), "{args}");
    assert!(!args.lines().any(|a| a == "--quiet" || a == "-q"), "{args}");
    assert!(so.contains("hooks run: "), "the repo was wired: {so}");
    assert!(repo.exists(".claude/settings.json"));
}
