//! Whether Gemini CLI trusts the repo's folder, as it decides it: `GEMINI_CLI_TRUST_WORKSPACE`,
//! folder trust switched off (`security.folderTrust.enabled: false`), or the longest matching
//! rule of `trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else in its user folder).
//! Gemini reads a project's settings, hooks included, only in a trusted folder; `hooksConfig`
//! can switch hooks off altogether or by name.

use super::name;
use super::{Client, GEMINI_HOOK_NAME, config_file, json_file};
use crate::tools::guard::doctor::{Check, Level, check};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Gemini's user folder: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
fn gemini_dir() -> Option<PathBuf> {
    std::env::var_os("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(crate::sessions::home_dir)
        .map(|h| h.join(".gemini"))
}

/// Whether Gemini's rules in `trustedFolders.json` trust `folder`: the longest rule whose folder
/// (its parent for `TRUST_PARENT`) holds `folder` decides; `None` when none does.
pub fn gemini_rules_trust(rules: &Map<String, Value>, folder: &Path) -> Option<bool> {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let folder = real(folder);
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in rules {
        let Some(level) = level.as_str() else {
            continue;
        };
        let rule_path = Path::new(rule);
        let effective = if level == "TRUST_PARENT" {
            rule_path.parent().unwrap_or(rule_path)
        } else {
            rule_path
        };
        if folder.starts_with(real(effective)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    match best?.1 {
        "DO_NOT_TRUST" => Some(false),
        "TRUST_FOLDER" | "TRUST_PARENT" => Some(true),
        _ => None,
    }
}

/// The trust Gemini needs: the folder trusted (or folder trust off), and hooks not disabled.
pub(super) fn check_trust(root: &Path) -> Check {
    let dir = gemini_dir();
    let user = dir
        .as_ref()
        .and_then(|d| json_file(&d.join("settings.json")));
    let project = json_file(&root.join(config_file(Client::Gemini)));
    let system = json_file(Path::new(if cfg!(windows) {
        r"C:\ProgramData\gemini-cli\settings.json"
    } else if cfg!(target_os = "macos") {
        "/Library/Application Support/GeminiCli/settings.json"
    } else {
        "/etc/gemini-cli/settings.json"
    }));
    let all = [&system, &user, &project];
    let off = all.iter().filter_map(|s| s.as_ref()).find_map(|s| {
        if s.pointer("/hooksConfig/enabled") == Some(&Value::Bool(false)) {
            Some("hooksConfig.enabled is false".to_string())
        } else {
            s.pointer("/hooksConfig/disabled")
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|n| n == GEMINI_HOOK_NAME))
                .then(|| format!("hooksConfig.disabled lists \"{GEMINI_HOOK_NAME}\""))
        }
    });
    if let Some(why) = off {
        return check(
            name(Client::Gemini, "trust"),
            Level::Fail,
            format!("Gemini runs no guard hook: {why} in a settings file it reads"),
            Some("remove that setting".into()),
        );
    }
    let trust_off = [&system, &user]
        .iter()
        .filter_map(|s| s.as_ref())
        .any(|s| s.pointer("/security/folderTrust/enabled") == Some(&Value::Bool(false)));
    let env = std::env::var("GEMINI_CLI_TRUST_WORKSPACE").ok();
    let file = std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dir.as_ref().map(|d| d.join("trustedFolders.json")));
    let rules = file.as_deref().and_then(json_file);
    let by_rules = rules
        .as_ref()
        .and_then(Value::as_object)
        .and_then(|r| gemini_rules_trust(r, root));
    let shown = file
        .as_ref()
        .map_or("~/.gemini/trustedFolders.json".into(), |f| {
            f.display().to_string()
        });
    let (level, detail) = if env.as_deref() == Some("false") {
        (
            Level::Fail,
            "GEMINI_CLI_TRUST_WORKSPACE=false: no folder is trusted".to_string(),
        )
    } else if env.as_deref() == Some("true") {
        (
            Level::Ok,
            "GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder (in this environment)".to_string(),
        )
    } else if trust_off {
        (
            Level::Ok,
            "folder trust is off (security.folderTrust.enabled is false)".to_string(),
        )
    } else {
        match by_rules {
            Some(true) => (Level::Ok, format!("{shown} trusts {}", root.display())),
            Some(false) => (
                Level::Fail,
                format!(
                    "{shown} says not to trust {}: Gemini loads none of its hooks",
                    root.display()
                ),
            ),
            None => (
                Level::Fail,
                format!(
                    "{} is not a trusted folder, so Gemini loads none of its hooks (a headless run refuses to start; with --skip-trust it starts but still ignores the project's hooks)",
                    root.display()
                ),
            ),
        }
    };
    let fix = (level != Level::Ok).then(|| {
        format!(
            "trust the folder: start gemini in {} and choose to trust it, or add to {shown}:\n{{\"{}\": \"TRUST_FOLDER\"}}\n     (for a headless run, GEMINI_CLI_TRUST_WORKSPACE=true trusts it for that run)",
            root.display(),
            root.display()
        )
    });
    check(name(Client::Gemini, "trust"), level, detail, fix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemini_trust_rules_take_the_longest_match() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let repo = base.join("work/repo");
        std::fs::create_dir_all(&repo).unwrap();
        let rules = |pairs: &[(&Path, &str)]| -> Map<String, Value> {
            pairs
                .iter()
                .map(|(p, l)| (p.display().to_string(), json!(l)))
                .collect()
        };
        assert_eq!(gemini_rules_trust(&rules(&[]), &repo), None);
        assert_eq!(
            gemini_rules_trust(&rules(&[(&repo, "TRUST_FOLDER")]), &repo),
            Some(true)
        );
        assert_eq!(
            gemini_rules_trust(&rules(&[(&base.join("work"), "TRUST_FOLDER")]), &repo),
            Some(true)
        );
        assert_eq!(
            gemini_rules_trust(
                &rules(&[
                    (&base.join("work"), "TRUST_FOLDER"),
                    (&repo, "DO_NOT_TRUST")
                ]),
                &repo
            ),
            Some(false)
        );
        // TRUST_PARENT trusts the rule's parent and all below it.
        assert_eq!(
            gemini_rules_trust(&rules(&[(&repo.join("x"), "TRUST_PARENT")]), &repo),
            Some(true)
        );
        assert_eq!(
            gemini_rules_trust(&rules(&[(&base.join("other"), "TRUST_FOLDER")]), &repo),
            None
        );
    }
}
