//! The path boundary of run-agent's restricted runs: `guard scope --root <dir>… [--allow-tool
//! <name>…]`, wired as the PreToolUse hook of a read-only review run or a workspace single-tool
//! run (see docs/run-agent.md).
//!
//! Unlike the normal guard this mode **fails closed**: anything it cannot decide (an unreadable
//! payload, a root or target that does not resolve, a directory too large to scan, its own panic
//! or a deadline) is a deny. The rules, each a unit test below:
//!
//! - only `Read`, `Grep` and `Glob` pass, plus the names given with `--allow-tool` (exact match);
//! - every root must resolve (symlinks followed); one root that does not denies everything;
//! - the target (`Read.file_path`, `Grep.path`, `Glob.path`; Grep and Glob without a `path` use
//!   the session's cwd, as the tools do) is resolved against the payload's `cwd`, never the
//!   process cwd, then through symlinks; a target that does not resolve is denied;
//! - containment is by path components (`C:\proj\foo` is not inside `C:\proj\fo`);
//! - `Glob.pattern` and `Grep.glob` must stay below the base: a `..` segment, an absolute path
//!   (POSIX, `\`, `C:`) or a leading `~` denies;
//! - a directory target is scanned, recursively and cycle-safe, for symlinks that resolve outside
//!   every root (or do not resolve); more than [`SCAN_BUDGET`] entries denies (`too-large`);
//! - a client's config files that hold credentials ([`holds_credentials`]: `.mcp.json`, the
//!   client's settings, its login) are never read, whatever the roots say: a Read of one (by any
//!   link) denies, and so does a Grep of a folder that holds one (its matches, even file names
//!   alone, would tell the file's contents bit by bit). Glob, which reads names only, passes.

use crate::config::DecisionForm;
use crate::hook::{Client, Decision, Outcome, Payload, Refusal, Rule};
use crate::paths::lexical::{self, is_drive};
use crate::words::{HookEvent, Tool};
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The built-in tools a restricted run may use.
pub const READ_TOOLS: [Tool; 3] = [Tool::Read, Tool::Grep, Tool::Glob];
/// How many directory entries a symlink scan may visit before it gives up and denies.
pub const SCAN_BUDGET: usize = 5000;
/// How long one hook run may take before it denies.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Why a tool call was denied. `Display` is the reason the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// A tool outside Read/Grep/Glob and the explicitly allowed names.
    Tool(String),
    /// The hook was started without any root.
    NoRoots,
    /// A scope root does not resolve; the whole list is void.
    Root(String),
    /// A required input field is missing or not a string.
    Input { tool: String, key: String },
    /// A relative target with no absolute session cwd to resolve it against.
    NoCwd(String),
    /// The target does not resolve (missing, dangling link, no permission).
    Unresolved(String),
    /// The resolved target lies outside every root.
    Outside(String),
    /// A glob pattern that could leave the base directory.
    Pattern { key: String, pattern: String },
    /// A symlink inside a scanned directory resolves outside every root.
    SymlinkEscapes { link: String, target: String },
    /// A symlink inside a scanned directory does not resolve.
    SymlinkDangling(String),
    /// A directory inside the target could not be listed.
    Unreadable(String),
    /// The scan passed its budget.
    TooLarge(String),
    /// The target is a client config file that holds credentials.
    Credentials(String),
    /// A Grep of a folder that holds such a file (the folder, the file).
    CredentialsBelow { dir: String, file: String },
    /// The hook itself failed (bad payload, panic, deadline).
    Internal(String),
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::Tool(t) => write!(
                f,
                "tool '{t}' is not allowed in this restricted run (only Read, Grep and Glob)"
            ),
            Denial::NoRoots => f.write_str("no confirmed review scope: every path is denied"),
            Denial::Root(r) => write!(
                f,
                "scope root does not resolve: {r}; the whole scope is void, every path is denied"
            ),
            Denial::Input { tool, key } => write!(f, "{tool}: '{key}' is missing or not a string"),
            Denial::NoCwd(p) => {
                write!(
                    f,
                    "cannot resolve relative path {p}: the session has no cwd"
                )
            }
            Denial::Unresolved(p) => write!(f, "path does not resolve: {p}"),
            Denial::Outside(p) => write!(f, "Path outside confirmed review scope: {p}"),
            Denial::Pattern { key, pattern } => write!(
                f,
                "{key} '{pattern}' may leave the searched directory ('..', absolute or '~' paths are not allowed)"
            ),
            Denial::SymlinkEscapes { link, target } => write!(
                f,
                "symlink {link} points outside confirmed review scope ({target})"
            ),
            Denial::SymlinkDangling(l) => write!(f, "symlink does not resolve: {l}"),
            Denial::Unreadable(d) => write!(f, "cannot list directory {d}"),
            Denial::TooLarge(d) => write!(
                f,
                "too-large: {d} holds more than {SCAN_BUDGET} entries; search a narrower path"
            ),
            Denial::Credentials(p) => write!(
                f,
                "{p} is a client config file that holds credentials (MCP servers' headers and env, settings' env, logins): never readable in this restricted run"
            ),
            Denial::CredentialsBelow { dir, file } => write!(
                f,
                "{dir} holds {file}, a client config file with credentials: a search there could reveal them; search a path that does not hold it"
            ),
            Denial::Internal(why) => write!(f, "restricted run: {why}; denied"),
        }
    }
}

