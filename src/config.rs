//! `session-lock/config.json` (optional, committed): the app-specific parts of the protocol.
//! Every key has the protocol's default, so a repo without the file behaves as the protocol
//! describes. Unknown keys and wrong types are errors that name the key.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Whether shell commands run under the kernel write floor (src/floor) while other streams are
/// live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FloorMode {
    /// Under the floor where this machine has a mechanism; elsewhere the analysis alone,
    /// said once per session.
    #[default]
    Auto,
    /// Under the floor, or not at all: without a mechanism shell commands are blocked.
    Required,
    /// Never: the guard's analysis alone.
    Off,
}

/// Where the guard puts its decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DecisionForm {
    /// `{"hookSpecificOutput":{"permissionDecision":"deny",…}}` on stdout, exit 0. The model sees
    /// only the reason.
    #[default]
    Json,
    /// The reason on stderr, exit 2 (the client also shows the model the hook's command line).
    Exit2,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Config {
    /// A lock whose heartbeat is older than this stops protecting its files and can be claimed.
    pub heartbeat_stale_minutes: u64,
    /// `status --wait` counts a lock this stale as finished (end of round).
    pub round_stale_minutes: u64,
    /// `wait-milestone` without `--stream` refuses waits longer than this.
    pub wait_limit_minutes: u64,
    /// The guard rewrites a lock's heartbeat at most this often.
    pub heartbeat_throttle_seconds: u64,
    /// How often waiting tools look again.
    pub poll_seconds: u64,
    /// Where plans live, repo-relative.
    pub plan_glob: String,
    /// Commands `release` runs from the repo root; each must exit 0. Not set: derived from what
    /// the repo has (`tools::release_checks`); `[]`: none.
    pub release_checks: Option<Vec<String>>,
    /// Claude Code tools that write the file named in their input.
    pub write_tools: Vec<String>,
    /// MCP tools (the part after `mcp__<server>__`) that write files like Edit does.
    pub mcp_write_tools: Vec<String>,
    /// Frozen for every stream but their owner while any lock is live.
    pub protected_paths: Vec<String>,
    /// The input keys of an MCP writer that name files; every one present is checked (a list of
    /// strings counts too).
    pub mcp_path_keys: Vec<String>,
    /// MCP tools (`server__tool` or the tool part) that only look like command runners or
    /// plugin toggles by name; the name pattern does not block them (the fixed lists still do).
    pub mcp_lookalike_allow: Vec<String>,
    /// How the guard reports a block.
    pub decision: DecisionForm,
    /// The kernel write floor under shell commands: `auto`, `required` or `off`.
    pub floor: FloorMode,
    /// Compare paths ignoring case; default: true on Windows and macOS.
    pub case_insensitive_paths: Option<bool>,
    /// An external live-sessions file (`{pid, sessions:[{sessionId,cwd}]}`) the git rules also
    /// consult; `SESSION_LOCK_LIVE_FILE` overrides.
    pub live_sessions_file: Option<String>,
    /// What `scripts/run.sh` / `run.bat` run to rebuild the app after a round.
    pub rebuild_command: String,
    /// What `scripts/run.sh` / `run.bat` run to (re)start the app.
    pub restart_command: String,
    /// `send-message`: addressing, authorization, limits, inbound review, cold wake.
    #[serde(default)]
    pub messaging: MessagingConfig,
    /// `build-renderer`: the one serialized renderer build.
    pub build: BuildConfig,
    /// `reload-plugin`: reload one plugin's backend without restarting the app.
    pub reload_plugin: ReloadPluginConfig,
    /// The destructive-command rules' app-specific parts (see src/rules/config.rs).
    pub rules: crate::rules::RulesConfig,
    /// Streams across machines: claims as leases on this git remote (see src/leases/).
    pub leases: Option<LeasesConfig>,
    /// What the values above compile to, made at first use (a guard call that needs no rule
    /// compiles none). Set the values before asking for it. Public only so that
    /// `Config { …, ..Config::default() }` can be written anywhere.
    #[serde(skip)]
    pub compiled: Compiled,
}

