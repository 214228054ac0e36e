//! The workspace single-tool contract's endpoint: `<cwd>/.mcp.json`, entry `ai-game-developer`
//! only. Fail closed, no guessing: no port probing, no `~/.claude.json`, no parent folders, no
//! merging. Every row of the rule table is a test below.
//!
//! | situation | result |
//! |---|---|
//! | no `.mcp.json`, broken JSON, no `ai-game-developer` entry | refused |
//! | `type` other than `http`, or `command`/`args`/`env` (or any key but `type`/`url`) | refused |
//! | url not `http:`, or host not loopback, or credentials in the url | refused |
//! | a subfolder of a workspace that declares it | refused (no inheritance) |
//! | other servers in the same file | ignored; nothing of theirs is carried |

use serde_json::Value;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// The one server the contract reads.
pub const SERVER: &str = "ai-game-developer";
/// The largest `.mcp.json` read.
const MAX_FILE: u64 = 1024 * 1024;

/// A checked loopback endpoint: only its url travels on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://<loopback host>[:port]/<path>` as declared.
    pub url: String,
    pub host: String,
    pub port: u16,
}

/// Why the workspace's endpoint was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndpointError {
    NoFile(PathBuf),
    /// A symlink, a folder, or unreadable: not trusted.
    NotPlain(PathBuf),
    TooLarge(PathBuf),
    BadJson {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    /// The file has no `mcpServers` object.
    NoServers(PathBuf),
    NotDeclared(PathBuf),
    EntryNotObject,
    /// `type` missing or not `http`.
    NotHttpType(Option<String>),
    /// The entry would launch something or carries more than `type` and `url`.
    ForbiddenKey(String),
    NoUrl,
    BadUrl(String),
    NotHttpScheme(String),
    NotLoopback(String),
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "workspace-unity-state refused: ")?;
        match self {
            EndpointError::NoFile(p) => write!(f, "no {}", p.display()),
            EndpointError::NotPlain(p) => {
                write!(f, "{} is not a plain readable file", p.display())
            }
            EndpointError::TooLarge(p) => write!(f, "{} is over 1 MiB", p.display()),
            EndpointError::BadJson { path, line, column } => write!(
                f,
                "{} is not valid JSON (line {line} column {column})",
                path.display()
            ),
            EndpointError::NoServers(p) => {
                write!(f, "{} has no \"mcpServers\" object", p.display())
            }
            EndpointError::NotDeclared(p) => write!(
                f,
                "workspace does not declare an \"{SERVER}\" server in {}",
                p.display()
            ),
            EndpointError::EntryNotObject => write!(f, "\"{SERVER}\" is not an object"),
            EndpointError::NotHttpType(t) => write!(
                f,
                "\"{SERVER}\" type is {}, not \"http\"",
                t.as_deref()
                    .map(|t| format!("\"{t}\""))
                    .unwrap_or_else(|| "missing".into())
            ),
            EndpointError::ForbiddenKey(k) => write!(
                f,
                "\"{SERVER}\" has \"{k}\"; only \"type\" and \"url\" are accepted (nothing is launched)"
            ),
            EndpointError::NoUrl => write!(f, "\"{SERVER}\" has no string \"url\""),
            EndpointError::BadUrl(why) => write!(f, "\"{SERVER}\" url {why}"),
            EndpointError::NotHttpScheme(s) => {
                write!(f, "\"{SERVER}\" url scheme is \"{s}\", not \"http\"")
            }
            EndpointError::NotLoopback(h) => {
                write!(f, "\"{SERVER}\" url host \"{h}\" is not loopback")
            }
        }
    }
}

impl std::error::Error for EndpointError {}

fn loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|a| a.is_loopback());
    }
    host.parse::<Ipv4Addr>().is_ok_and(|a| a.is_loopback())
}

