//! `status --statusline`: one short line for the Claude Code status line of one session. The
//! client runs the `statusLine` command of its settings after each assistant message and every
//! `refreshInterval` seconds, with the session's JSON on stdin (`session_id`,
//! `workspace.project_dir`, `cwd`, …) and shows the first line it prints.
//!
//! The line says what binds that session: the stream it holds (or that it holds none), the other
//! live streams with their heartbeat age, the messages waiting for it, and what is broken — a
//! corrupt lock, a lease mirror that is stale. It runs as often as a hook, so it reads what the
//! guard reads: the round index (one file), the config, the session's inbound ledger when there
//! is one, and the lease mirror when leases are configured. It never fails: outside a wired repo
//! it prints nothing, and what it cannot read is said on the line.

use crate::config::Config;
use crate::round_index::LockSet;
use crate::state::Layout;
use crate::time;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most of the session's JSON read from stdin.
const MAX_INPUT: u64 = 1024 * 1024;

/// Other streams named on the line; the rest are counted.
const MAX_OTHERS: usize = 4;

/// What the line is made of.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Line {
    /// This session's streams: name and whether its lock went stale.
    pub mine: Vec<(String, bool)>,
    /// Other streams not released: name, heartbeat age (ms), stale, the machine (leases).
    pub others: Vec<(String, u64, bool, Option<String>)>,
    /// Messages on their way to this session (queued or accepted), and held for its review.
    pub messages: usize,
    pub held: usize,
    /// What is broken, each said briefly.
    pub problems: Vec<String>,
}

impl Line {
    /// The line as the status bar shows it.
    pub fn render(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.push(match self.mine.as_slice() {
            [] => "no stream claimed (claim <stream>)".to_string(),
            mine => {
                let names: Vec<String> = mine
                    .iter()
                    .map(|(s, stale)| {
                        if *stale {
                            format!("{s} (stale: claim it again)")
                        } else {
                            s.clone()
                        }
                    })
                    .collect();
                format!("you hold {}", names.join(", "))
            }
        });
        if !self.others.is_empty() {
            let mut named: Vec<String> = self
                .others
                .iter()
                .take(MAX_OTHERS)
                .map(|(s, age, stale, host)| {
                    let at = host.as_deref().map(|h| format!("@{h}")).unwrap_or_default();
                    let state = if *stale { ", stale" } else { "" };
                    format!("{s}{at} {}{state}", time::age(*age))
                })
                .collect();
            if self.others.len() > MAX_OTHERS {
                named.push(format!("+{} more", self.others.len() - MAX_OTHERS));
            }
            parts.push(format!("others: {}", named.join(", ")));
        }
        if self.messages > 0 {
            parts.push(format!(
                "{} message{} for you",
                self.messages,
                if self.messages == 1 { "" } else { "s" }
            ));
        }
        if self.held > 0 {
            parts.push(format!("{} held (send-message review)", self.held));
        }
        parts.extend(self.problems.iter().cloned());
        format!("session-lock: {}", parts.join(" · "))
    }
}

