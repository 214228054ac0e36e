//! Per-repo rule configuration and its compilation into [`Rules`].

use serde::{Deserialize, Serialize};
use std::fmt;

use super::Rules;
use super::table::RuleId;
use crate::shell::word::base_lower;

/// The app-specific parts of the rules, as data. Every key is optional; a missing key
/// keeps the default shown.
///
/// ```json
/// {
///   "appProcesses": ["electron"],
///   "restartScripts": ["run.bat", "run.sh", "dev-rebuild"],
///   "relaunchPaths": ["/app/relaunch"],
///   "emitProjects": ["tsconfig.node.json"],
///   "buildCommands": ["vite build", "electron-vite build", "electron-builder"],
///   "buildScripts": ["build", "dev", "start", "headless"],
///   "protectedPlugins": ["ai-chat"],
///   "pluginPaths": ["/plugins/toggle", "/plugins/install", "/plugins/uninstall"],
///   "mcpPluginTools": ["live_plugin_toggle"],
///   "outputDirs": ["dist", "dist-electron"],
///   "mcpCommandTools": ["kill_process", "build_project", "execute_command", "terminal_execute",
///                       "run_command", "run_terminal_command", "shell_execute"],
///   "disabled": []
/// }
/// ```
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RulesConfig {
    /// Process names of the running app (`taskkill /im`, `pkill`, `Stop-Process -Name`,
    /// and `<name> .` launches).
    pub app_processes: Vec<String>,
    /// Scripts that restart the app. With an extension the basename must match
    /// (`run.bat`); without one any extension does (`dev-rebuild` → `.bat`, `.js`, `.sh`,
    /// and the package script of that name).
    pub restart_scripts: Vec<String>,
    /// Bridge URL paths that relaunch the app.
    pub relaunch_paths: Vec<String>,
    /// tsconfig files whose emit overwrites the running app's main-process output.
    pub emit_projects: Vec<String>,
    /// Build commands as `program [subcommand...]` (`vite build`).
    pub build_commands: Vec<String>,
    /// package.json scripts that build or start the app; `name:*` variants included.
    pub build_scripts: Vec<String>,
    /// Plugins whose deactivation ends every session.
    pub protected_plugins: Vec<String>,
    /// Bridge URL paths that toggle, install or uninstall plugins.
    pub plugin_paths: Vec<String>,
    /// MCP tools that toggle plugins (checked for a protected plugin id in their input).
    pub mcp_plugin_tools: Vec<String>,
    /// Repo-relative directories the running app reads.
    pub output_dirs: Vec<String>,
    /// MCP tools that run arbitrary commands.
    pub mcp_command_tools: Vec<String>,
    /// Rule ids switched off in this repo.
    pub disabled: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

impl Default for RulesConfig {
    fn default() -> Self {
        RulesConfig {
            app_processes: strings(&["electron"]),
            restart_scripts: strings(&["run.bat", "run.sh", "dev-rebuild"]),
            relaunch_paths: strings(&["/app/relaunch"]),
            emit_projects: strings(&["tsconfig.node.json"]),
            build_commands: strings(&["vite build", "electron-vite build", "electron-builder"]),
            build_scripts: strings(&["build", "dev", "start", "headless"]),
            protected_plugins: strings(&["ai-chat"]),
            plugin_paths: strings(&["/plugins/toggle", "/plugins/install", "/plugins/uninstall"]),
            mcp_plugin_tools: strings(&["live_plugin_toggle"]),
            output_dirs: strings(&["dist", "dist-electron"]),
            mcp_command_tools: strings(&[
                "kill_process",
                "build_project",
                "execute_command",
                "terminal_execute",
                "run_command",
                "run_terminal_command",
                "shell_execute",
            ]),
            disabled: Vec::new(),
        }
    }
}

/// A configuration value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesError {
    /// The config key (camelCase, as written in the file).
    pub key: &'static str,
    /// The offending value.
    pub value: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rules config: {} value '{}' {}",
            self.key, self.value, self.problem
        )
    }
}

impl std::error::Error for RulesError {}

fn err(key: &'static str, value: &str, problem: &'static str) -> RulesError {
    RulesError {
        key,
        value: value.to_string(),
        problem,
    }
}

/// Lowercased names without whitespace.
fn names(key: &'static str, items: &[String]) -> Result<Vec<String>, RulesError> {
    items
        .iter()
        .map(|s| {
            if s.trim().is_empty() {
                Err(err(key, s, "is empty"))
            } else if s.chars().any(char::is_whitespace) {
                Err(err(key, s, "must not contain whitespace"))
            } else {
                Ok(s.to_ascii_lowercase())
            }
        })
        .collect()
}

/// URL paths starting with `/`.
fn url_paths(key: &'static str, items: &[String]) -> Result<Vec<String>, RulesError> {
    let v = names(key, items)?;
    match v.iter().find(|p| !p.starts_with('/') || p.len() < 2) {
        Some(p) => Err(err(key, p, "must be a URL path starting with '/'")),
        None => Ok(v),
    }
}