/// The scope as the hook was started: raw roots and extra allowed tool names.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub roots: Vec<String>,
    pub allow_tools: Vec<String>,
}

/// True when a glob pattern could reach outside the directory it is evaluated in.
pub fn pattern_escapes(pattern: &str) -> bool {
    let p = pattern.trim();
    if p.starts_with('/') || p.starts_with('\\') || p.starts_with('~') || is_drive(p) {
        return true;
    }
    p.split(['/', '\\', '{', '}', ','])
        .any(|segment| segment.trim() == "..")
}

/// The roots, resolved through symlinks. One failure voids them all.
pub fn resolve_roots(raw: &[String]) -> Result<Vec<PathBuf>, Denial> {
    if raw.is_empty() {
        return Err(Denial::NoRoots);
    }
    raw.iter()
        .map(|r| {
            let p = Path::new(r);
            if r.trim().is_empty() || !p.is_absolute() {
                return Err(Denial::Root(r.clone()));
            }
            std::fs::canonicalize(p).map_err(|_| Denial::Root(r.clone()))
        })
        .collect()
}

fn text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn inside_any(roots: &[PathBuf], target: &Path) -> bool {
    let ci = crate::paths::default_case_insensitive();
    let t = text(target);
    roots.iter().any(|r| lexical::within(&t, &text(r), ci))
}

/// Resolves a payload path: relative ones against the session's cwd, then through symlinks.
pub fn resolve_target(cwd: &str, raw: &str) -> Result<PathBuf, Denial> {
    let p = Path::new(raw);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        let base = Path::new(cwd);
        if cwd.trim().is_empty() || !base.is_absolute() {
            return Err(Denial::NoCwd(raw.to_string()));
        }
        base.join(p)
    };
    std::fs::canonicalize(&joined).map_err(|_| Denial::Unresolved(text(&joined)))
}

/// The file names that are a client's config with credentials: its MCP servers (their headers and
/// env), its global state, its login.
const CREDENTIAL_FILES: [&str; 3] = [".mcp.json", ".claude.json", ".credentials.json"];
/// The client's settings (their `env` may hold keys), inside a `.claude` folder.
const CLIENT_SETTINGS: [&str; 2] = ["settings.json", "settings.local.json"];

