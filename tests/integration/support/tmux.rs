//! A terminal for tests of terminal UIs: one private tmux server per [`Pane`], a command
//! running in its only pane, keys sent with `send-keys`, the screen read with
//! `capture-pane`. When tmux is missing the test skips (and fails under `CI`).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A command running in a tmux pane of its own server.
pub struct Pane {
    dir: tempfile::TempDir,
}

/// The pane's command ended: its exit status is printed as the last line.
pub const EXIT_MARK: &str = "[exit ";

fn tmux_exists() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Starts a [`Pane`], or skips the test (returns from it) when tmux is not installed.
#[macro_export]
macro_rules! require_tmux {
    () => {
        if !$crate::support::tmux::available() {
            return;
        }
    };
}

/// Whether tmux runs here; says why a test skips when it does not (a failure under CI).
pub fn available() -> bool {
    if tmux_exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is not installed (apt-get install tmux); the terminal tests need it"
    );
    eprintln!("skipped: tmux is not installed; the terminal tests need it");
    false
}

impl Pane {
    /// Runs `command` (a `sh -c` line) in `cwd` in a `width`×`height` pane, with `env` set.
    /// After the command ends the pane stays, showing `[exit N]`.
    pub fn start(
        command: &str,
        cwd: &Path,
        env: &[(&str, String)],
        width: u16,
        height: u16,
    ) -> Pane {
        let dir = tempfile::tempdir().expect("tmux dir");
        let pane = Pane { dir };
        let mut script = String::new();
        for (k, v) in env {
            script.push_str(&format!("export {k}='{}'; ", v.replace('\'', r"'\''")));
        }
        script.push_str(&format!(
            "{command}; echo \"{EXIT_MARK}$?]\"; exec sleep 600"
        ));
        let out = pane
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .arg("-c")
            .arg(cwd)
            .args(["sh", "-c", &script])
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pane
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S")
            .arg(self.dir.path().join("sock"))
            .arg("-f")
            .arg("/dev/null");
        c.env("TERM", "xterm-256color");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.tmux().args(args).output().expect("run tmux")
    }

    /// The screen as text, one line per row (trailing blanks trimmed).
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Sends keys as `tmux send-keys` names them (`q`, `C-c`, `Enter`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits until the screen satisfies `done`; the last screen either way.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&str) -> bool) -> (bool, String) {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return (true, s);
            }
            if start.elapsed() >= limit {
                return (false, s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The command's exit status, once it has ended.
    pub fn exit_code(screen: &str) -> Option<i32> {
        let at = screen.rfind(EXIT_MARK)? + EXIT_MARK.len();
        screen[at..].split(']').next()?.trim().parse().ok()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