/// Checks a url: `http:`, loopback host, no credentials, no fragment, no whitespace.
pub fn check_url(url: &str) -> Result<Endpoint, EndpointError> {
    if url.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(EndpointError::BadUrl("is empty or holds whitespace".into()));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(EndpointError::BadUrl("has no scheme".into()));
    };
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(EndpointError::NotHttpScheme(scheme.to_ascii_lowercase()));
    }
    if url.contains('#') {
        return Err(EndpointError::BadUrl("has a fragment".into()));
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(EndpointError::BadUrl("carries credentials".into()));
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(i) => (&authority[..=i], &authority[i + 1..]),
            None => return Err(EndpointError::BadUrl("has a broken IPv6 host".into())),
        }
    } else {
        match authority.find(':') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        }
    };
    let port = match port {
        "" => 80,
        p => match p.strip_prefix(':').map(str::parse::<u16>) {
            Some(Ok(n)) if n > 0 => n,
            _ => return Err(EndpointError::BadUrl("has a bad port".into())),
        },
    };
    if host.is_empty() {
        return Err(EndpointError::BadUrl("has no host".into()));
    }
    if !loopback(host) {
        return Err(EndpointError::NotLoopback(host.to_string()));
    }
    if !(tail.is_empty() || tail.starts_with('/') || tail.starts_with('?')) {
        return Err(EndpointError::BadUrl("has a bad path".into()));
    }
    Ok(Endpoint {
        url: format!("http://{host}:{port}{tail}"),
        host: host.to_string(),
        port,
    })
}