/// True when the (resolved) path is a client config file that holds credentials.
pub fn holds_credentials(path: &Path) -> bool {
    let ci = crate::paths::default_case_insensitive();
    let same = |a: &str, b: &str| {
        if ci {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    let name = |p: Option<&std::ffi::OsStr>| p.map(|n| n.to_string_lossy().into_owned());
    let Some(file) = name(path.file_name()) else {
        return false;
    };
    if CREDENTIAL_FILES.iter().any(|c| same(c, &file)) {
        return true;
    }
    let parent = name(path.parent().and_then(Path::file_name));
    parent.is_some_and(|d| same(&d, ".claude")) && CLIENT_SETTINGS.iter().any(|c| same(c, &file))
}

/// Walks `dir` looking for symlinks that leave every root, and (with `contents`: the tool reads
/// what files hold) for client config files with credentials. Bounded by [`SCAN_BUDGET`]
/// entries; follows links that stay inside, never twice into the same directory.
pub fn scan_for_escaping_symlinks(
    dir: &Path,
    roots: &[PathBuf],
    contents: bool,
) -> Result<(), Denial> {
    let credentials = |file: &Path| {
        (contents && holds_credentials(file)).then(|| Denial::CredentialsBelow {
            dir: text(dir),
            file: text(file),
        })
    };
    let mut visited: HashSet<PathBuf> = HashSet::new();
    visited.insert(dir.to_path_buf());
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(current) = stack.pop() {
        let entries =
            std::fs::read_dir(&current).map_err(|_| Denial::Unreadable(text(&current)))?;
        for entry in entries {
            let entry = entry.map_err(|_| Denial::Unreadable(text(&current)))?;
            seen += 1;
            if seen > SCAN_BUDGET {
                return Err(Denial::TooLarge(text(dir)));
            }
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|_| Denial::Unresolved(text(&path)))?;
            if kind.is_symlink() {
                let real = std::fs::canonicalize(&path)
                    .map_err(|_| Denial::SymlinkDangling(text(&path)))?;
                if !inside_any(roots, &real) {
                    return Err(Denial::SymlinkEscapes {
                        link: text(&path),
                        target: text(&real),
                    });
                }
                if let Some(d) = credentials(&real) {
                    return Err(d);
                }
                if real.is_dir() && visited.insert(real.clone()) {
                    stack.push(real);
                }
            } else if kind.is_dir() && visited.insert(path.clone()) {
                stack.push(path);
            } else if let Some(d) = credentials(&path) {
                return Err(d);
            }
        }
    }
    Ok(())
}

fn bad_input(p: &Payload, key: &str) -> Denial {
    Denial::Input {
        tool: p.tool_name.to_string(),
        key: key.to_string(),
    }
}

/// A string field that must be present and not blank.
fn required(p: &Payload, key: &str) -> Result<String, Denial> {
    match p.tool_input.get(key).and_then(serde_json::Value::as_str) {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err(bad_input(p, key)),
    }
}

/// An optional string field: absent, null or empty → `None`; any other non-string → denied.
fn optional(p: &Payload, key: &str) -> Result<Option<String>, Denial> {
    match p.tool_input.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad_input(p, key)),
    }
}

/// Decides one PreToolUse call.
pub fn check(p: &Payload, scope: &Scope) -> Result<(), Denial> {
    if scope.allow_tools.iter().any(|t| t == p.tool_name.as_str()) {
        return Ok(());
    }
    if !READ_TOOLS.contains(&p.tool_name) {
        return Err(Denial::Tool(p.tool_name.to_string()));
    }
    let roots = resolve_roots(&scope.roots)?;
    let target = match p.tool_name {
        Tool::Read => required(p, "file_path")?,
        _ => optional(p, "path")?.unwrap_or_else(|| p.cwd.clone()),
    };
    let pattern_key = match p.tool_name {
        Tool::Glob => Some(("pattern", required(p, "pattern")?)),
        Tool::Grep => optional(p, "glob")?.map(|g| ("glob", g)),
        _ => None,
    };
    if let Some((key, pattern)) = pattern_key
        && pattern_escapes(&pattern)
    {
        return Err(Denial::Pattern {
            key: key.to_string(),
            pattern,
        });
    }
    if target.trim().is_empty() {
        return Err(Denial::NoCwd(String::new()));
    }
    let real = resolve_target(&p.cwd, &target)?;
    if !inside_any(&roots, &real) {
        return Err(Denial::Outside(text(&real)));
    }
    if holds_credentials(&real) {
        return Err(Denial::Credentials(text(&real)));
    }
    if real.is_dir() {
        scan_for_escaping_symlinks(&real, &roots, p.tool_name != Tool::Glob)?;
    }
    Ok(())
}

