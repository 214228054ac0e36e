//! The `check` step: everything a reload will do, resolved and checked before anything runs.

use super::Options;
use crate::config::ReloadPluginConfig;
use crate::exit::Code;
use serde::Serialize;
use serde_json::Value;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the bridge when `--bridge` is not given.
pub const BRIDGE_ENV: &str = "SESSION_LOCK_BRIDGE_URL";

/// Why a bridge URL is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgeUrlError {
    /// Not `http://…` (the bridge speaks plain HTTP on loopback).
    NotHttp {
        url: String,
    },
    Malformed {
        url: String,
        reason: String,
    },
    /// The host is not 127.0.0.0/8, ::1 or localhost.
    NotLoopback {
        url: String,
        host: String,
    },
}

impl std::fmt::Display for BridgeUrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeUrlError::NotHttp { url } => {
                write!(
                    f,
                    "bridge url '{url}' is not http:// (the bridge is plain http on loopback)"
                )
            }
            BridgeUrlError::Malformed { url, reason } => {
                write!(f, "bridge url '{url}' is malformed: {reason}")
            }
            BridgeUrlError::NotLoopback { url, host } => write!(
                f,
                "bridge url '{url}' is not loopback (host '{host}'); only 127.0.0.0/8, ::1 and localhost are allowed"
            ),
        }
    }
}

impl std::error::Error for BridgeUrlError {}

impl BridgeUrlError {
    /// Malformed input is a usage error; a well-formed URL pointing off the machine is refused.
    pub fn code(&self) -> Code {
        match self {
            BridgeUrlError::NotLoopback { .. } => Code::Refused,
            _ => Code::Usage,
        }
    }
}

/// Checks a bridge base URL and returns it without a trailing `/`.
pub fn check_bridge_url(url: &str) -> Result<String, BridgeUrlError> {
    let malformed = |reason: &str| BridgeUrlError::Malformed {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let trimmed = url.trim();
    let rest = match trimmed.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &trimmed[7..],
        _ => {
            return Err(BridgeUrlError::NotHttp {
                url: url.to_string(),
            });
        }
    };
    if rest.contains(['?', '#']) {
        return Err(malformed("a query or fragment is not allowed"));
    }
    if rest.chars().any(|c| c.is_whitespace() || c == '\\') {
        return Err(malformed("spaces and backslashes are not allowed"));
    }
    let (authority, _path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(malformed("credentials are not allowed"));
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']').ok_or_else(|| malformed("unclosed '['"))?;
        let after = &inner[end + 1..];
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| malformed("text after ']'"))?,
            ),
        };
        (&inner[..end], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(malformed("no host"));
    }
    if let Some(p) = port
        && p.parse::<u16>().map_or(true, |n| n == 0)
    {
        return Err(malformed(&format!("port '{p}' is not 1-65535")));
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => ip.is_loopback(),
            Ok(IpAddr::V6(ip)) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            Err(_) => false,
        };
    if !loopback {
        return Err(BridgeUrlError::NotLoopback {
            url: url.to_string(),
            host: host.to_string(),
        });
    }
    Ok(trimmed.trim_end_matches('/').to_string())
}

/// A plugin id is one folder name.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("plugin id is empty".into());
    }
    if id.starts_with('.') || id.starts_with('-') {
        return Err(format!("plugin id '{id}' must not start with '.' or '-'"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(format!(
            "plugin id '{id}' may hold only letters, digits, '.', '_', '-' and '@'"
        ));
    }
    Ok(())
}

/// Replaces `{id}` in every string of a JSON template.
pub fn fill(template: &Value, id: &str) -> Value {
    match template {
        Value::String(s) => Value::String(s.replace("{id}", id)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, id)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, id))).collect())
        }
        other => other.clone(),
    }
}

/// The app's user-data folder for `app_name` on this platform
/// ([`crate::platform::Host::user_data`]).
pub fn default_user_data(app_name: &str) -> Option<PathBuf> {
    crate::platform::this().user_data(app_name)
}

