//! Running the real Gemini CLI headless (`gemini -p`) against a [`FakeModel`]
//! speaking [`Wire::Gemini`](super::fake_model::Wire), through the same runner as
//! Claude Code ([`SessionBuilder`]).
//!
//! **Where the CLI comes from**: `SESSION_LOCK_GEMINI_BIN`, else the cache entry
//! of `scripts/install-gemini-cli` for the version in
//! `scripts/gemini-cli-version`, else `gemini` on `PATH` ([`GEMINI_CLI`]).
//!
//! **Each session** runs `gemini -m gemini-2.5-pro --yolo --output-format
//! stream-json [extra args] -p <prompt>` with `GEMINI_CLI_HOME=<HOME>`,
//! `GEMINI_API_KEY=fake-key`, `GOOGLE_GEMINI_BASE_URL` the fake model, and
//! (unless [`SessionBuilder::bypass_trust`]`(false)`)
//! `GEMINI_CLI_TRUST_WORKSPACE=true`: the folder counts as trusted from the
//! start, so the project's `.gemini/settings.json` (and its hooks) is read.
//! `--skip-trust` would not do: the CLI reads that flag after it loaded the
//! settings, so a run with it starts but ignores the project's hooks. `<HOME>/.gemini/settings.json` holds
//! the API-key auth type (without it the CLI picks its gateway auth because the
//! base URL is set, and exits 41), usage statistics off and update checks off;
//! [`SessionBuilder::config`] merges JSON objects into it (top-level keys, one
//! level deep).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::claude::{Parts, Pinned};

/// The model the sessions ask for.
pub const MODEL: &str = "gemini-2.5-pro";

/// A session's timeout unless set: the CLI loads a large Node bundle twice (it
/// relaunches itself), several seconds each on a busy machine.
pub const TIMEOUT: Duration = Duration::from_secs(120);

pub const GEMINI_CLI: Pinned = Pinned {
    what: "Gemini CLI",
    env: "SESSION_LOCK_GEMINI_BIN",
    cache: "gemini",
    version: include_str!("../../../scripts/gemini-cli-version"),
    bin: "gemini",
    script: "scripts/install-gemini-cli",
};

/// Skips (or under CI fails) the calling test when Gemini CLI is missing;
/// otherwise evaluates to its [`Cli`](super::claude::Cli).
macro_rules! require_gemini {
    () => {
        $crate::support::claude::require_cli!(
            $crate::support::gemini::GEMINI_CLI,
            $crate::support::claude::CliKind::Gemini
        )
    };
}
pub(crate) use require_gemini;

/// `<HOME>/.gemini`, the CLI's user folder for a session whose HOME is `home`.
pub fn gemini_dir(home: &Path) -> PathBuf {
    home.join(".gemini")
}

/// Gemini's command line and environment for one session (see the module doc).
pub(crate) fn command(cmd: &mut Command, home: &Path, parts: &Parts<'_>) {
    write_settings(&gemini_dir(home), parts.config);
    cmd.args(["-m", MODEL, "--yolo", "--output-format", "stream-json"]);
    if parts.bypass_trust {
        cmd.env("GEMINI_CLI_TRUST_WORKSPACE", "true");
    }
    cmd.args(parts.args).arg("-p").arg(parts.prompt);
    cmd.env("GEMINI_CLI_HOME", home)
        .env("GEMINI_API_KEY", "fake-key")
        .env("GOOGLE_GEMINI_BASE_URL", parts.base_url);
}

/// `settings.json`: what is there, the test bed's defaults where unset, then
/// each piece of `config` merged in; replaced in one rename (sessions sharing a
/// HOME write it at once).
#[track_caller]
fn write_settings(dir: &Path, config: &[String]) {
    let path = dir.join("settings.json");
    let mut settings: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| {
            json!({
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": false},
                "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
            })
        });
    for piece in config {
        let piece: Value = serde_json::from_str(piece)
            .unwrap_or_else(|e| panic!("Gemini config {piece:?} is not JSON: {e}"));
        merge(&mut settings, piece);
    }
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .unwrap_or_else(|e| panic!("cannot create a file in {}: {e}", dir.display()));
    std::io::Write::write_all(&mut temp, settings.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    temp.persist(&path)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// `piece`'s keys into `into`: an object merged into an object one level down,
/// anything else replaced.
fn merge(into: &mut Value, piece: Value) {
    let (Some(into), Value::Object(piece)) = (into.as_object_mut(), piece) else {
        return;
    };
    for (key, value) in piece {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}
