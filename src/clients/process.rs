//! The client process of a Codex or Gemini session, found over the parent chain: neither client
//! names it to its hooks the way Claude Code's `CLAUDE_PID` does. The lock records it (pid and
//! start time), so a stream whose session ended is known to be orphaned, and the registry lists
//! it, so the git rules and messaging see who works in the tree.
//!
//! - **Codex CLI** runs its hooks, and the model's shell commands, directly under its native
//!   `codex` binary (the npm package's `node …/codex` launcher is that binary's parent): the
//!   nearest ancestor named `codex…`.
//! - **Gemini CLI** relaunches itself: `node …/gemini` starts `node --max-old-space-size=…
//!   …/gemini.js`, and that child runs the hooks (under `bash -c`) and the tools: the nearest
//!   ancestor that is `node` running a `gemini…` script (or a program named `gemini`).
//!
//! The walk reads one process's name per step, its command line only for a `node`, and stops at
//! the first match or after [`MAX_STEPS`]: a few small reads, once per guard call.

use super::Client;

/// The most ancestors looked at.
pub const MAX_STEPS: usize = 8;

/// One ancestor as the walk sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ancestor {
    pub pid: u32,
    /// The program's name as the kernel keeps it (Linux cuts it at 15 bytes).
    pub name: String,
    /// The command line, read only when the name alone cannot tell (`node`).
    pub args: Vec<String>,
}

/// Does the name alone make this process `client`'s, or rule it out?
fn by_name(client: Client, name: &str) -> Option<bool> {
    let name = name.strip_suffix(".exe").unwrap_or(name);
    match client {
        Client::Claude => Some(false),
        Client::Codex => Some(name.starts_with("codex")),
        Client::Gemini if name == "gemini" => Some(true),
        Client::Gemini if name == "node" || name.starts_with("node") => None,
        Client::Gemini => Some(false),
    }
}

/// A `node` running Gemini: a script argument whose file name starts with `gemini`.
fn runs_gemini(args: &[String]) -> bool {
    args.iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .any(|a| {
            a.rsplit(['/', '\\'])
                .next()
                .is_some_and(|f| f.starts_with("gemini"))
        })
}

/// The pid of `client`'s process among `chain` (nearest first): a pure choice over what the
/// walk read. `args` are asked for only when the name cannot tell.
pub fn pick(
    client: Client,
    chain: impl IntoIterator<Item = (u32, String)>,
    mut args: impl FnMut(u32) -> Vec<String>,
) -> Option<u32> {
    for (pid, name) in chain.into_iter().take(MAX_STEPS) {
        let mine = match by_name(client, &name) {
            Some(known) => known,
            None => runs_gemini(&args(pid)),
        };
        if mine {
            return Some(pid);
        }
    }
    None
}

/// The client process above `pid` (this process's parent first), or `None` when no ancestor is
/// one (a hook run by hand, an unknown launcher) or `client` is Claude Code (its pid comes from
/// `CLAUDE_PID`).
pub fn find_above(client: Client, pid: u32) -> Option<u32> {
    if client == Client::Claude {
        return None;
    }
    let mut next = crate::liveness::parent_of(pid);
    let chain = std::iter::from_fn(move || {
        let here = next?;
        next = if here > 1 {
            crate::liveness::parent_of(here)
        } else {
            None
        };
        Some((here, platform::name(here).unwrap_or_default()))
    });
    pick(client, chain, platform::args)
}

/// The command line of `pid` (empty when it cannot be read).
pub fn args(pid: u32) -> Vec<String> {
    platform::args(pid)
}

/// Whether a Gemini command line runs in yolo mode (it approves every tool call itself):
/// `--yolo`, `-y`, `--yolo=true` or `--approval-mode yolo` / `=yolo`; the last of these and
/// `--no-yolo`, `--yolo=false` or another `--approval-mode` wins, as its argument parser
/// reads them. Nothing after `--` counts.
pub fn gemini_yolo(args: &[String]) -> bool {
    let mut yolo = false;
    let mut words = args.iter().skip(1).map(String::as_str);
    while let Some(w) = words.next() {
        match w {
            "--" => break,
            "--yolo" | "-y" | "--yolo=true" => yolo = true,
            "--no-yolo" | "--yolo=false" => yolo = false,
            "--approval-mode" => yolo = words.next() == Some("yolo"),
            _ => {
                if let Some(mode) = w.strip_prefix("--approval-mode=") {
                    yolo = mode == "yolo";
                }
            }
        }
    }
    yolo
}

/// The client process of the session whose hook this process is.
pub fn find(client: Client) -> Option<u32> {
    find_above(client, std::process::id())
}

