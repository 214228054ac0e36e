//! Where things are on each platform the suite builds for: the per-user state folder, an app's
//! user-data folder, the client's own folders (its session registry and settings), the places
//! the client's installers put `claude`, and this machine's name.
//!
//! Each location is a function of the platform and the environment, held in a [`Host`], so the
//! answer for macOS or Windows is tested on Linux by handing it another [`Os`] and environment.
//! Only [`Host::this`] reads the real ones. Other Unixes take Linux's folders (XDG).

use std::ffi::OsString;
use std::path::PathBuf;

/// The platform whose conventions a location follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// Linux and the other Unixes.
    Linux,
    MacOs,
    Windows,
}

impl Os {
    /// The platform this build runs on.
    pub const THIS: Os = if cfg!(windows) {
        Os::Windows
    } else if cfg!(target_os = "macos") {
        Os::MacOs
    } else {
        Os::Linux
    };
}

/// An environment to read variables from: the process's own, or a test's.
pub trait Env: Fn(&str) -> Option<OsString> {}

impl<F: Fn(&str) -> Option<OsString>> Env for F {}

/// A platform and an environment to read locations from.
pub struct Host<E> {
    pub os: Os,
    env: E,
}

/// This process's platform and environment.
pub fn this() -> Host<fn(&str) -> Option<OsString>> {
    Host::new(Os::THIS, |name| std::env::var_os(name))
}

impl<E: Env> Host<E> {
    /// `os` with the environment `env` answers (`None` for an unset variable).
    pub fn new(os: Os, env: E) -> Host<E> {
        Host { os, env }
    }

    /// A variable that is set and not empty.
    pub fn var(&self, name: &str) -> Option<OsString> {
        (self.env)(name).filter(|v| !v.is_empty())
    }

    /// A variable that is set and not empty, as a path.
    pub fn path_var(&self, name: &str) -> Option<PathBuf> {
        self.var(name).map(PathBuf::from)
    }

    /// The user's home folder: `HOME` (on Windows `USERPROFILE` first).
    pub fn home(&self) -> Option<PathBuf> {
        let first = (self.os == Os::Windows)
            .then(|| self.path_var("USERPROFILE"))
            .flatten();
        first.or_else(|| self.path_var("HOME"))
    }

    /// The per-user state folder: `SESSION_LOCK_HOME`, else `%LOCALAPPDATA%\session-lock`
    /// (Windows), `~/Library/Application Support/session-lock` (macOS),
    /// `$XDG_STATE_HOME/session-lock` or `~/.local/state/session-lock` (Linux).
    pub fn state_home(&self) -> Option<PathBuf> {
        if let Some(p) = self.path_var(crate::atomic::STATE_HOME_VAR) {
            return Some(p);
        }
        match self.os {
            Os::Windows => self
                .path_var("LOCALAPPDATA")
                .map(|d| d.join("session-lock")),
            Os::MacOs => Some(self.application_support()?.join("session-lock")),
            Os::Linux => self
                .path_var("XDG_STATE_HOME")
                .or_else(|| Some(self.home()?.join(".local/state")))
                .map(|d| d.join("session-lock")),
        }
    }

    /// An app's user-data folder: `%APPDATA%\<app>` (Windows),
    /// `~/Library/Application Support/<app>` (macOS), `$XDG_CONFIG_HOME/<app>` or
    /// `~/.config/<app>` (Linux).
    pub fn user_data(&self, app: &str) -> Option<PathBuf> {
        let base = match self.os {
            Os::Windows => self.path_var("APPDATA"),
            Os::MacOs => self.application_support(),
            Os::Linux => self
                .path_var("XDG_CONFIG_HOME")
                .or_else(|| Some(self.home()?.join(".config"))),
        };
        Some(base?.join(app))
    }

    fn application_support(&self) -> Option<PathBuf> {
        Some(self.home()?.join("Library/Application Support"))
    }

    /// The client's own folder, where its session registry (`sessions/`), user settings and
    /// transcripts live: `CLAUDE_CONFIG_DIR`, else `~/.claude`, on every platform.
    pub fn claude_config_dir(&self) -> Option<PathBuf> {
        self.path_var("CLAUDE_CONFIG_DIR")
            .or_else(|| Some(self.home()?.join(".claude")))
    }

    /// The managed (administrator's) settings file of the client.
    pub fn claude_managed_settings(&self) -> PathBuf {
        PathBuf::from(match self.os {
            Os::Windows => r"C:\ProgramData\ClaudeCode\managed-settings.json",
            Os::MacOs => "/Library/Application Support/ClaudeCode/managed-settings.json",
            Os::Linux => "/etc/claude-code/managed-settings.json",
        })
    }

    /// The file names an executable called `name` may have.
    pub fn exe_names(&self, name: &str) -> Vec<String> {
        if self.os == Os::Windows {
            vec![
                format!("{name}.exe"),
                format!("{name}.cmd"),
                name.to_string(),
            ]
        } else {
            vec![name.to_string()]
        }
    }

    /// Where the client's own installers put `claude`, for a process whose `PATH` lacks it (a
    /// program started from the macOS Dock or launchd has a bare `PATH`): the native installer's
    /// `~/.local/bin`, the older per-user install in `~/.claude/local`, and on macOS Homebrew's
    /// `bin` folders (`/opt/homebrew` on Apple silicon, `/usr/local` on Intel), where npm's
    /// global installs land too.
    pub fn claude_install_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(home) = self.home() {
            dirs.push(home.join(".local").join("bin"));
            dirs.push(home.join(".claude").join("local"));
        }
        if self.os == Os::MacOs {
            dirs.push(PathBuf::from("/opt/homebrew/bin"));
            dirs.push(PathBuf::from("/usr/local/bin"));
        }
        dirs
    }
}