/// Resolves the workspace's endpoint from exactly `<cwd>/.mcp.json`.
pub fn resolve(cwd: &Path) -> Result<Endpoint, EndpointError> {
    let path = cwd.join(".mcp.json");
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EndpointError::NoFile(path));
        }
        Err(_) => return Err(EndpointError::NotPlain(path)),
    };
    if !meta.is_file() {
        return Err(EndpointError::NotPlain(path));
    }
    if meta.len() > MAX_FILE {
        return Err(EndpointError::TooLarge(path));
    }
    let bytes = std::fs::read(&path).map_err(|_| EndpointError::NotPlain(path.clone()))?;
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| EndpointError::BadJson {
        path: path.clone(),
        line: e.line(),
        column: e.column(),
    })?;
    let servers = doc
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| EndpointError::NoServers(path.clone()))?;
    let entry = servers
        .get(SERVER)
        .ok_or_else(|| EndpointError::NotDeclared(path.clone()))?
        .as_object()
        .ok_or(EndpointError::EntryNotObject)?;
    for key in ["command", "args", "env"] {
        if entry.contains_key(key) {
            return Err(EndpointError::ForbiddenKey(key.into()));
        }
    }
    match entry.get("type") {
        Some(Value::String(t)) if t == "http" => {}
        Some(Value::String(t)) => return Err(EndpointError::NotHttpType(Some(t.clone()))),
        Some(other) => return Err(EndpointError::NotHttpType(Some(other.to_string()))),
        None => return Err(EndpointError::NotHttpType(None)),
    }
    if let Some(k) = entry.keys().find(|k| !matches!(k.as_str(), "type" | "url")) {
        return Err(EndpointError::ForbiddenKey(k.clone()));
    }
    let url = entry
        .get("url")
        .and_then(Value::as_str)
        .ok_or(EndpointError::NoUrl)?;
    check_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws(doc: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(".mcp.json"), doc).unwrap();
        d
    }

    fn entry(e: Value) -> String {
        json!({"mcpServers": {"ai-game-developer": e}}).to_string()
    }

    #[test]
    fn row_missing_broken_or_undeclared_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve(empty.path()),
            Err(EndpointError::NoFile(_))
        ));
        let d = ws("{not json");
        assert!(matches!(
            resolve(d.path()),
            Err(EndpointError::BadJson { .. })
        ));
        let d = ws(r#"{"servers": {}}"#);
        assert!(matches!(
            resolve(d.path()),
            Err(EndpointError::NoServers(_))
        ));
        let d = ws(r#"{"mcpServers": {"other": {"type": "http", "url": "http://127.0.0.1:1/"}}}"#);
        let e = resolve(d.path()).unwrap_err();
        assert!(matches!(e, EndpointError::NotDeclared(_)));
        assert!(
            e.to_string()
                .contains("does not declare an \"ai-game-developer\" server")
        );
        let d = ws(&json!({"mcpServers": {"ai-game-developer": "http://127.0.0.1:1"}}).to_string());
        assert_eq!(resolve(d.path()), Err(EndpointError::EntryNotObject));
    }

    #[test]
    fn row_not_http_type_or_launching_is_refused() {
        for (e, want) in [
            (
                json!({"type": "stdio", "url": "http://127.0.0.1:1"}),
                EndpointError::NotHttpType(Some("stdio".into())),
            ),
            (
                json!({"type": "sse", "url": "http://127.0.0.1:1"}),
                EndpointError::NotHttpType(Some("sse".into())),
            ),
            (
                json!({"url": "http://127.0.0.1:1"}),
                EndpointError::NotHttpType(None),
            ),
            (
                json!({"type": "http", "url": "http://127.0.0.1:1", "command": "node"}),
                EndpointError::ForbiddenKey("command".into()),
            ),
            (
                json!({"type": "http", "url": "http://127.0.0.1:1", "args": []}),
                EndpointError::ForbiddenKey("args".into()),
            ),
            (
                json!({"type": "http", "url": "http://127.0.0.1:1", "env": {}}),
                EndpointError::ForbiddenKey("env".into()),
            ),
            (
                json!({"command": "sh", "args": ["-c", "x"]}),
                EndpointError::ForbiddenKey("command".into()),
            ),
            (
                json!({"type": "http", "url": "http://127.0.0.1:1", "headers": {"Authorization": "Bearer t"}}),
                EndpointError::ForbiddenKey("headers".into()),
            ),
            (json!({"type": "http"}), EndpointError::NoUrl),
        ] {
            let d = ws(&entry(e.clone()));
            assert_eq!(resolve(d.path()), Err(want), "{e}");
        }
    }

    #[test]
    fn row_not_http_scheme_or_not_loopback_is_refused() {
        for (url, ok) in [
            ("http://127.0.0.1:8080/mcp", true),
            ("http://localhost:8080", true),
            ("HTTP://LocalHost:8080/", true),
            ("http://127.3.2.1:9/x?y=1", true),
            ("http://[::1]:8080/mcp", true),
            ("http://127.0.0.1", true),
            ("https://127.0.0.1:8080", false),
            ("file:///tmp/sock", false),
            ("ws://127.0.0.1:8080", false),
            ("http://10.0.0.5:8080", false),
            ("http://example.com:8080", false),
            ("http://localhost.example.com", false),
            ("http://127.0.0.1.nip.io", false),
            ("http://[::2]:80", false),
            ("http://user:pass@127.0.0.1:8080", false),
            ("http://127.0.0.1:0", false),
            ("http://127.0.0.1:99999", false),
            ("http://127.0.0.1:80#frag", false),
            ("http:// 127.0.0.1", false),
            ("127.0.0.1:8080", false),
            ("http://:8080", false),
        ] {
            let d = ws(&entry(json!({"type": "http", "url": url})));
            assert_eq!(resolve(d.path()).is_ok(), ok, "{url}");
        }
        let d = ws(&entry(
            json!({"type": "http", "url": "http://user:pw-secret@127.0.0.1:1"}),
        ));
        assert!(
            !resolve(d.path())
                .unwrap_err()
                .to_string()
                .contains("pw-secret")
        );
        let ok = check_url("http://localhost:8080/mcp").unwrap();
        assert_eq!(
            (ok.host.as_str(), ok.port, ok.url.as_str()),
            ("localhost", 8080, "http://localhost:8080/mcp")
        );
    }

    #[test]
    fn row_subfolder_of_a_declaring_workspace_is_refused() {
        let d = ws(&entry(
            json!({"type": "http", "url": "http://127.0.0.1:8080"}),
        ));
        assert!(resolve(d.path()).is_ok());
        let sub = d.path().join("Assets");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(matches!(resolve(&sub), Err(EndpointError::NoFile(_))));
    }

    #[test]
    fn row_other_servers_are_ignored_and_nothing_of_theirs_travels() {
        let doc = json!({"mcpServers": {
            "arkon": {"type": "http", "url": "https://arkon.example/mcp", "headers": {"Authorization": "Bearer ARKON-TOKEN"}},
            "local": {"command": "node", "args": ["server.js"], "env": {"KEY": "LOCAL-KEY"}},
            "ai-game-developer": {"type": "http", "url": "http://127.0.0.1:5050/"}
        }})
        .to_string();
        let d = ws(&doc);
        let e = resolve(d.path()).unwrap();
        assert_eq!(e.url, "http://127.0.0.1:5050/");
        let shown = format!("{e:?}");
        assert!(!shown.contains("ARKON") && !shown.contains("LOCAL-KEY"));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_mcp_json_is_not_trusted() {
        let real = ws(&entry(
            json!({"type": "http", "url": "http://127.0.0.1:8080"}),
        ));
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(real.path().join(".mcp.json"), d.path().join(".mcp.json"))
            .unwrap();
        assert!(matches!(resolve(d.path()), Err(EndpointError::NotPlain(_))));
    }
}