/// Repo-relative directories, normalized to `a/b`.
fn rel_dirs(key: &'static str, items: &[String]) -> Result<Vec<Vec<String>>, RulesError> {
    items
        .iter()
        .map(|s| {
            let t = s.replace('\\', "/");
            let t = t.trim_start_matches("./").trim_end_matches('/');
            if t.is_empty() || t == "." {
                return Err(err(key, s, "is empty"));
            }
            if t.starts_with('/') || crate::paths::lexical::is_drive(t) {
                return Err(err(key, s, "must be relative to the repository root"));
            }
            let parts: Vec<String> = t
                .split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .map(str::to_ascii_lowercase)
                .collect();
            if parts.iter().any(|c| c == "..") {
                return Err(err(key, s, "must stay inside the repository"));
            }
            Ok(parts)
        })
        .collect()
}

/// Compile a configuration into the rules used per call.
pub fn compile(cfg: &RulesConfig) -> Result<Rules, RulesError> {
    let mut disabled = Vec::new();
    for id in &cfg.disabled {
        match RuleId::from_id(id) {
            Some(r) => disabled.push(r),
            None => return Err(err("disabled", id, "is not a rule id")),
        }
    }
    let build_commands = cfg
        .build_commands
        .iter()
        .map(|c| {
            let words: Vec<String> = c.split_whitespace().map(str::to_ascii_lowercase).collect();
            if words.is_empty() {
                Err(err("buildCommands", c, "is empty"))
            } else {
                Ok(words)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let emit_projects = names("emitProjects", &cfg.emit_projects)?
        .iter()
        .map(|p| base_lower(p))
        .collect();
    Ok(Rules {
        app_processes: names("appProcesses", &cfg.app_processes)?
            .into_iter()
            .map(|p| p.strip_suffix(".exe").map(str::to_string).unwrap_or(p))
            .collect(),
        restart_scripts: names("restartScripts", &cfg.restart_scripts)?,
        relaunch_paths: url_paths("relaunchPaths", &cfg.relaunch_paths)?,
        emit_projects,
        build_commands,
        build_scripts: names("buildScripts", &cfg.build_scripts)?,
        protected_plugins: names("protectedPlugins", &cfg.protected_plugins)?,
        plugin_paths: url_paths("pluginPaths", &cfg.plugin_paths)?,
        mcp_plugin_tools: names("mcpPluginTools", &cfg.mcp_plugin_tools)?,
        output_dirs: rel_dirs("outputDirs", &cfg.output_dirs)?,
        mcp_command_tools: names("mcpCommandTools", &cfg.mcp_command_tools)?,
        disabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_compile() {
        let r = compile(&RulesConfig::default()).unwrap();
        assert_eq!(
            r.output_dirs,
            [vec!["dist".to_string()], vec!["dist-electron".to_string()]]
        );
        assert_eq!(r.app_processes, ["electron"]);
    }

    #[test]
    fn json_keys_are_camel_case_and_optional() {
        let cfg: RulesConfig =
            serde_json::from_str(r#"{"outputDirs":["out"],"disabled":["git.add-all"]}"#).unwrap();
        assert_eq!(cfg.output_dirs, ["out"]);
        assert_eq!(cfg.app_processes, ["electron"]);
        let r = compile(&cfg).unwrap();
        assert_eq!(r.disabled, [RuleId::GitAddAll]);
        let bad = serde_json::from_str::<RulesConfig>(r#"{"outputDir":["x"]}"#);
        assert!(bad.is_err());
        let empty: RulesConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, RulesConfig::default());
    }

    #[test]
    fn errors_name_key_and_value() {
        let cfg = RulesConfig {
            disabled: vec!["git.nope".into()],
            ..RulesConfig::default()
        };
        let e = compile(&cfg).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rules config: disabled value 'git.nope' is not a rule id"
        );
        let cfg = RulesConfig {
            output_dirs: vec!["/abs/dist".into()],
            ..RulesConfig::default()
        };
        let e = compile(&cfg).unwrap_err();
        assert_eq!(e.key, "outputDirs");
        assert_eq!(e.value, "/abs/dist");
        let cfg = RulesConfig {
            output_dirs: vec!["../x".into()],
            ..RulesConfig::default()
        };
        assert_eq!(
            compile(&cfg).unwrap_err().problem,
            "must stay inside the repository"
        );
        let cfg = RulesConfig {
            relaunch_paths: vec!["app/relaunch".into()],
            ..RulesConfig::default()
        };
        assert_eq!(compile(&cfg).unwrap_err().key, "relaunchPaths");
        let cfg = RulesConfig {
            app_processes: vec!["my app".into()],
            ..RulesConfig::default()
        };
        assert_eq!(
            compile(&cfg).unwrap_err().problem,
            "must not contain whitespace"
        );
        let cfg = RulesConfig {
            build_commands: vec!["  ".into()],
            ..RulesConfig::default()
        };
        assert_eq!(compile(&cfg).unwrap_err().key, "buildCommands");
    }
}