/// This machine's name: `HOSTNAME` or `COMPUTERNAME` when set, else the kernel's (`uname`'s
/// node name on Unix), else `unknown`.
pub fn host_name() -> String {
    for var in ["HOSTNAME", "COMPUTERNAME"] {
        if let Ok(h) = std::env::var(var)
            && !h.trim().is_empty()
        {
            return h.trim().to_string();
        }
    }
    kernel_host_name()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(unix)]
fn kernel_host_name() -> Option<String> {
    let uname = rustix::system::uname();
    Some(uname.nodename().to_string_lossy().into_owned())
}

#[cfg(not(unix))]
fn kernel_host_name() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn host(os: Os, vars: &[(&str, &str)]) -> Host<impl Env> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Host::new(os, move |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_state_home_follows_each_platform() {
        let home = [("HOME", "/home/u"), ("USERPROFILE", r"C:\Users\u")];
        assert_eq!(
            host(Os::Linux, &home).state_home().unwrap(),
            Path::new("/home/u/.local/state/session-lock")
        );
        assert_eq!(
            host(Os::Linux, &[("HOME", "/h"), ("XDG_STATE_HOME", "/x")])
                .state_home()
                .unwrap(),
            Path::new("/x/session-lock")
        );
        assert_eq!(
            host(Os::MacOs, &[("HOME", "/Users/u"), ("XDG_STATE_HOME", "/x")])
                .state_home()
                .unwrap(),
            Path::new("/Users/u/Library/Application Support/session-lock"),
            "macOS has no XDG folders"
        );
        assert_eq!(
            host(Os::Windows, &[("LOCALAPPDATA", r"C:\L")]).state_home(),
            Some(Path::new(r"C:\L").join("session-lock"))
        );
        assert_eq!(host(Os::Windows, &home).state_home(), None);
        for os in [Os::Linux, Os::MacOs, Os::Windows] {
            assert_eq!(
                host(os, &[("SESSION_LOCK_HOME", "/s"), ("HOME", "/h")]).state_home(),
                Some(PathBuf::from("/s"))
            );
            assert_eq!(host(os, &[("HOME", "")]).state_home(), None, "{os:?}");
        }
    }

    #[test]
    fn an_app_s_user_data_follows_each_platform() {
        let h = |os, vars: &[(&str, &str)]| host(os, vars).user_data("App");
        assert_eq!(
            h(Os::Linux, &[("HOME", "/h")]),
            Some("/h/.config/App".into())
        );
        assert_eq!(
            h(Os::Linux, &[("HOME", "/h"), ("XDG_CONFIG_HOME", "/c")]),
            Some("/c/App".into())
        );
        assert_eq!(
            h(
                Os::MacOs,
                &[("HOME", "/Users/u"), ("XDG_CONFIG_HOME", "/c")]
            ),
            Some("/Users/u/Library/Application Support/App".into())
        );
        assert_eq!(
            h(Os::Windows, &[("APPDATA", r"C:\R"), ("HOME", "/h")]),
            Some(Path::new(r"C:\R").join("App"))
        );
        assert_eq!(h(Os::Windows, &[("HOME", "/h")]), None);
    }

    #[test]
    fn the_client_s_folders_and_installs() {
        for os in [Os::Linux, Os::MacOs] {
            let h = host(os, &[("HOME", "/u")]);
            assert_eq!(h.claude_config_dir(), Some("/u/.claude".into()));
            let dirs = h.claude_install_dirs();
            assert_eq!(
                dirs[..2],
                [PathBuf::from("/u/.local/bin"), "/u/.claude/local".into()]
            );
            assert_eq!(h.exe_names("claude"), ["claude"]);
        }
        let mac = host(Os::MacOs, &[("HOME", "/u")]).claude_install_dirs();
        assert_eq!(
            mac[2..],
            [PathBuf::from("/opt/homebrew/bin"), "/usr/local/bin".into()]
        );
        assert_eq!(
            host(Os::Linux, &[("HOME", "/u")])
                .claude_install_dirs()
                .len(),
            2
        );
        assert_eq!(
            host(Os::Linux, &[("CLAUDE_CONFIG_DIR", "/c"), ("HOME", "/u")]).claude_config_dir(),
            Some("/c".into())
        );
        let win = host(Os::Windows, &[("USERPROFILE", r"C:\U"), ("HOME", "/h")]);
        assert_eq!(win.home(), Some(r"C:\U".into()), "USERPROFILE before HOME");
        assert_eq!(win.exe_names("claude")[0], "claude.exe");
        assert!(host(Os::Linux, &[]).claude_install_dirs().is_empty());
        assert_eq!(
            host(Os::MacOs, &[]).claude_managed_settings(),
            Path::new("/Library/Application Support/ClaudeCode/managed-settings.json")
        );
        assert_eq!(
            host(Os::Linux, &[]).claude_managed_settings(),
            Path::new("/etc/claude-code/managed-settings.json")
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_kernel_s_host_name_is_the_one_uname_prints() {
        let out = std::process::Command::new("uname")
            .arg("-n")
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!printed.is_empty());
        assert_eq!(kernel_host_name().as_deref(), Some(printed.as_str()));
    }
}
