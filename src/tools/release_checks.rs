//! The checks `release` runs: `releaseChecks` from session-lock/config.json when it is set,
//! else derived from what the repo has, in this order:
//!
//! 1. a typecheck script in package.json (`typecheck`, `type-check`, `check-types`, `tsc`), run
//!    with the package manager the lockfile names (`npm run typecheck`, `pnpm run …`);
//! 2. the TypeScript projects at the top: the projects a `tsconfig.json` references when it is
//!    a solution file (only `references`, no sources of its own), else `tsconfig.json` itself,
//!    else every `tsconfig.*.json` — each as `npx --no-install tsc --noEmit -p <file>`;
//! 3. nothing: release then checks only that the stream's files are committed.
//!
//! Derived at each release (and shown by `guard install` and `guard doctor`), so a repo laid
//! out unlike the protocol's own app gets checks it can pass, and a session (which cannot edit
//! the protected config) is not stuck with checks of files that do not exist.

use crate::config::Config;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// Package scripts that typecheck, in the order they are preferred.
pub const TYPECHECK_SCRIPTS: [&str; 4] = ["typecheck", "type-check", "check-types", "tsc"];

/// Lockfiles and the package manager each means; npm without one.
const LOCKFILES: [(&str, &str); 5] = [
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("bun.lock", "bun"),
    ("bun.lockb", "bun"),
    ("package-lock.json", "npm"),
];

/// The checks release runs, and where they came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chosen {
    pub checks: Vec<String>,
    /// `session-lock/config.json`, or what they were derived from.
    pub source: String,
    /// Derived from the repo (no `releaseChecks` in the config).
    pub derived: bool,
}

impl Chosen {
    /// One line for people: the checks and their source.
    pub fn describe(&self) -> String {
        let list = if self.checks.is_empty() {
            "none".to_string()
        } else {
            self.checks
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.derived {
            format!(
                "{list} ({}; set releaseChecks in session-lock/config.json to choose others)",
                self.source
            )
        } else {
            format!("{list} (releaseChecks in {})", self.source)
        }
    }
}

/// The checks for `root` under `config`.
pub fn chosen(root: &Path, config: &Config) -> Chosen {
    match &config.release_checks {
        Some(checks) => Chosen {
            checks: checks.clone(),
            source: "session-lock/config.json".into(),
            derived: false,
        },
        None => {
            let (checks, source) = derive(root);
            Chosen {
                checks,
                source,
                derived: true,
            }
        }
    }
}

/// A JSON file at the top of the repo, when it is there and parses (JSONC, as tsc reads it).
fn json_at(root: &Path, name: &str) -> Option<Value> {
    let text = crate::atomic::read_optional(&root.join(name)).ok()??;
    crate::json_edit::parse_value(&text).ok()
}

/// The checks derived from what `root` has, and a phrase saying from what.
pub fn derive(root: &Path) -> (Vec<String>, String) {
    if let Some(scripts) = json_at(root, "package.json")
        .as_ref()
        .and_then(|p| p.get("scripts"))
        .and_then(Value::as_object)
        && let Some(name) = TYPECHECK_SCRIPTS
            .into_iter()
            .find(|s| scripts.get(*s).is_some_and(Value::is_string))
    {
        let pm = LOCKFILES
            .iter()
            .find(|(file, _)| root.join(file).is_file())
            .map_or("npm", |(_, pm)| pm);
        return (
            vec![format!("{pm} run {name}")],
            format!("from package.json's `{name}` script"),
        );
    }
    let tsc = |p: &str| format!("npx --no-install tsc --noEmit -p {p}");
    if let Some(top) = json_at(root, "tsconfig.json") {
        let refs = solution_references(root, &top);
        if !refs.is_empty() {
            return (
                refs.iter().map(|r| tsc(r)).collect(),
                "from the projects tsconfig.json references".into(),
            );
        }
        return (vec![tsc("tsconfig.json")], "from tsconfig.json".into());
    }
    let mut named: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("tsconfig.") && n.ends_with(".json") && n.len() > 14)
        .collect();
    named.sort();
    if !named.is_empty() {
        return (
            named.iter().map(|n| tsc(n)).collect(),
            "from the tsconfig.*.json files at the top".into(),
        );
    }
    (
        Vec::new(),
        "nothing to derive them from: no typecheck script in package.json, no tsconfig*.json at the top".into(),
    )
}