/// The rules and patterns of a [`Config`], each compiled once, when first asked for.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    rules: std::cell::OnceCell<Result<crate::rules::Rules, crate::rules::RulesError>>,
    protected: std::cell::OnceCell<Option<crate::globs::Owns>>,
    plans: std::cell::OnceCell<Option<globset::GlobMatcher>>,
}

/// The `build` section: what `build-renderer` runs under `session-lock/build.lock`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct BuildConfig {
    /// The build, run through the platform shell (`sh -c`, `cmd /C`) from the repo root.
    pub command: String,
    /// While waiting for the lock, print "still waiting" this often.
    pub report_seconds: u64,
}

impl Default for BuildConfig {
    fn default() -> BuildConfig {
        BuildConfig {
            command: "npx --no-install vite build".into(),
            report_seconds: 30,
        }
    }
}

/// The `reloadPlugin` section: each step of `reload-plugin`. `{id}` in any template is the
/// plugin id; `{appName}` in `userDataDir` is `appName`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct ReloadPluginConfig {
    /// Plugins whose backend must never be reloaded while sessions run (deactivating them ends
    /// every running session).
    pub protected: Vec<String>,
    /// Step 2a, from the repo root through the platform shell; must exit 0.
    pub typecheck: String,
    /// Step 2b, from the repo root through the platform shell; must exit 0.
    pub emit: String,
    /// The plugin's folder, repo-relative. Files written outside it are reported.
    pub plugin_folder: String,
    /// What is copied, relative to `pluginFolder`.
    pub copy_from: String,
    /// The app's user-data folder; `null` means the platform default for `appName`
    /// (`%APPDATA%/{appName}`, `~/Library/Application Support/{appName}`,
    /// `$XDG_CONFIG_HOME/{appName}` or `~/.config/{appName}`).
    pub user_data_dir: Option<String>,
    /// The app's name, for the default user-data folder.
    pub app_name: String,
    /// Where the copy goes, relative to the user-data folder.
    pub copy_to: String,
    /// The app's loopback bridge server, e.g. `http://127.0.0.1:3917`; `null` means it must come
    /// from `--bridge` or `SESSION_LOCK_BRIDGE_URL`.
    pub bridge_url: Option<String>,
    /// The toggle endpoint (POSTed twice: off, then on).
    pub toggle_path: String,
    /// The toggle request's JSON body.
    pub toggle_body: serde_json::Value,
    /// The broadcast endpoint; the body is `{"channel": ..., "payload": ...}`.
    pub broadcast_path: String,
    /// The broadcast's channel.
    pub broadcast_channel: String,
    /// The broadcast's payload.
    pub broadcast_payload: serde_json::Value,
    /// Each bridge request gives up after this long.
    pub http_timeout_seconds: u64,
}