/// The session id and the folder the client started it in, from its JSON.
fn session_of(input: &Value) -> (Option<String>, Option<PathBuf>) {
    let s = |p: &str| {
        input
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let id = s("/session_id").map(str::to_string);
    let dir = s("/workspace/project_dir")
        .or_else(|| s("/cwd"))
        .map(PathBuf::from);
    (id, dir)
}

/// The line for `session` in the repo at `root`.
pub fn line(root: &Path, session: Option<&str>) -> Line {
    let layout = Layout::new(root);
    let mut out = Line::default();
    let config = match Config::load(root) {
        Ok(c) => c,
        Err(_) => {
            out.problems
                .push("session-lock/config.json does not load (guard doctor)".into());
            Config::default()
        }
    };
    let now = time::now_ms();
    let stale_ms = config.heartbeat_stale_ms();
    let locks = LockSet::load(&layout);
    for e in locks.entries() {
        if e.done {
            continue;
        }
        let age = now.saturating_sub(e.heartbeat_ms);
        let stale = age >= stale_ms;
        if session == Some(e.session_id.as_str()) {
            out.mine.push((e.stream, stale));
        } else {
            out.others.push((e.stream, age, stale, None));
        }
    }
    for b in locks.bad() {
        let name = b.path.file_name().map_or_else(
            || b.path.display().to_string(),
            |n| n.to_string_lossy().to_string(),
        );
        out.problems.push(format!("corrupt lock {name} (status)"));
    }
    if let Some(cfg) = &config.leases {
        leases(&layout, cfg, session, now, stale_ms, &mut out);
    }
    // Fresh first: the streams someone is working in now.
    out.others
        .sort_by_key(|(name, age, stale, _)| (*stale, *age, name.clone()));
    if let (Some(home), Some(id)) = (crate::sessions::state_home(), session)
        && let Some(ledger) = crate::messaging::ledger::Ledger::existing_inbound(&home, id)
    {
        // Unfinished messages only, and only their op, id and time read for the others.
        for e in ledger.entries_since(u64::MAX).unwrap_or_default() {
            match e.state {
                s if s.is_open() => out.messages += 1,
                crate::messaging::ledger::State::Held => out.held += 1,
                _ => {}
            }
        }
    }
    out
}

/// Other machines' leases as others, and a stale mirror as a problem (three refresh intervals
/// without an answer, as the guard counts it).
fn leases(
    layout: &Layout,
    cfg: &crate::config::LeasesConfig,
    session: Option<&str>,
    now: u64,
    stale_ms: u64,
    out: &mut Line,
) {
    let Some(m) = crate::leases::mirror::Mirror::read(layout) else {
        out.problems
            .push(format!("no lease mirror of '{}' yet", cfg.remote));
        return;
    };
    // A lease as a lock keeps its machine where a local lock keeps its folder.
    for h in m.foreign_locks(&m.clone_id) {
        if session == Some(h.record.session_id.as_str()) {
            continue;
        }
        let age = h.age_ms(now);
        out.others.push((
            h.record.stream.clone(),
            age,
            age >= stale_ms,
            Some(h.record.cwd.clone()).filter(|c| !c.is_empty()),
        ));
    }
    let refresh_ms = cfg.refresh_seconds.max(1) * 1000;
    match m.age_ms(now) {
        Some(a) if a < 3 * refresh_ms => {}
        Some(a) => out.problems.push(format!(
            "lease mirror of '{}' {} old",
            cfg.remote,
            time::age(a)
        )),
        None => out
            .problems
            .push(format!("lease mirror of '{}' never answered", cfg.remote)),
    }
}

/// `status --statusline`: reads the session's JSON on stdin, prints one line (nothing outside a
/// wired repo). `repo`: `--repo`, which wins over the JSON's folder.
pub fn run(repo: Option<&Path>) -> anyhow::Result<crate::exit::Code> {
    let mut text = String::new();
    let _ = std::io::stdin().take(MAX_INPUT).read_to_string(&mut text);
    let input: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let (session, dir) = session_of(&input);
    let project = std::env::var("CLAUDE_PROJECT_DIR").ok();
    let root = match repo {
        Some(r) => Some(r.to_path_buf()),
        None => match &dir {
            Some(d) => crate::state::git_top(d),
            None => {
                let cwd = std::env::current_dir().unwrap_or_default();
                crate::state::repo_root(&cwd, project.as_deref())
            }
        },
    };
    let Some(root) = root.filter(|r| r.join("session-lock").is_dir()) else {
        return Ok(crate::exit::Code::Success);
    };
    println!("{}", line(&root, session.as_deref()).render());
    Ok(crate::exit::Code::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_mine_then_the_freshest_others_then_trouble() {
        let l = Line {
            mine: vec![("api".into(), false)],
            others: vec![
                ("ui".into(), 120_000, false, None),
                ("docs".into(), 14 * 60_000, false, Some("laptop".into())),
                ("old".into(), 3 * 3_600_000, true, None),
            ],
            messages: 2,
            held: 1,
            problems: vec!["corrupt lock x.lock (status)".into()],
        };
        assert_eq!(
            l.render(),
            "session-lock: you hold api · others: ui 2m, docs@laptop 14m, old 3h00m, stale · 2 messages for you · 1 held (send-message review) · corrupt lock x.lock (status)"
        );
        assert_eq!(
            Line::default().render(),
            "session-lock: no stream claimed (claim <stream>)"
        );
    }

    #[test]
    fn many_others_are_counted_not_listed() {
        let l = Line {
            others: (0..30)
                .map(|i| (format!("stream-{i}"), 1000, false, None))
                .collect(),
            ..Line::default()
        };
        let text = l.render();
        assert!(text.ends_with("+26 more"), "{text}");
        assert!(text.len() < 200, "{text}");
    }

    #[test]
    fn the_session_comes_from_its_json() {
        let v = serde_json::json!({"session_id": "s1", "cwd": "/a/sub", "workspace": {"project_dir": "/a", "current_dir": "/a/sub"}});
        assert_eq!(
            session_of(&v),
            (Some("s1".into()), Some(PathBuf::from("/a")))
        );
        let v = serde_json::json!({"cwd": "/b"});
        assert_eq!(session_of(&v), (None, Some(PathBuf::from("/b"))));
    }
}