/// One hook run on `bytes`: a deny for anything not proven inside the scope.
pub fn decide(bytes: &[u8], scope: &Scope) -> Decision {
    if bytes.len() > crate::hook::MAX_PAYLOAD {
        return deny(&Denial::Internal("payload too large".into()));
    }
    let p = match Payload::parse(bytes) {
        Ok(p) => p,
        Err(e) => return deny(&Denial::Internal(e)),
    };
    if !p.event.is_empty() && p.event != HookEvent::PreToolUse {
        return Decision::allow(p.event);
    }
    match check(&p, scope) {
        Ok(()) => Decision::allow(HookEvent::PreToolUse),
        Err(d) => deny(&d),
    }
}

fn deny(d: &Denial) -> Decision {
    Decision::deny(
        HookEvent::PreToolUse,
        Refusal::new(Rule::Boundary, d.to_string()),
    )
}

/// `guard scope`: reads the payload on stdin and decides, denying on its own failure, panic or
/// deadline.
pub fn hook_mode(scope: Scope) -> Outcome {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let out = std::panic::catch_unwind(|| {
            let mut bytes = Vec::new();
            let limit = (crate::hook::MAX_PAYLOAD + 1) as u64;
            match std::io::stdin().take(limit).read_to_end(&mut bytes) {
                Ok(_) => decide(&bytes, &scope),
                Err(e) => deny(&Denial::Internal(format!("cannot read stdin: {e}"))),
            }
        })
        .unwrap_or_else(|_| deny(&Denial::Internal("internal error".into())));
        let _ = tx.send(out);
    });
    let decision = rx.recv_timeout(DEADLINE).unwrap_or_else(|_| {
        deny(&Denial::Internal(format!(
            "no decision within {}s",
            DEADLINE.as_secs()
        )))
    });
    crate::hook::output::render(&decision, Client::ClaudeCode, DecisionForm::Json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `target` at or below `root`, the order the scope reads them in.
    fn within(root: &str, target: &str, ci: bool) -> bool {
        lexical::within(target, root, ci)
    }
    use std::fs;

    fn payload(tool: &str, cwd: &Path, input: serde_json::Value) -> Payload {
        let raw = json!({
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": cwd.to_string_lossy(),
            "tool_name": tool,
            "tool_input": input,
        });
        Payload::parse(raw.to_string().as_bytes()).unwrap()
    }

    /// A `Read` of `file_path` from `cwd`.
    fn read(cwd: &Path, file_path: impl serde::Serialize) -> Payload {
        payload("Read", cwd, json!({ "file_path": file_path }))
    }

    /// A temp tree: `<top>/scope` (the root, with `a.txt`, `sub/b.txt`) and `<top>/outside`
    /// (with `secret.txt`).
    struct Tree {
        _dir: tempfile::TempDir,
        top: PathBuf,
        root: PathBuf,
        outside: PathBuf,
    }

    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        let root = top.join("scope");
        let outside = top.join("outside");
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("a.txt"), "a").unwrap();
        fs::write(root.join("sub/b.txt"), "b").unwrap();
        fs::write(outside.join("secret.txt"), "secret").unwrap();
        Tree {
            _dir: dir,
            top,
            root,
            outside,
        }
    }

    fn scope_of(roots: &[&Path]) -> Scope {
        Scope {
            roots: roots.iter().map(|r| text(r)).collect(),
            allow_tools: vec![],
        }
    }

    #[test]
    fn a_clients_config_with_credentials_is_never_read_nor_searched() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        fs::write(t.root.join(".mcp.json"), "{}").unwrap();
        fs::create_dir_all(t.root.join("sub/.claude")).unwrap();
        fs::write(t.root.join("sub/.claude/settings.local.json"), "{}").unwrap();
        fs::write(t.root.join("sub/settings.json"), "{}").unwrap(); // not the client's
        let mcp = text(&t.root.join(".mcp.json"));
        assert_eq!(
            check(&read(&t.root, ".mcp.json"), &s),
            Err(Denial::Credentials(mcp))
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(t.root.join(".mcp.json"), t.root.join("sub/alias")).unwrap();
            let p = read(&t.root, "sub/alias");
            assert!(matches!(check(&p, &s), Err(Denial::Credentials(_))));
        }
        let p = read(&t.root, "sub/.claude/settings.local.json");
        assert!(matches!(check(&p, &s), Err(Denial::Credentials(_))));
        assert_eq!(check(&read(&t.root, "sub/settings.json"), &s), Ok(()));
        // A search of a folder that holds one is denied; Glob reads names only.
        for dir in [&t.root, &t.root.join("sub")] {
            let grep = payload("Grep", &t.root, json!({"pattern": "x", "path": dir}));
            assert!(
                matches!(check(&grep, &s), Err(Denial::CredentialsBelow { .. })),
                "{dir:?}"
            );
            let glob = payload("Glob", &t.root, json!({"pattern": "*", "path": dir}));
            assert_eq!(check(&glob, &s), Ok(()), "{dir:?}");
        }
        let grep = payload(
            "Grep",
            &t.root,
            json!({"pattern": "x", "path": t.root.join("sub/b.txt")}),
        );
        assert_eq!(check(&grep, &s), Ok(()));
    }

    #[test]
    fn only_read_grep_glob_pass_unless_allowed_by_name() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        for tool in [
            "Bash",
            "Edit",
            "Write",
            "Agent",
            "mcp__x__y",
            "NotebookEdit",
            "",
        ] {
            let p = payload(tool, &t.root, json!({"file_path": t.root.join("a.txt")}));
            assert_eq!(check(&p, &s), Err(Denial::Tool(tool.into())), "{tool}");
        }
        let p = read(&t.root, t.root.join("a.txt"));
        assert_eq!(check(&p, &s), Ok(()));
        let mut allowed = s.clone();
        allowed.allow_tools = vec!["mcp__unity-state__editor-application-get-state".into()];
        let p = payload(
            "mcp__unity-state__editor-application-get-state",
            &t.root,
            json!({}),
        );
        assert_eq!(check(&p, &allowed), Ok(()));
        let p = payload("mcp__unity-state__other", &t.root, json!({}));
        assert!(matches!(check(&p, &allowed), Err(Denial::Tool(_))));
    }

    #[test]
    fn read_inside_passes_outside_is_denied() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        let ok = read(&t.root, t.root.join("sub/b.txt"));
        assert_eq!(check(&ok, &s), Ok(()));
        let out = read(&t.root, t.outside.join("secret.txt"));
        let d = check(&out, &s).unwrap_err();
        assert_eq!(d, Denial::Outside(text(&t.outside.join("secret.txt"))));
        assert!(
            d.to_string()
                .starts_with("Path outside confirmed review scope: ")
        );
        let up = read(&t.root, "../outside/secret.txt");
        assert!(matches!(check(&up, &s), Err(Denial::Outside(_))));
    }

    #[test]
    fn relative_targets_resolve_against_the_payload_cwd() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        // Relative to the session cwd (the root), not the test process's cwd.
        let p = read(&t.root, "sub/b.txt");
        assert_eq!(check(&p, &s), Ok(()));
        // The same relative path from a cwd outside the scope lands outside.
        fs::create_dir_all(t.outside.join("sub")).unwrap();
        fs::write(t.outside.join("sub/b.txt"), "x").unwrap();
        let p = read(&t.outside, "sub/b.txt");
        assert!(matches!(check(&p, &s), Err(Denial::Outside(_))));
        // No cwd: a relative path cannot be resolved.
        let p = read(Path::new(""), "sub/b.txt");
        assert!(matches!(check(&p, &s), Err(Denial::NoCwd(_))));
    }

    #[test]
    fn targets_that_do_not_resolve_are_denied() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        let p = read(&t.root, t.root.join("nope.txt"));
        assert!(matches!(check(&p, &s), Err(Denial::Unresolved(_))));
        let p = payload("Read", &t.root, json!({}));
        assert!(matches!(check(&p, &s), Err(Denial::Input { .. })));
        let p = read(&t.root, 7);
        assert!(matches!(check(&p, &s), Err(Denial::Input { .. })));
        let p = payload("Grep", &t.root, json!({"pattern": "x", "path": ["a"]}));
        assert!(matches!(check(&p, &s), Err(Denial::Input { .. })));
    }

    #[test]
    fn any_root_failing_to_resolve_voids_the_scope() {
        let t = tree();
        let good = text(&t.root);
        let bad = text(&t.top.join("missing-root"));
        let s = Scope {
            roots: vec![good.clone(), bad.clone()],
            allow_tools: vec![],
        };
        let p = read(&t.root, t.root.join("a.txt"));
        assert_eq!(check(&p, &s), Err(Denial::Root(bad)));
        let relative = Scope {
            roots: vec![good, "scope".into()],
            allow_tools: vec![],
        };
        assert!(matches!(check(&p, &relative), Err(Denial::Root(_))));
        assert_eq!(check(&p, &Scope::default()), Err(Denial::NoRoots));
    }

    #[test]
    fn grep_and_glob_without_path_use_the_session_cwd() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        let inside = payload("Grep", &t.root.join("sub"), json!({"pattern": "b"}));
        assert_eq!(check(&inside, &s), Ok(()));
        let outside = payload("Glob", &t.outside, json!({"pattern": "*.txt"}));
        assert_eq!(check(&outside, &s), Err(Denial::Outside(text(&t.outside))));
        let empty_path = payload("Grep", &t.outside, json!({"pattern": "b", "path": ""}));
        assert!(matches!(check(&empty_path, &s), Err(Denial::Outside(_))));
        let explicit = payload(
            "Glob",
            &t.outside,
            json!({"pattern": "*.txt", "path": t.root}),
        );
        assert_eq!(check(&explicit, &s), Ok(()));
    }

    #[test]
    fn patterns_that_climb_or_are_absolute_are_denied() {
        for bad in [
            "../outside/**",
            "**/../../x",
            "a/..",
            "..",
            r"..\outside\*",
            "{..,src}/x",
            "/etc/*",
            r"\\server\share\*",
            r"C:\Users\*",
            "C:/Users/*",
            "c:foo",
            "~/x",
        ] {
            assert!(pattern_escapes(bad), "{bad}");
        }
        for good in ["**/*.rs", "*.{ts,tsx}", "src/**/a..b.txt", "..foo/x", "x.."] {
            assert!(!pattern_escapes(good), "{good}");
        }
        let t = tree();
        let s = scope_of(&[&t.root]);
        let glob = payload("Glob", &t.root, json!({"pattern": "../outside/**"}));
        assert!(matches!(check(&glob, &s), Err(Denial::Pattern { .. })));
        let grep = payload(
            "Grep",
            &t.root,
            json!({"pattern": "x", "glob": "/etc/**", "path": t.root}),
        );
        assert!(matches!(check(&grep, &s), Err(Denial::Pattern { .. })));
        let fine = payload("Grep", &t.root, json!({"pattern": "x", "glob": "*.txt"}));
        assert_eq!(check(&fine, &s), Ok(()));
    }

    #[test]
    fn containment_is_by_components_posix_and_windows() {
        assert!(within("/proj/foo", "/proj/foo", false));
        assert!(within("/proj/foo", "/proj/foo/a/b", false));
        assert!(!within("/proj/fo", "/proj/foo", false));
        assert!(!within("/proj/foo", "/proj/foobar/x", false));
        assert!(!within("/proj/foo", "/proj", false));
        assert!(within(r"C:\proj\foo", r"C:\proj\foo\src\a.ts", false));
        assert!(within(r"C:\proj\foo", "C:/proj/foo/src", false));
        assert!(!within(r"C:\proj\fo", r"C:\proj\foo", false));
        assert!(!within(r"C:\proj\foo", r"C:\proj\foobar", false));
        assert!(!within(r"C:\proj\foo", r"D:\proj\foo\a", false));
        assert!(within(r"C:\proj\foo", r"\\?\C:\proj\foo\a", false));
        assert!(within(r"C:\Proj\Foo", r"c:\proj\foo\a", true));
        assert!(!within(r"C:\Proj\Foo", r"c:\proj\foo\a", false));
        assert!(within(r"\\srv\share\p", r"\\srv\share\p\x", true));
        assert!(!within(r"\\srv\share\p", r"\\other\share\p\x", true));
    }

    /// Issue 11: on Windows a rooted path without a drive is on the cwd's drive (std's join,
    /// as Node's path.resolve in the client), so it is inside the scope when the drive's path is.
    #[cfg(windows)]
    #[test]
    fn a_rooted_path_without_a_drive_is_on_the_cwd_s_drive() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        let no_drive = |p: &Path| {
            let full = text(p);
            let plain = full.strip_prefix(r"\\?\").unwrap_or(&full).to_string();
            is_drive(&plain).then(|| plain[2..].to_string())
        };
        let (Some(inside), Some(outside)) = (
            no_drive(&t.root.join("a.txt")),
            no_drive(&t.outside.join("secret.txt")),
        ) else {
            println!("skipped: the temp folder is not on a drive");
            return;
        };
        assert_eq!(check(&read(&t.root, &inside), &s), Ok(()));
        assert_eq!(check(&read(&t.root, inside.replace('\\', "/")), &s), Ok(()));
        assert!(matches!(
            check(&read(&t.root, &outside), &s),
            Err(Denial::Outside(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_for_targets() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        std::os::unix::fs::symlink(t.outside.join("secret.txt"), t.root.join("link.txt")).unwrap();
        let p = read(&t.root, t.root.join("link.txt"));
        assert_eq!(
            check(&p, &s),
            Err(Denial::Outside(text(&t.outside.join("secret.txt"))))
        );
        // A link from outside into the scope is fine: the real target is inside.
        std::os::unix::fs::symlink(t.root.join("a.txt"), t.outside.join("in.txt")).unwrap();
        let p = read(&t.root, t.outside.join("in.txt"));
        assert_eq!(check(&p, &s), Ok(()));
        // A root given through a symlink resolves to its real place.
        std::os::unix::fs::symlink(&t.root, t.top.join("alias")).unwrap();
        let via = scope_of(&[&t.top.join("alias")]);
        let p = read(&t.root, t.root.join("a.txt"));
        assert_eq!(check(&p, &via), Ok(()));
    }

    #[cfg(unix)]
    #[test]
    fn directory_scan_finds_nested_escaping_symlinks() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        fs::create_dir_all(t.root.join("sub/deep")).unwrap();
        std::os::unix::fs::symlink(&t.outside, t.root.join("sub/deep/escape")).unwrap();
        let grep = payload("Grep", &t.root, json!({"pattern": "secret"}));
        assert!(matches!(
            check(&grep, &s),
            Err(Denial::SymlinkEscapes { .. })
        ));
        // A relative path with `..` resolves to `sub`, which still holds the link.
        let narrow = payload(
            "Glob",
            &t.root,
            json!({"pattern": "*", "path": "sub/deep/.."}),
        );
        assert!(matches!(
            check(&narrow, &s),
            Err(Denial::SymlinkEscapes { .. })
        ));
        let a_only = payload("Grep", &t.root, json!({"pattern": "a", "path": "a.txt"}));
        assert_eq!(check(&a_only, &s), Ok(()));
    }

    #[cfg(unix)]
    #[test]
    fn directory_scan_follows_inner_links_through_chains_and_cycles() {
        let t = tree();
        let s = scope_of(&[&t.root]);
        // A link to a directory inside the scope that holds a link outside: a chain.
        fs::create_dir_all(t.root.join("hidden")).unwrap();
        std::os::unix::fs::symlink(t.outside.join("secret.txt"), t.root.join("hidden/s")).unwrap();
        let other = t.top.join("other-root");
        fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(t.root.join("hidden"), other.join("hop")).unwrap();
        let two = scope_of(&[&other, &t.root]);
        let p = payload("Grep", &other, json!({"pattern": "x"}));
        assert!(matches!(
            check(&p, &two),
            Err(Denial::SymlinkEscapes { .. })
        ));
        // A cycle inside the scope terminates and passes.
        fs::remove_file(t.root.join("hidden/s")).unwrap();
        std::os::unix::fs::symlink(&t.root, t.root.join("sub/loop")).unwrap();
        std::os::unix::fs::symlink(t.root.join("sub"), t.root.join("hidden/up")).unwrap();
        let p = payload("Grep", &t.root, json!({"pattern": "x"}));
        assert_eq!(check(&p, &s), Ok(()));
        // A dangling link denies (it cannot be shown to stay inside).
        std::os::unix::fs::symlink(t.top.join("gone"), t.root.join("sub/dangling")).unwrap();
        assert!(matches!(check(&p, &s), Err(Denial::SymlinkDangling(_))));
    }

    #[test]
    fn scan_over_budget_is_too_large() {
        let t = tree();
        let big = t.root.join("big");
        fs::create_dir_all(&big).unwrap();
        for i in 0..SCAN_BUDGET {
            fs::write(big.join(format!("f{i}")), "").unwrap();
        }
        let s = scope_of(&[&t.root]);
        let p = payload("Glob", &t.root, json!({"pattern": "*", "path": big}));
        assert_eq!(check(&p, &s), Ok(()), "exactly the budget passes");
        fs::write(big.join("one-more"), "").unwrap();
        let d = check(&p, &s).unwrap_err();
        assert_eq!(d, Denial::TooLarge(text(&big)));
        assert!(d.to_string().starts_with("too-large"));
    }

    #[test]
    fn decide_fails_closed_and_speaks_json() {
        let s = Scope {
            roots: vec!["/".into()],
            allow_tools: vec![],
        };
        for bad in [&b"not json"[..], b"[1]", b""] {
            let d = decide(bad, &s);
            assert!(d.is_block(), "{:?}", String::from_utf8_lossy(bad));
            let out = crate::hook::output::render(&d, Client::ClaudeCode, DecisionForm::Json);
            assert_eq!(out.code, 0);
            let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        }
        let bash = json!({"hook_event_name":"PreToolUse","tool_name":"Bash","cwd":"/","tool_input":{"command":"ls"}});
        assert!(decide(bash.to_string().as_bytes(), &s).is_block());
        let other = json!({"hook_event_name":"SessionStart","cwd":"/"});
        assert_eq!(
            decide(other.to_string().as_bytes(), &s),
            Decision::allow(HookEvent::SessionStart)
        );
    }
}