impl Default for ReloadPluginConfig {
    fn default() -> ReloadPluginConfig {
        ReloadPluginConfig {
            protected: vec!["ai-chat".into()],
            typecheck: "npx --no-install tsc --noEmit -p tsconfig.plugins.json".into(),
            emit: "npx --no-install tsc -p tsconfig.plugins.json".into(),
            plugin_folder: "plugins-library/{id}".into(),
            copy_from: "main".into(),
            user_data_dir: None,
            app_name: "kazuo-ai".into(),
            copy_to: "plugins/{id}/main".into(),
            bridge_url: None,
            toggle_path: "/plugins/toggle".into(),
            toggle_body: serde_json::json!({"id": "{id}"}),
            broadcast_path: "/broadcast".into(),
            broadcast_channel: "plugin:{id}:reload".into(),
            broadcast_payload: serde_json::json!({"id": "{id}", "reason": "reload-plugin"}),
            http_timeout_seconds: 10,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Config {
            heartbeat_stale_minutes: 30,
            round_stale_minutes: 60,
            wait_limit_minutes: 25,
            heartbeat_throttle_seconds: 30,
            poll_seconds: 5,
            plan_glob: "plans/*-ms-*-*/plan.md".into(),
            release_checks: None,
            write_tools: s(&["Edit", "Write", "MultiEdit", "NotebookEdit"]),
            mcp_write_tools: s(&["write_project_file", "write_plugin_source"]),
            protected_paths: s(&[
                "session-lock/**",
                "scripts/session-lock/**",
                "scripts/run.sh",
                "scripts/run.bat",
                ".claude/settings.json",
                ".claude/settings.local.json",
                ".codex/hooks.json",
                ".gemini/settings.json",
                ".mcp.json",
            ]),
            mcp_path_keys: s(&[
                "file_path",
                "notebook_path",
                "path",
                "filePath",
                "filepath",
                "relativePath",
                "relative_path",
                "file",
                "filename",
                "fileName",
                "target",
                "targetPath",
                "destination",
                "dest",
                "paths",
                "files",
                "targetFile",
                "outputPath",
                "outputFile",
                "output",
                "uri",
                "uris",
                "source",
                "sourcePath",
                "src",
                "from",
                "to",
                "dst",
                "oldPath",
                "newPath",
                "directory",
                "dir",
            ]),
            mcp_lookalike_allow: Vec::new(),
            decision: DecisionForm::Json,
            floor: FloorMode::Auto,
            case_insensitive_paths: None,
            live_sessions_file: None,
            rebuild_command: "npm run build".into(),
            restart_command: "npx electron .".into(),
            messaging: MessagingConfig::default(),
            build: BuildConfig::default(),
            reload_plugin: ReloadPluginConfig::default(),
            rules: crate::rules::RulesConfig::default(),
            leases: None,
            compiled: Compiled::default(),
        }
    }
}

/// Why the config could not be used.
#[derive(Debug)]
pub enum ConfigError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Invalid {
        path: PathBuf,
        key: String,
        reason: String,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Io { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            // `?` is how the path tracker names a spot that is no key (a JSON syntax error).
            ConfigError::Invalid { path, key, reason }
                if key.is_empty() || key == "." || key == "?" =>
            {
                write!(f, "{}: {reason}", path.display())
            }
            ConfigError::Invalid { path, key, reason } => {
                write!(f, "{}: key '{key}': {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The config file's place in a repo.
pub fn path_in(root: &Path) -> PathBuf {
    root.join("session-lock").join("config.json")
}

impl Config {
    /// Parses config text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let whole = |reason: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: String::new(),
            reason,
        };
        // serde would also fill the struct from a JSON array, field by field in order.
        if !text.trim_start().starts_with('{') {
            return Err(whole("must be a JSON object".into()));
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: Config = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
            let key = e.path().to_string();
            let mut reason = e.into_inner().to_string();
            if let Some(i) = reason.find(", expected one of") {
                reason.truncate(i);
            }
            ConfigError::Invalid {
                path: path.to_path_buf(),
                key,
                reason,
            }
        })?;
        de.end().map_err(|e| whole(e.to_string()))?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.into(),
            reason: reason.into(),
        };
        for (key, v) in [
            ("heartbeatStaleMinutes", self.heartbeat_stale_minutes),
            ("roundStaleMinutes", self.round_stale_minutes),
            ("pollSeconds", self.poll_seconds),
            ("build.reportSeconds", self.build.report_seconds),
            (
                "reloadPlugin.httpTimeoutSeconds",
                self.reload_plugin.http_timeout_seconds,
            ),
        ] {
            if v == 0 {
                return Err(bad(key, "must be at least 1"));
            }
        }
        if let Err(e) = crate::globs::Owns::new(&self.protected_paths, false) {
            return Err(bad("protectedPaths", &e.to_string()));
        }
        for (key, list) in [
            ("mcpPathKeys", &self.mcp_path_keys),
            ("mcpLookalikeAllow", &self.mcp_lookalike_allow),
        ] {
            if let Some(i) = list.iter().position(|k| k.trim().is_empty()) {
                return Err(bad(&format!("{key}[{i}]"), "must not be empty"));
            }
        }
        // The rules compile here, once: the guard never meets a config whose rules do not.
        use crate::rules::RuleId;
        for (i, id) in self.rules.disabled.iter().enumerate() {
            if RuleId::from_id(id).is_none() {
                let known: Vec<&str> = RuleId::ALL.iter().map(|r| r.id()).collect();
                return Err(bad(
                    &format!("rules.disabled[{i}]"),
                    &format!("unknown rule id '{id}'; known: {}", known.join(", ")),
                ));
            }
        }
        if let Err(e) = crate::rules::compile(&self.rules) {
            return Err(bad(
                &format!("rules.{}", e.key),
                &format!("'{}' {}", e.value, e.problem),
            ));
        }
        if self.plan_glob.trim().is_empty() {
            return Err(bad("planGlob", "must not be empty"));
        }
        if let Err((key, reason)) = self.messaging.validate() {
            return Err(bad(&format!("messaging.{key}"), reason));
        }
        let rp = &self.reload_plugin;
        for (key, v) in [
            ("build.command", &self.build.command),
            ("reloadPlugin.pluginFolder", &rp.plugin_folder),
            ("reloadPlugin.appName", &rp.app_name),
            ("reloadPlugin.copyTo", &rp.copy_to),
            ("reloadPlugin.togglePath", &rp.toggle_path),
            ("reloadPlugin.broadcastPath", &rp.broadcast_path),
        ] {
            if v.trim().is_empty() {
                return Err(bad(key, "must not be empty"));
            }
        }
        for (key, v) in [
            ("reloadPlugin.togglePath", &rp.toggle_path),
            ("reloadPlugin.broadcastPath", &rp.broadcast_path),
        ] {
            if !v.starts_with('/') {
                return Err(bad(key, "must start with '/'"));
            }
        }
        Ok(())
    }

