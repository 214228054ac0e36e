//! Running the real Codex CLI headless (`codex exec`) against a [`FakeModel`]
//! speaking [`Wire::Responses`], through the same runner as Claude Code
//! ([`SessionBuilder`], [`Session`](super::claude::Session), [`Finished`](super::claude::Finished)).
//!
//! ```ignore
//! let codex = require_codex!();
//! let model = FakeModel::start_as(Wire::Responses, vec![
//!     Turn::tool_use("exec_command", json!({"cmd": "echo hi"})),
//!     Turn::text("ok"),
//! ]);
//! let run = codex.session(repo.path(), &model, "say hi").run();
//! ```
//!
//! **Where the CLI comes from**: `SESSION_LOCK_CODEX_BIN`, else the cache entry of
//! `scripts/install-codex-cli` for the version in `scripts/codex-cli-version`,
//! else `codex` on `PATH` ([`CODEX_CLI`]; missing: skipped, or failed under CI).
//!
//! **Each session** runs `codex exec --json --skip-git-repo-check -m gpt-5.5
//! --dangerously-bypass-approvals-and-sandbox [--dangerously-bypass-hook-trust
//! --trust] [extra args] <prompt>` with `CODEX_HOME=<HOME>/.codex`. The model
//! `gpt-5.5` is one of the binary's bundled slugs, so the request offers
//! `apply_patch` (as a freeform tool) besides `exec_command`. The fake model is a
//! model provider given on the command line (`-c model_providers.fake.…`, the
//! key read from `FAKE_OPENAI_KEY`), so sessions sharing a HOME may talk to
//! different servers; `request_max_retries` and `stream_max_retries` are the
//! builder's `max_retries` (0). `allow_login_shell=false`: the model's commands run in
//! `bash -c`, not a login shell, which would take PATH from the system's profile and lose
//! the suite's tools the test put on it. [`SessionBuilder::config`] appends TOML to
//! `$CODEX_HOME/config.toml`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::claude::{Parts, Pinned};

/// The model the sessions ask for: a slug of the bundled catalog.
pub const MODEL: &str = "gpt-5.5";

pub const CODEX_CLI: Pinned = Pinned {
    what: "Codex CLI",
    env: "SESSION_LOCK_CODEX_BIN",
    cache: "codex",
    version: include_str!("../../../scripts/codex-cli-version"),
    bin: "codex",
    script: "scripts/install-codex-cli",
};

/// Skips (or under CI fails) the calling test when Codex CLI is missing;
/// otherwise evaluates to its [`Cli`](super::claude::Cli).
macro_rules! require_codex {
    () => {
        $crate::support::claude::require_cli!(
            $crate::support::codex::CODEX_CLI,
            $crate::support::claude::CliKind::Codex
        )
    };
}
pub(crate) use require_codex;

/// `$CODEX_HOME` for a session whose HOME is `home`.
pub fn codex_home(home: &Path) -> PathBuf {
    home.join(".codex")
}

/// Codex's command line and environment for one session (see the module doc).
pub(crate) fn command(cmd: &mut Command, home: &Path, parts: &Parts<'_>) {
    let codex_home = codex_home(home);
    append_config(&codex_home, parts.config);
    let provider = [
        "model_provider=\"fake\"".to_string(),
        "model_providers.fake.name=\"fake\"".to_string(),
        format!("model_providers.fake.base_url=\"{}/v1\"", parts.base_url),
        "model_providers.fake.wire_api=\"responses\"".to_string(),
        "model_providers.fake.env_key=\"FAKE_OPENAI_KEY\"".to_string(),
        format!(
            "model_providers.fake.request_max_retries={}",
            parts.max_retries
        ),
        format!(
            "model_providers.fake.stream_max_retries={}",
            parts.max_retries
        ),
        "check_for_update_on_startup=false".to_string(),
        // A login shell would take PATH from the system's profile, not the test's.
        "allow_login_shell=false".to_string(),
    ];
    cmd.arg("exec");
    for setting in provider {
        cmd.arg("-c").arg(setting);
    }
    cmd.args(["--json", "--skip-git-repo-check", "-m", MODEL])
        .arg("--dangerously-bypass-approvals-and-sandbox");
    if parts.bypass_trust {
        cmd.args(["--dangerously-bypass-hook-trust", "--trust"]);
    }
    cmd.args(parts.args).arg(parts.prompt);
    cmd.env("CODEX_HOME", &codex_home)
        .env("FAKE_OPENAI_KEY", "sk-fake");
}

/// Appends `config` (TOML pieces) to `$CODEX_HOME/config.toml`.
#[track_caller]
fn append_config(codex_home: &Path, config: &[String]) {
    std::fs::create_dir_all(codex_home)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", codex_home.display()));
    if config.is_empty() {
        return;
    }
    let path = codex_home.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    for piece in config {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(piece);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