/// The referenced project files of a solution-style `tsconfig.json` (one with `references` and
/// `files: []` or no sources of its own), each as a repo-relative path that exists.
fn solution_references(root: &Path, top: &Value) -> Vec<String> {
    let Some(refs) = top.get("references").and_then(Value::as_array) else {
        return Vec::new();
    };
    let own_sources = top
        .get("files")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
        || top.get("include").is_some();
    if own_sources {
        return Vec::new();
    }
    refs.iter()
        .filter_map(|r| r.get("path").and_then(Value::as_str))
        .filter_map(|p| {
            let p = p.trim_start_matches("./").trim_end_matches('/');
            let file = if p.ends_with(".json") {
                p.to_string()
            } else {
                format!("{p}/tsconfig.json")
            };
            root.join(&file).is_file().then_some(file)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_typecheck_script_comes_first_with_the_lockfiles_manager() {
        let r = repo(&[
            (
                "package.json",
                r#"{"scripts": {"build": "vite build", "check-types": "tsc -b", "typecheck": "tsc --noEmit"}}"#,
            ),
            ("tsconfig.json", "{}"),
        ]);
        assert_eq!(derive(r.path()).0, ["npm run typecheck"]);
        std::fs::write(r.path().join("pnpm-lock.yaml"), "").unwrap();
        let (checks, source) = derive(r.path());
        assert_eq!(checks, ["pnpm run typecheck"]);
        assert!(source.contains("`typecheck` script"), "{source}");
    }

    #[test]
    fn a_solution_tsconfig_gives_its_references() {
        let r = repo(&[
            ("package.json", r#"{"scripts": {"start": "electron ."}}"#),
            (
                "tsconfig.json",
                "{\n  // the app's two halves\n  \"files\": [],\n  \"references\": [{\"path\": \"./tsconfig.node.json\"}, {\"path\": \"./tsconfig.web.json\"}, {\"path\": \"packages/lib\"}, {\"path\": \"./gone.json\"}]\n}\n",
            ),
            ("tsconfig.node.json", "{}"),
            ("tsconfig.web.json", "{}"),
            ("packages/lib/tsconfig.json", "{}"),
        ]);
        assert_eq!(
            derive(r.path()).0,
            [
                "npx --no-install tsc --noEmit -p tsconfig.node.json",
                "npx --no-install tsc --noEmit -p tsconfig.web.json",
                "npx --no-install tsc --noEmit -p packages/lib/tsconfig.json",
            ]
        );
    }

    #[test]
    fn a_plain_tsconfig_or_named_ones_or_none() {
        let r = repo(&[(
            "tsconfig.json",
            r#"{"include": ["src"], "references": [{"path": "x"}]}"#,
        )]);
        assert_eq!(
            derive(r.path()).0,
            ["npx --no-install tsc --noEmit -p tsconfig.json"]
        );
        let r = repo(&[("tsconfig.web.json", "{}"), ("tsconfig.app.json", "{}")]);
        assert_eq!(
            derive(r.path()).0,
            [
                "npx --no-install tsc --noEmit -p tsconfig.app.json",
                "npx --no-install tsc --noEmit -p tsconfig.web.json",
            ]
        );
        let r = repo(&[("README.md", "x")]);
        let (checks, source) = derive(r.path());
        assert!(checks.is_empty());
        assert!(source.contains("no typecheck script"), "{source}");
    }

    #[test]
    fn the_config_wins_and_says_so() {
        let r = repo(&[("tsconfig.json", "{}")]);
        let mut cfg = Config::default();
        assert!(chosen(r.path(), &cfg).derived);
        cfg.release_checks = Some(vec!["true".into()]);
        let c = chosen(r.path(), &cfg);
        assert_eq!(c.checks, ["true"]);
        assert!(!c.derived);
        assert!(
            c.describe()
                .contains("releaseChecks in session-lock/config.json")
        );
        cfg.release_checks = Some(Vec::new());
        assert!(chosen(r.path(), &cfg).checks.is_empty(), "[] means none");
    }
}