    /// The repo's config, or the defaults when the file does not exist.
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let path = path_in(root);
        match crate::atomic::read_regular(&path, crate::atomic::MAX_READ) {
            Ok(text) => Config::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Io { path, source }),
        }
    }

    pub fn case_insensitive(&self) -> bool {
        self.case_insensitive_paths
            .unwrap_or_else(crate::paths::default_case_insensitive)
    }

    /// The command rules, compiled (once).
    pub fn compiled_rules(&self) -> Result<&crate::rules::Rules, &crate::rules::RulesError> {
        self.compiled
            .rules
            .get_or_init(|| crate::rules::compile(&self.rules))
            .as_ref()
    }

    /// True when the repo path `rel` is under `protectedPaths` (compiled once; a pattern that
    /// does not compile protects nothing, as before).
    pub fn is_protected(&self, rel: &str) -> bool {
        let ci = self.case_insensitive();
        if crate::globs::cannot_match(&self.protected_paths, rel, ci) {
            return false;
        }
        self.compiled
            .protected
            .get_or_init(|| crate::globs::Owns::new(&self.protected_paths, ci).ok())
            .as_ref()
            .is_some_and(|o| o.is_match(rel))
    }

    /// True when the repo path `rel` is a plan file under `planGlob` (compiled once).
    pub fn is_plan(&self, rel: &str) -> bool {
        let glob = self.plan_glob.as_str();
        // Cheap first: the glob's last segment, when literal, must be the file name.
        let last = glob.rsplit('/').next().unwrap_or(glob);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if !last.contains(['*', '?', '[', '{']) && !last.eq_ignore_ascii_case(name) {
            return false;
        }
        self.compiled
            .plans
            .get_or_init(|| {
                globset::GlobBuilder::new(glob)
                    .literal_separator(true)
                    .case_insensitive(self.case_insensitive())
                    .build()
                    .ok()
                    .map(|g| g.compile_matcher())
            })
            .as_ref()
            .is_some_and(|m| m.is_match(rel))
    }

    pub fn heartbeat_stale_ms(&self) -> u64 {
        self.heartbeat_stale_minutes * 60_000
    }

    pub fn round_stale_ms(&self) -> u64 {
        self.round_stale_minutes * 60_000
    }
}