#[cfg(target_os = "linux")]
mod platform {
    /// `/proc/<pid>/comm` without its newline.
    pub fn name(pid: u32) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        Some(text.trim_end_matches('\n').to_string())
    }

    /// `/proc/<pid>/cmdline`, split at its NULs (at most 64 KiB of it).
    pub fn args(pid: u32) -> Vec<String> {
        use std::io::Read;
        let mut buf = Vec::new();
        let read = std::fs::File::open(format!("/proc/{pid}/cmdline"))
            .and_then(|f| f.take(64 * 1024).read_to_end(&mut buf));
        if read.is_err() {
            return Vec::new();
        }
        buf.split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

    fn process(pid: u32, kind: ProcessRefreshKind) -> Option<System> {
        let mut sys = System::new();
        sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[Pid::from_u32(pid)]), true, kind);
        sys.process(Pid::from_u32(pid))?;
        Some(sys)
    }

    pub fn name(pid: u32) -> Option<String> {
        let sys = process(pid, ProcessRefreshKind::nothing())?;
        Some(
            sys.process(Pid::from_u32(pid))?
                .name()
                .to_string_lossy()
                .into_owned(),
        )
    }

    pub fn args(pid: u32) -> Vec<String> {
        let Some(sys) = process(
            pid,
            ProcessRefreshKind::nothing().with_cmd(UpdateKind::Always),
        ) else {
            return Vec::new();
        };
        sys.process(Pid::from_u32(pid))
            .map(|p| {
                p.cmd()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_s_yolo_is_read_the_way_its_parser_reads_it() {
        let of = |line: &str| gemini_yolo(&line.split(' ').map(String::from).collect::<Vec<_>>());
        for yes in [
            "node --yolo",
            "node -m m -y -p hi",
            "node --approval-mode yolo",
            "node --approval-mode=yolo --output-format stream-json",
            "node --no-yolo --yolo",
        ] {
            assert!(of(yes), "{yes}");
        }
        for no in [
            "node",
            "node -p --yolo-is-a-prompt",
            "node --approval-mode default",
            "node --approval-mode=auto_edit",
            "node --yolo --approval-mode default",
            "node --yolo=false",
            "node -p hi -- --yolo",
            "--yolo",
        ] {
            assert!(!of(no), "{no}");
        }
    }

    fn chain(names: &[(u32, &str)]) -> Vec<(u32, String)> {
        names.iter().map(|(p, n)| (*p, n.to_string())).collect()
    }

    #[test]
    fn codex_is_the_native_binary_not_its_node_launcher() {
        // guard ← codex (musl binary) ← node …/bin/codex ← shell
        let up = chain(&[(30, "codex"), (20, "node"), (10, "bash")]);
        assert_eq!(
            pick(Client::Codex, up.clone(), |_| unreachable!()),
            Some(30)
        );
        // Through a shell the hook command started first.
        let up = chain(&[(40, "sh"), (30, "codex-x86_64-un"), (20, "node")]);
        assert_eq!(pick(Client::Codex, up, |_| Vec::new()), Some(30));
        assert_eq!(
            pick(Client::Codex, chain(&[(5, "bash"), (1, "init")]), |_| {
                Vec::new()
            }),
            None
        );
        assert_eq!(
            pick(Client::Codex, chain(&[(7, "codex.exe")]), |_| Vec::new()),
            Some(7)
        );
    }

    #[test]
    fn gemini_is_the_nearest_node_running_its_bundle() {
        // guard ← bash -c ← node --max-old-space-size=… gemini.js (child) ← node …/bin/gemini
        let up = chain(&[(50, "bash"), (40, "node"), (30, "node"), (20, "zsh")]);
        let args = |pid: u32| match pid {
            40 => vec![
                "node".to_string(),
                "--max-old-space-size=8192".into(),
                "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js".into(),
                "-p".into(),
            ],
            30 => vec!["node".into(), "/usr/bin/gemini".into()],
            _ => unreachable!("only node's command line is read"),
        };
        assert_eq!(pick(Client::Gemini, up, args), Some(40));
        // Another node program in between is passed over.
        let up = chain(&[(60, "node"), (40, "node")]);
        let args = |pid: u32| match pid {
            60 => vec![
                "node".to_string(),
                "/srv/tool/index.js".into(),
                "--gemini".into(),
            ],
            _ => vec!["node".into(), "C:\\npm\\gemini".into()],
        };
        assert_eq!(pick(Client::Gemini, up, args), Some(40));
        assert_eq!(
            pick(Client::Gemini, chain(&[(9, "gemini")]), |_| Vec::new()),
            Some(9)
        );
        assert_eq!(
            pick(Client::Claude, chain(&[(9, "claude")]), |_| Vec::new()),
            None
        );
    }

    #[test]
    fn the_walk_is_bounded() {
        let long: Vec<(u32, String)> = (0..100).map(|i| (1000 - i, "sh".to_string())).collect();
        let mut named = long.clone();
        named.push((1, "codex".into()));
        assert_eq!(pick(Client::Codex, named, |_| Vec::new()), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_chain_is_read_upward() {
        // This test process runs below no client: nothing is found, and the walk ends.
        assert_eq!(find(Client::Codex), None);
        assert_eq!(find(Client::Claude), None);
        // A process named `codex` above a child: the child's walk finds it.
        let dir = tempfile::tempdir().unwrap();
        let codex = dir.path().join("codex");
        std::os::unix::fs::symlink("/bin/sh", &codex).unwrap();
        let mut parent = std::process::Command::new(&codex)
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(parent.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleeper: u32 = line.trim().parse().unwrap();
        assert_eq!(find_above(Client::Codex, sleeper), Some(parent.id()));
        assert_eq!(find_above(Client::Gemini, sleeper), None);
        let _ = std::process::Command::new("kill")
            .arg(sleeper.to_string())
            .status();
        let _ = parent.wait();
    }
}