/// A configured path: `{appName}` filled in, a leading `~/` is the home folder.
fn expand(path: &str, app_name: &str) -> PathBuf {
    let path = path.replace("{appName}", app_name);
    match (path.strip_prefix("~/"), crate::sessions::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The bridge a dry run without one shows in its plan.
pub const NO_BRIDGE: &str = "<no bridge>";

/// Everything the run will do, resolved before anything runs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub plugin: String,
    pub root: PathBuf,
    pub typecheck: String,
    pub emit: String,
    /// The plugin's folder, repo-relative with `/`.
    pub plugin_folder: String,
    pub source: PathBuf,
    pub target: PathBuf,
    pub bridge: String,
    /// Where the bridge URL came from: `--bridge`, the environment variable, or the config.
    pub bridge_from: String,
    pub toggle_url: String,
    pub toggle_body: Value,
    pub broadcast_url: String,
    pub broadcast_body: Value,
    #[serde(skip)]
    pub http_timeout: Duration,
}

/// Why the `check` step stopped the run.
#[derive(Debug)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

fn refuse(code: Code, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

/// Resolves the plan, refusing what the protocol forbids. Reads the config's values and checks
/// that the plugin's folder exists; runs and writes nothing.
pub fn plan(
    opts: &Options,
    root: &Path,
    cfg: &ReloadPluginConfig,
    env_bridge: Option<String>,
) -> Result<Plan, Refusal> {
    let id = opts.id.as_str();
    check_id(id).map_err(|m| refuse(Code::Usage, m))?;
    if cfg.protected.iter().any(|p| p.eq_ignore_ascii_case(id)) {
        return Err(refuse(
            Code::Refused,
            format!(
                "plugin '{id}' is protected: deactivating it ends every session running inside the app (this one too). Its backend cannot be reloaded during a round; commit the change and check it after the end-of-round restart"
            ),
        ));
    }
    let (bridge_raw, bridge_from) = if let Some(b) = opts.bridge.clone() {
        (b, "--bridge".to_string())
    } else if let Some(b) = env_bridge.filter(|b| !b.trim().is_empty()) {
        (b, BRIDGE_ENV.to_string())
    } else if let Some(b) = cfg.bridge_url.clone() {
        (b, "config reloadPlugin.bridgeUrl".to_string())
    } else if opts.dry_run {
        // The plan is still worth showing; the real run refuses without a bridge.
        (
            NO_BRIDGE.to_string(),
            format!(
                "nowhere yet: pass --bridge http://127.0.0.1:PORT, set {BRIDGE_ENV}, or set reloadPlugin.bridgeUrl"
            ),
        )
    } else {
        return Err(refuse(
            Code::Usage,
            format!(
                "no bridge url: pass --bridge http://127.0.0.1:PORT, set {BRIDGE_ENV}, or set reloadPlugin.bridgeUrl in session-lock/config.json"
            ),
        ));
    };
    let bridge = if bridge_raw == NO_BRIDGE {
        bridge_raw
    } else {
        check_bridge_url(&bridge_raw).map_err(|e| refuse(e.code(), e.to_string()))?
    };

    let plugin_folder = cfg
        .plugin_folder
        .replace("{id}", id)
        .replace('\\', "/")
        .trim_end_matches('/')
        .to_string();
    if Path::new(&plugin_folder).is_absolute() || plugin_folder.split('/').any(|part| part == "..")
    {
        return Err(refuse(
            Code::Usage,
            format!("reloadPlugin.pluginFolder '{plugin_folder}' must stay inside the repo"),
        ));
    }
    let folder = root.join(&plugin_folder);
    if !folder.is_dir() {
        return Err(refuse(
            Code::NotFound,
            format!("no plugin '{id}': {plugin_folder}/ does not exist"),
        ));
    }
    let source = if cfg.copy_from.is_empty() {
        folder.clone()
    } else {
        folder.join(cfg.copy_from.replace("{id}", id))
    };
    if !source.is_dir() {
        return Err(refuse(
            Code::NotFound,
            format!(
                "plugin '{id}' has no {} folder to copy",
                source.strip_prefix(root).unwrap_or(&source).display()
            ),
        ));
    }
    let user_data = match (&opts.user_data, &cfg.user_data_dir) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => expand(dir, &cfg.app_name),
        (None, None) => default_user_data(&cfg.app_name).ok_or_else(|| {
            refuse(
                Code::Usage,
                "cannot find the app's user-data folder (no APPDATA or HOME); pass --user-data DIR",
            )
        })?,
    };
    let target = user_data.join(cfg.copy_to.replace("{id}", id));
    let channel = cfg.broadcast_channel.replace("{id}", id);
    Ok(Plan {
        plugin: id.to_string(),
        root: root.to_path_buf(),
        typecheck: cfg.typecheck.replace("{id}", id),
        emit: cfg.emit.replace("{id}", id),
        plugin_folder,
        source,
        target,
        toggle_url: format!("{bridge}{}", cfg.toggle_path),
        toggle_body: fill(&cfg.toggle_body, id),
        broadcast_url: format!("{bridge}{}", cfg.broadcast_path),
        broadcast_body: serde_json::json!({
            "channel": channel,
            "payload": fill(&cfg.broadcast_payload, id),
        }),
        bridge,
        bridge_from,
        http_timeout: Duration::from_secs(cfg.http_timeout_seconds.max(1)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_pass_others_are_refused() {
        for ok in [
            "http://127.0.0.1:3917",
            "http://127.5.6.7:80/",
            "http://localhost:1/api",
            "HTTP://LocalHost",
            "http://[::1]:3917",
            "http://[::ffff:127.0.0.1]:9",
        ] {
            assert!(check_bridge_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_bridge_url("http://127.0.0.1:3917/").unwrap(),
            "http://127.0.0.1:3917"
        );
        for (bad, code) in [
            ("http://10.0.0.5:3917", Code::Refused),
            ("http://example.com", Code::Refused),
            ("http://[2001:db8::1]:80", Code::Refused),
            ("http://0.0.0.0:80", Code::Refused),
            ("http://127.0.0.1.example.com", Code::Refused),
            ("https://127.0.0.1:3917", Code::Usage),
            ("ftp://127.0.0.1", Code::Usage),
            ("127.0.0.1:3917", Code::Usage),
            ("http://127.0.0.1@example.com", Code::Usage),
            ("http://127.0.0.1:99999", Code::Usage),
            ("http://127.0.0.1:3917?x=1", Code::Usage),
            ("http://:80", Code::Usage),
        ] {
            let e = check_bridge_url(bad).unwrap_err();
            assert_eq!(e.code(), code, "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn ids_are_one_folder_name() {
        assert!(check_id("notes").is_ok());
        assert!(check_id("my-plugin_2.0").is_ok());
        for bad in ["", "..", "../x", "a/b", "a\\b", "-rf", ".hidden", "a b"] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn templates_fill_the_id_everywhere() {
        let t = serde_json::json!({"id": "{id}", "n": 1, "list": ["x-{id}", true]});
        assert_eq!(
            fill(&t, "notes"),
            serde_json::json!({"id": "notes", "n": 1, "list": ["x-notes", true]})
        );
    }

    fn opts(id: &str) -> Options {
        Options {
            id: id.into(),
            bridge: Some("http://127.0.0.1:9".into()),
            user_data: Some(PathBuf::from("/ud")),
            ..Options::default()
        }
    }

    #[test]
    fn plan_resolves_paths_urls_and_bodies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("plugins-library/notes/main")).unwrap();
        let cfg = ReloadPluginConfig::default();
        let p = plan(&opts("notes"), dir.path(), &cfg, None).unwrap();
        assert_eq!(p.plugin_folder, "plugins-library/notes");
        assert_eq!(p.source, dir.path().join("plugins-library/notes/main"));
        assert_eq!(p.target, PathBuf::from("/ud/plugins/notes/main"));
        assert_eq!(p.toggle_url, "http://127.0.0.1:9/plugins/toggle");
        assert_eq!(p.toggle_body, serde_json::json!({"id": "notes"}));
        assert_eq!(p.broadcast_url, "http://127.0.0.1:9/broadcast");
        assert_eq!(p.broadcast_body["channel"], "plugin:notes:reload");
        assert_eq!(p.bridge_from, "--bridge");

        let e = plan(&opts("ai-chat"), dir.path(), &cfg, None).unwrap_err();
        assert_eq!(e.code, Code::Refused);
        assert!(e.message.contains("ends every session"), "{}", e.message);
        let e = plan(&opts("missing"), dir.path(), &cfg, None).unwrap_err();
        assert_eq!(e.code, Code::NotFound);

        let mut no_bridge = opts("notes");
        no_bridge.bridge = None;
        assert_eq!(
            plan(&no_bridge, dir.path(), &cfg, None).unwrap_err().code,
            Code::Usage
        );
        let p = plan(
            &no_bridge,
            dir.path(),
            &cfg,
            Some("http://localhost:7".into()),
        )
        .unwrap();
        assert_eq!(p.bridge_from, BRIDGE_ENV);
        let e = plan(
            &no_bridge,
            dir.path(),
            &cfg,
            Some("http://192.168.1.2:7".into()),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::Refused);
    }
}