/// What a session does with messages other sessions send it (`messaging.inbound`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum InboundPolicy {
    /// Deliver at once.
    #[default]
    Accept,
    /// Keep it for the target to review (`send-message review`).
    Hold,
    /// Answer `refused`; the text is stored nowhere.
    Refuse,
}

/// The `messaging` section: `send-message` and its bus. Defaults are the messaging protocol's.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct MessagingConfig {
    /// Resume a session that is not running to deliver a message to it.
    pub allow_cold_wake: bool,
    /// Let sessions message sessions of another workspace (repo).
    pub allow_cross_workspace: bool,
    /// Cross-workspace targets allowed anyway: a session id, or a folder (its sessions and
    /// those below it). Never opens another session's subagents.
    pub allowlist: Vec<String>,
    /// Largest message, in UTF-8 bytes.
    pub max_message_bytes: usize,
    /// Longest summary, in characters.
    pub max_summary_chars: usize,
    /// Messages one sender may send one target per minute (duplicates do not count).
    pub rate_per_minute: usize,
    /// The same (sender, target, text, summary) again within this window is a duplicate.
    pub dedupe_window_seconds: u64,
    /// Undelivered messages a target may have waiting before senders are refused.
    pub max_pending_per_target: usize,
    /// What sessions of this repo do with inbound messages.
    pub inbound: InboundPolicy,
    /// Per-session override of `inbound`, by session id or stream name.
    pub inbound_sessions: std::collections::BTreeMap<String, InboundPolicy>,
    /// A held message not reviewed in this time expires.
    pub hold_expiry_seconds: u64,
    /// Held messages a target keeps; the oldest is dropped past it.
    pub max_held_per_target: usize,
    /// How long `send` watches the target's transcript for the message after writing it.
    pub confirm_milliseconds: u64,
    /// A message written to a live client that never showed in its transcript is written
    /// again after this long.
    pub resend_after_seconds: u64,
    /// The longest a cold wake (a headless resume) may run.
    pub wake_timeout_seconds: u64,
}

impl Default for MessagingConfig {
    fn default() -> MessagingConfig {
        MessagingConfig {
            allow_cold_wake: true,
            allow_cross_workspace: false,
            allowlist: Vec::new(),
            max_message_bytes: 64 * 1024,
            max_summary_chars: 200,
            rate_per_minute: 20,
            dedupe_window_seconds: 10,
            max_pending_per_target: 50,
            inbound: InboundPolicy::Accept,
            inbound_sessions: Default::default(),
            hold_expiry_seconds: 300,
            max_held_per_target: 100,
            confirm_milliseconds: 3000,
            resend_after_seconds: 30,
            wake_timeout_seconds: 600,
        }
    }
}

impl MessagingConfig {
    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        for (key, v) in [
            ("maxMessageBytes", self.max_message_bytes as u64),
            ("maxSummaryChars", self.max_summary_chars as u64),
            ("ratePerMinute", self.rate_per_minute as u64),
            ("maxPendingPerTarget", self.max_pending_per_target as u64),
            ("holdExpirySeconds", self.hold_expiry_seconds),
            ("maxHeldPerTarget", self.max_held_per_target as u64),
            ("wakeTimeoutSeconds", self.wake_timeout_seconds),
        ] {
            if v == 0 {
                return Err((key, "must be at least 1"));
            }
        }
        if self.allowlist.iter().any(|a| a.trim().is_empty()) {
            return Err(("allowlist", "entries must not be empty"));
        }
        Ok(())
    }
}

/// The `leases` section of the config.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LeasesConfig {
    /// A remote name (`origin`) or URL.
    pub remote: String,
    /// The detached refresher runs at most this often.
    #[serde(default = "default_refresh")]
    pub refresh_seconds: u64,
    /// A lease's heartbeat is pushed at most this often.
    #[serde(default = "default_heartbeat_push")]
    pub heartbeat_push_seconds: u64,
}

fn default_refresh() -> u64 {
    60
}

fn default_heartbeat_push() -> u64 {
    300
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("session-lock/config.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_protocols() {
        let c = parse("{}").unwrap();
        assert_eq!(c.heartbeat_stale_minutes, 30);
        assert_eq!(c.round_stale_minutes, 60);
        assert_eq!(c.wait_limit_minutes, 25);
        assert_eq!(c.release_checks, None, "derived from the repo");
        assert_eq!(c.plan_glob, "plans/*-ms-*-*/plan.md");
        assert_eq!(c.decision, DecisionForm::Json);
        assert_eq!(c.floor, FloorMode::Auto);
    }

    #[test]
    fn the_floor_mode_is_one_of_three() {
        assert_eq!(
            parse(r#"{"floor": "required"}"#).unwrap().floor,
            FloorMode::Required
        );
        assert_eq!(parse(r#"{"floor": "off"}"#).unwrap().floor, FloorMode::Off);
        let e = parse(r#"{"floor": "on"}"#).unwrap_err();
        assert!(e.contains("key 'floor'"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse(r#"{"heartbeatStale": 3}"#).unwrap_err();
        assert!(
            e.contains("heartbeatStale") && e.contains("unknown field"),
            "{e}"
        );
        let e = parse(r#"{"roundStaleMinutes": "soon"}"#).unwrap_err();
        assert!(e.contains("key 'roundStaleMinutes'"), "{e}");
        let e = parse(r#"{"releaseChecks": [1]}"#).unwrap_err();
        assert!(e.contains("releaseChecks[0]"), "{e}");
        let e = parse(r#"{"decision": "maybe"}"#).unwrap_err();
        assert!(e.contains("decision"), "{e}");
        let e = parse(r#"{"pollSeconds": 0}"#).unwrap_err();
        assert!(e.contains("pollSeconds"), "{e}");
        let e = parse("{").unwrap_err();
        assert!(e.contains("config.json"), "{e}");
        let e = parse("{not json").unwrap_err();
        assert!(!e.contains("key '?'"), "a syntax error names no key: {e}");
    }

    #[test]
    fn only_one_json_object_is_a_config() {
        let e = parse("[]").unwrap_err();
        assert!(e.contains("must be a JSON object"), "{e}");
        let e = parse("[30, 60]").unwrap_err();
        assert!(e.contains("must be a JSON object"), "{e}");
        let e = parse(r#"{"pollSeconds": 1} x"#).unwrap_err();
        assert!(e.contains("trailing characters"), "{e}");
        assert!(parse("  {}\n").is_ok());
    }

    #[test]
    fn build_and_reload_defaults_are_the_protocols() {
        let c = parse("{}").unwrap();
        assert_eq!(c.build.command, "npx --no-install vite build");
        assert_eq!(c.build.report_seconds, 30);
        let r = &c.reload_plugin;
        assert_eq!(r.protected, vec!["ai-chat"]);
        assert_eq!(
            r.typecheck,
            "npx --no-install tsc --noEmit -p tsconfig.plugins.json"
        );
        assert_eq!(r.emit, "npx --no-install tsc -p tsconfig.plugins.json");
        assert_eq!(r.plugin_folder, "plugins-library/{id}");
        assert_eq!(r.copy_from, "main");
        assert_eq!(r.app_name, "kazuo-ai");
        assert_eq!(r.copy_to, "plugins/{id}/main");
        assert_eq!(r.user_data_dir, None);
        assert_eq!(r.bridge_url, None);
        assert_eq!(r.toggle_path, "/plugins/toggle");
        assert_eq!(r.toggle_body, serde_json::json!({"id": "{id}"}));
        assert_eq!(r.broadcast_path, "/broadcast");
        assert_eq!(r.broadcast_channel, "plugin:{id}:reload");
        let partial = parse(r#"{"reloadPlugin": {"protected": ["ai-chat", "core"]}}"#).unwrap();
        assert_eq!(partial.reload_plugin.protected, vec!["ai-chat", "core"]);
        assert_eq!(
            partial.reload_plugin.emit, r.emit,
            "other keys keep defaults"
        );
    }

    #[test]
    fn build_and_reload_errors_name_the_key() {
        let e = parse(r#"{"build": {"comand": "x"}}"#).unwrap_err();
        assert!(e.contains("key 'build.comand'"), "{e}");
        let e = parse(r#"{"build": {"command": 7}}"#).unwrap_err();
        assert!(e.contains("key 'build.command'"), "{e}");
        let e = parse(r#"{"build": {"reportSeconds": 0}}"#).unwrap_err();
        assert!(e.contains("build.reportSeconds"), "{e}");
        let e = parse(r#"{"reloadPlugin": {"protected": "ai-chat"}}"#).unwrap_err();
        assert!(e.contains("key 'reloadPlugin.protected'"), "{e}");
        let e = parse(r#"{"reloadPlugin": {"bridge": "http://127.0.0.1:1"}}"#).unwrap_err();
        assert!(e.contains("key 'reloadPlugin.bridge'"), "{e}");
        let e = parse(r#"{"reloadPlugin": {"togglePath": "plugins/toggle"}}"#).unwrap_err();
        assert!(e.contains("reloadPlugin.togglePath"), "{e}");
        let e = parse(r#"{"reloadPlugin": {"httpTimeoutSeconds": -1}}"#).unwrap_err();
        assert!(e.contains("reloadPlugin.httpTimeoutSeconds"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let c = parse(
            r#"{"releaseChecks": ["true"], "decision": "exit2", "caseInsensitivePaths": true}"#,
        )
        .unwrap();
        assert_eq!(c.release_checks, Some(vec!["true".to_string()]));
        assert_eq!(c.decision, DecisionForm::Exit2);
        assert!(c.case_insensitive());
    }

    #[test]
    fn messaging_defaults_are_the_seeds() {
        let m = parse("{}").unwrap().messaging;
        assert!(m.allow_cold_wake && !m.allow_cross_workspace && m.allowlist.is_empty());
        assert_eq!(m.max_message_bytes, 65_536);
        assert_eq!((m.rate_per_minute, m.dedupe_window_seconds), (20, 10));
        assert_eq!((m.max_pending_per_target, m.max_summary_chars), (50, 200));
        assert_eq!(m.inbound, InboundPolicy::Accept);
        assert_eq!((m.hold_expiry_seconds, m.max_held_per_target), (300, 100));
    }

    #[test]
    fn messaging_bad_values_name_the_key() {
        let e = parse(r#"{"messaging": {"inbound": "maybe"}}"#).unwrap_err();
        assert!(e.contains("messaging.inbound"), "{e}");
        let e = parse(r#"{"messaging": {"ratePerMinute": 0}}"#).unwrap_err();
        assert!(e.contains("messaging.ratePerMinute"), "{e}");
        let e = parse(r#"{"messaging": {"allowColdWake": "yes"}}"#).unwrap_err();
        assert!(e.contains("messaging.allowColdWake"), "{e}");
        let e = parse(r#"{"messaging": {"coldWake": true}}"#).unwrap_err();
        assert!(e.contains("coldWake"), "{e}");
        let c =
            parse(r#"{"messaging": {"inbound": "hold", "inboundSessions": {"api": "refuse"}}}"#)
                .unwrap();
        assert_eq!(c.messaging.inbound, InboundPolicy::Hold);
        assert_eq!(c.messaging.inbound_sessions["api"], InboundPolicy::Refuse);
    }
}
