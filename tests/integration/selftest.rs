//! The selftest corpus runner: every case in `selftest/lifecycle/*.case` (format in
//! selftest/README.md) runs the real `guard` binary in a fresh temp git repo. Every failing case
//! is reported by file, line and name, then the test fails once.

use crate::support::lifecycle::{Repo, bin, parse_age, sid, verdict};
use crate::support::wine::{Form, Host, require_wine};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Clone)]
enum Setup {
    Plan {
        stream: String,
        milestone: u32,
        owns: Vec<String>,
    },
    Lock {
        stream: String,
        who: String,
        heartbeat_ms: u64,
        claimed_ms: Option<u64>,
        client: Option<Client>,
        round: u32,
        owns: Option<Vec<String>>,
    },
    Done {
        stream: String,
        who: Option<String>,
    },
    Config(String),
    File(String, String),
    Symlink(String, String),
    Registered(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Live,
    Dead,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Allow,
    Block(Vec<String>),
    /// A `run:` case: the tool's exit code, and fragments of its stdout + stderr.
    Exit(i32, Vec<String>),
}

#[derive(Debug, Clone)]
enum After {
    LockBy(String, String),
    NoLock(String),
    Heartbeat(String, bool),
    Claimed(String, bool),
    Round(String, u32),
    Owns(String, Vec<String>),
    Done(String),
    NoDone(String),
    Milestone(u32),
    NoMilestone(u32),
    Registered(String),
    NotRegistered(String),
}

#[derive(Debug, Default, Clone)]
struct Case {
    file: String,
    line: usize,
    name: String,
    setup: Vec<Setup>,
    /// `None`: the payload carries an empty session id.
    session: Option<String>,
    client: Option<Client>,
    env: Vec<(String, String)>,
    event: Option<String>,
    tool: Option<String>,
    path: Option<String>,
    command: Option<String>,
    cwd: Option<String>,
    input: Option<String>,
    stdin: Option<String>,
    /// `run: <tool> <args>`: a suite tool run from the repo root instead of the guard.
    run: Option<String>,
    /// `filler: <count> <text>`: `$FILLER` in the command, input or stdin is `text` × count.
    filler: Option<(usize, String)>,
    expect: Option<Expect>,
    notes: Vec<String>,
    /// `> message "…"`: fragments of the `systemMessage` shown to the user.
    messages: Vec<String>,
    /// `only: unix|windows`: the case states a fact of that platform alone.
    only: Option<String>,
    after: Vec<(usize, After)>,
    /// Keys given once per case, to refuse repeats.
    seen: Vec<String>,
}

/// `"a" "b \"c\""` → [a, b "c"].
fn quoted(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => continue,
            '"' => {
                let mut cur = String::new();
                let mut closed = false;
                while let Some(q) = chars.next() {
                    match q {
                        '\\' => match chars.next() {
                            Some(n) => cur.push(n),
                            None => return Err("a backslash ends the line".into()),
                        },
                        '"' => {
                            closed = true;
                            break;
                        }
                        _ => cur.push(q),
                    }
                }
                if !closed {
                    return Err(format!("unclosed quote in {s:?}"));
                }
                if cur.is_empty() {
                    return Err("empty message fragment".into());
                }
                out.push(cur);
            }
            _ => return Err(format!("expected \"quoted\" fragments, found {s:?}")),
        }
    }
    Ok(out)
}

/// `\n`, `\t`, `\\` in `file:` contents.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            other => return Err(format!("unknown escape \\{}", other.unwrap_or(' '))),
        }
    }
    Ok(out)
}

fn who_ok(w: &str) -> Result<String, String> {
    if !w.is_empty() && w.len() <= 8 && w.bytes().all(|b| b.is_ascii_lowercase()) {
        Ok(w.to_string())
    } else {
        Err(format!(
            "session name '{w}' must be 1-8 lowercase letters (me, other, third, …)"
        ))
    }
}

fn age(w: Option<&str>) -> Result<u64, String> {
    let w = w.ok_or("an age is missing (like 5m)")?;
    parse_age(w).ok_or_else(|| format!("'{w}' is not an age (like 40s, 5m, 2h)"))
}

fn parse_plan(v: &str) -> Result<Setup, String> {
    let mut it = v.split_whitespace().peekable();
    let stream = it.next().ok_or("plan: needs a stream")?.to_string();
    let mut milestone = 1;
    if it.peek() == Some(&"ms") {
        it.next();
        milestone = it
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or("plan: 'ms' needs a number")?;
    }
    if it.next() != Some("owns") {
        return Err("plan: expected '<stream> [ms N] owns <pattern>…'".into());
    }
    let owns: Vec<String> = it.map(str::to_string).collect();
    if owns.is_empty() {
        return Err("plan: owns needs at least one pattern".into());
    }
    Ok(Setup::Plan {
        stream,
        milestone,
        owns,
    })
}

fn parse_lock(v: &str) -> Result<Setup, String> {
    let mut it = v.split_whitespace();
    let stream = it.next().ok_or("lock: needs a stream")?.to_string();
    if it.next() != Some("by") {
        return Err("lock: expected '<stream> by <session> …'".into());
    }
    let who = who_ok(it.next().ok_or("lock: 'by' needs a session")?)?;
    let (mut heartbeat_ms, mut claimed_ms, mut client, mut round, mut owns) =
        (0, None, None, 0, None);
    while let Some(k) = it.next() {
        match k {
            "heartbeat" => heartbeat_ms = age(it.next())?,
            "claimed" => claimed_ms = Some(age(it.next())?),
            "client" => {
                client = Some(match it.next() {
                    Some("live") => Client::Live,
                    Some("dead") => Client::Dead,
                    _ => return Err("lock: client is 'live' or 'dead'".into()),
                })
            }
            "round" => {
                round = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("lock: round needs a number")?
            }
            "owns" => {
                let rest: Vec<String> = it.by_ref().map(str::to_string).collect();
                if rest.is_empty() {
                    return Err("lock: owns needs at least one pattern".into());
                }
                owns = Some(rest);
            }
            other => return Err(format!("lock: unknown word '{other}'")),
        }
    }
    Ok(Setup::Lock {
        stream,
        who,
        heartbeat_ms,
        claimed_ms,
        client,
        round,
        owns,
    })
}

fn parse_after(v: &str) -> Result<After, String> {
    let w: Vec<&str> = v.split_whitespace().collect();
    let num = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("after: '{s}' is not a number"))
    };
    let moved = |s: &str| match s {
        "moved" => Ok(true),
        "kept" => Ok(false),
        _ => Err(format!("after: expected 'moved' or 'kept', found '{s}'")),
    };
    Ok(match w.as_slice() {
        ["lock", s, "by", who] => After::LockBy(s.to_string(), who_ok(who)?),
        ["lock", s, "round", n] => After::Round(s.to_string(), num(n)?),
        ["lock", s, "owns", rest @ ..] if !rest.is_empty() => {
            After::Owns(s.to_string(), rest.iter().map(|x| x.to_string()).collect())
        }
        ["no", "lock", s] => After::NoLock(s.to_string()),
        ["heartbeat", s, m] => After::Heartbeat(s.to_string(), moved(m)?),
        ["claimed", s, m] => After::Claimed(s.to_string(), moved(m)?),
        ["done", s] => After::Done(s.to_string()),
        ["no", "done", s] => After::NoDone(s.to_string()),
        ["milestone", n] => After::Milestone(num(n)?),
        ["no", "milestone", n] => After::NoMilestone(num(n)?),
        ["registered", who] => After::Registered(who_ok(who)?),
        ["not", "registered", who] => After::NotRegistered(who_ok(who)?),
        _ => return Err(format!("after: unknown condition '{v}'")),
    })
}

impl Case {
    fn once(&mut self, key: &str) -> Result<(), String> {
        if self.seen.iter().any(|k| k == key) {
            return Err(format!("'{key}' is given twice"));
        }
        self.seen.push(key.to_string());
        Ok(())
    }

    fn apply(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        let single = |slot: &mut Option<String>| -> Result<(), String> {
            if v.is_empty() {
                return Err(format!("'{key}' needs a value"));
            }
            *slot = Some(v.to_string());
            Ok(())
        };
        match key {
            "plan" => self.setup.push(parse_plan(v)?),
            "lock" => self.setup.push(parse_lock(v)?),
            "done" => {
                let w: Vec<&str> = v.split_whitespace().collect();
                let (stream, who) = match w.as_slice() {
                    [s] => (s.to_string(), None),
                    [s, "by", who] => (s.to_string(), Some(who_ok(who)?)),
                    _ => return Err("done: expected '<stream> [by <session>]'".into()),
                };
                self.setup.push(Setup::Done { stream, who });
            }
            "config" => {
                self.once(key)?;
                self.setup.push(Setup::Config(v.to_string()));
            }
            "file" => {
                let (rel, content) = v
                    .split_once(" = ")
                    .or_else(|| v.strip_suffix(" =").map(|r| (r, "")))
                    .ok_or("file: expected '<path> = <content>'")?;
                self.setup
                    .push(Setup::File(rel.trim().to_string(), unescape(content)?));
            }
            "symlink" => {
                let (link, target) = v
                    .split_once(" -> ")
                    .ok_or("symlink: expected '<link> -> <target>'")?;
                self.setup.push(Setup::Symlink(
                    link.trim().to_string(),
                    target.trim().to_string(),
                ));
            }
            "registered" => self.setup.push(Setup::Registered(who_ok(v)?)),
            "session" => {
                self.once(key)?;
                self.session = if v == "none" { None } else { Some(who_ok(v)?) };
            }
            "client" => {
                self.once(key)?;
                self.client = Some(match v {
                    "live" => Client::Live,
                    "dead" => Client::Dead,
                    _ => return Err("client: 'live' or 'dead'".into()),
                });
            }
            "env" => {
                let (k, val) = v.split_once('=').ok_or("env: expected NAME=value")?;
                self.env.push((k.to_string(), val.to_string()));
            }
            "event" | "tool" | "path" | "command" | "cwd" | "input" => {
                self.once(key)?;
                let slot = match key {
                    "event" => &mut self.event,
                    "tool" => &mut self.tool,
                    "path" => &mut self.path,
                    "command" => &mut self.command,
                    "cwd" => &mut self.cwd,
                    _ => &mut self.input,
                };
                single(slot)?;
            }
            "command+" => match self.command.as_mut() {
                Some(c) => {
                    c.push('\n');
                    c.push_str(v);
                }
                None => return Err("'command+:' continues a 'command:' line".into()),
            },
            "stdin" => {
                self.once(key)?;
                self.stdin = Some(v.to_string());
            }
            "run" => {
                self.once(key)?;
                single(&mut self.run)?;
            }
            "filler" => {
                self.once(key)?;
                let (n, text) = v
                    .split_once(' ')
                    .ok_or("filler: expected '<count> <text>'")?;
                let n: usize = n.parse().map_err(|_| format!("filler: bad count '{n}'"))?;
                self.filler = Some((n, text.to_string()));
            }
            "only" => {
                self.once(key)?;
                if v != "unix" && v != "windows" {
                    return Err(format!("only: 'unix' or 'windows', found '{v}'"));
                }
                self.only = Some(v.to_string());
            }
            _ => return Err(format!("unknown key '{key}'")),
        }
        Ok(())
    }

    fn expect_line(&mut self, rest: &str, line: usize) -> Result<(), String> {
        let rest = rest.trim();
        let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        match word {
            "allow" | "block" => {
                if self.expect.is_some() {
                    return Err("a case has one '> allow' or '> block' line".into());
                }
                self.expect = Some(if word == "allow" {
                    if !tail.trim().is_empty() {
                        return Err("'> allow' takes nothing after it (use '> note')".into());
                    }
                    Expect::Allow
                } else {
                    let frags = quoted(tail)?;
                    if frags.is_empty() {
                        return Err("'> block' needs a \"message fragment\"".into());
                    }
                    Expect::Block(frags)
                });
            }
            "note" => {
                let frags = quoted(tail)?;
                if frags.is_empty() {
                    return Err("'> note' needs a \"fragment\"".into());
                }
                self.notes.extend(frags);
            }
            "message" => {
                let frags = quoted(tail)?;
                if frags.is_empty() {
                    return Err("'> message' needs a \"fragment\"".into());
                }
                self.messages.extend(frags);
            }
            "exit" => {
                if self.expect.is_some() {
                    return Err("a case has one '> allow', '> block' or '> exit' line".into());
                }
                let tail = tail.trim();
                let (code, frags) = tail.split_once(' ').unwrap_or((tail, ""));
                let code: i32 = code
                    .parse()
                    .map_err(|_| format!("'> exit' needs a code, found '{code}'"))?;
                self.expect = Some(Expect::Exit(code, quoted(frags)?));
            }
            "after:" => self.after.push((line, parse_after(tail)?)),
            _ => {
                return Err(format!(
                    "unknown expectation '{word}' (allow, block, note, after:)"
                ));
            }
        }
        Ok(())
    }

    fn check_complete(&self) -> Result<(), String> {
        if self.expect.is_none() {
            return Err("no '> allow' or '> block' line".into());
        }
        if self.run.is_some() != matches!(self.expect, Some(Expect::Exit(..))) {
            return Err("'run:' cases expect '> exit <code>', and only they do".into());
        }
        if self.run.is_some() {
            return Ok(());
        }
        if self.stdin.is_some()
            && (self.tool.is_some()
                || self.path.is_some()
                || self.command.is_some()
                || self.input.is_some()
                || self.event.is_some())
        {
            return Err("'stdin:' replaces the payload; drop event/tool/path/command/input".into());
        }
        if self.input.is_some() && (self.path.is_some() || self.command.is_some()) {
            return Err("'input:' replaces path/command; give one or the other".into());
        }
        let event = self.event.as_deref().unwrap_or("PreToolUse");
        if self.stdin.is_none()
            && matches!(event, "PreToolUse" | "PostToolUse")
            && self.tool.is_none()
            && self.path.is_none()
            && self.command.is_none()
        {
            return Err(format!("a {event} case needs tool:, path: or command:"));
        }
        Ok(())
    }
}

/// Parses one `.case` file; every error names the file and line.
fn parse_file(display: &str, text: &str) -> Result<Vec<Case>, Vec<String>> {
    let mut cases: Vec<Case> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |e: String| format!("{display}:{n}: {e}");
        if let Some(name) = line.strip_prefix("== ") {
            let name = name.trim();
            if name.is_empty() {
                errors.push(err("a case needs a name after '=='".into()));
            } else if cases.iter().any(|c| c.name == name) {
                errors.push(err(format!("case name '{name}' is used twice")));
            }
            cases.push(Case {
                file: display.to_string(),
                line: n,
                name: name.to_string(),
                session: Some("me".into()),
                ..Case::default()
            });
            continue;
        }
        let Some(case) = cases.last_mut() else {
            errors.push(err("expected '== <case name>' first".into()));
            continue;
        };
        let result = if let Some(rest) = line.strip_prefix('>') {
            case.expect_line(rest, n)
        } else if let Some((key, value)) = line.split_once(':') {
            if key.contains(' ') || key.is_empty() {
                Err(format!("expected 'key: value', found '{line}'"))
            } else {
                case.apply(key, value)
            }
        } else {
            Err(format!("expected 'key: value' or '> …', found '{line}'"))
        };
        if let Err(e) = result {
            errors.push(err(e));
        }
    }
    for c in &cases {
        if let Err(e) = c.check_complete() {
            errors.push(format!("{}:{}: case '{}': {e}", c.file, c.line, c.name));
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}

/// Folds `.`/`..` without touching the filesystem.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn guard_dir(host: Host) -> PathBuf {
    let guard = match host {
        Host::Linux => PathBuf::from(bin("guard")),
        Host::Windows(wine, _) => wine.exe("guard"),
    };
    guard.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The `tool_input` a client would send for `tool` on `file` (or the Bash `command`).
fn tool_input(tool: &str, command: Option<&str>, file: Option<String>) -> Value {
    if let Some(cmd) = command {
        return json!({"command": cmd, "description": "selftest"});
    }
    let Some(path) = file else { return json!({}) };
    match tool {
        "Edit" => {
            json!({"file_path": path, "old_string": "a", "new_string": "b", "replace_all": false})
        }
        "Write" => json!({"file_path": path, "content": "x\n"}),
        "MultiEdit" => {
            json!({"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]})
        }
        "NotebookEdit" => {
            json!({"notebook_path": path, "cell_id": "c1", "new_source": "print(1)"})
        }
        _ => json!({"file_path": path}),
    }
}

struct Prepared {
    repo: Repo,
    stdin: Vec<u8>,
    proc_cwd: PathBuf,
    exit2: bool,
    /// Lock timestamps as written, by stream (heartbeatAt, claimedAt).
    written: HashMap<String, (String, String)>,
    started_ms: u64,
}

/// What writing the setup left for the checks.
#[derive(Default)]
struct Written {
    exit2: bool,
    locks: HashMap<String, (String, String)>,
}

fn write_lock(
    host: Host,
    repo: &Repo,
    case: &Case,
    now: u64,
    lock: &Setup,
) -> Result<(String, (String, String)), String> {
    let Setup::Lock {
        stream,
        who,
        heartbeat_ms,
        claimed_ms,
        client,
        round,
        owns,
    } = lock
    else {
        return Err("not a lock".into());
    };
    let plan = case.setup.iter().find_map(|s| match s {
        Setup::Plan {
            stream: name,
            milestone,
            owns,
        } if name == stream => Some((*milestone, owns)),
        _ => None,
    });
    let owns = match (owns, plan) {
        (Some(o), _) => o.clone(),
        (None, Some((_, o))) => o.clone(),
        (None, None) => {
            return Err(format!(
                "lock {stream}: no plan in the case and no 'owns' on the lock line"
            ));
        }
    };
    let milestone = plan.map_or(1, |p| p.0);
    let hb = session_lock::time::iso(now.saturating_sub(*heartbeat_ms));
    let claimed = session_lock::time::iso(now.saturating_sub(claimed_ms.unwrap_or(*heartbeat_ms)));
    let mut rec = json!({
        "stream": stream,
        "sessionId": sid(who),
        "owns": owns,
        "plan": format!("plans/r-ms-{milestone:02}-{stream}/plan.md"),
        "milestone": milestone,
        "claimedAt": claimed,
        "heartbeatAt": hb,
        "round": round,
        "cwd": host.path(&repo.root),
    });
    match client {
        Some(Client::Live) => {
            let (pid, start) = host.live();
            rec["clientPid"] = json!(pid);
            rec["clientStart"] = json!(start);
        }
        Some(Client::Dead) => {
            rec["clientPid"] = json!(host.dead());
            rec["clientStart"] = json!("1");
        }
        None => {}
    }
    repo.write(
        &format!("session-lock/{stream}.lock"),
        &serde_json::to_string_pretty(&rec).unwrap_or_default(),
    );
    Ok((stream.clone(), (hb, claimed)))
}

/// Writes the case's plans, locks, markers and files into the repo, in order.
fn write_setup(host: Host, repo: &Repo, case: &Case, now: u64) -> Result<Written, String> {
    let mut out = Written::default();
    let mut holders: HashMap<&str, &str> = HashMap::new();
    for s in &case.setup {
        match s {
            Setup::Plan {
                stream,
                milestone,
                owns,
            } => {
                let refs: Vec<&str> = owns.iter().map(String::as_str).collect();
                repo.plan(stream, *milestone, &refs);
            }
            Setup::Lock { stream, who, .. } => {
                let (name, times) = write_lock(host, repo, case, now, s)?;
                out.locks.insert(name, times);
                holders.insert(stream, who);
            }
            Setup::Done { stream, who } => {
                let who = who
                    .as_deref()
                    .or_else(|| holders.get(stream.as_str()).copied())
                    .unwrap_or("me");
                let rec = json!({
                    "stream": stream,
                    "sessionId": sid(who),
                    "releasedAt": session_lock::time::iso(now),
                    "head": "",
                });
                repo.write(&format!("session-lock/{stream}.done"), &rec.to_string());
            }
            Setup::Config(text) => {
                repo.write("session-lock/config.json", text);
                out.exit2 = serde_json::from_str::<Value>(text)
                    .ok()
                    .is_some_and(|v| v["decision"] == "exit2");
            }
            Setup::File(rel, content) => repo.write(rel, content),
            Setup::Symlink(link, target) => {
                let link_path = normalize(&repo.root.join(link));
                let target_path = normalize(&repo.root.join(target));
                std::fs::create_dir_all(&target_path)
                    .map_err(|e| format!("symlink target {}: {e}", target_path.display()))?;
                if let Some(parent) = link_path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                #[cfg(unix)]
                std::os::unix::fs::symlink(&target_path, &link_path)
                    .map_err(|e| format!("symlink {}: {e}", link_path.display()))?;
                #[cfg(not(unix))]
                return Err(format!(
                    "symlink {}: needs a unix host",
                    link_path.display()
                ));
            }
            Setup::Registered(who) => {
                let (pid, start) = host.live();
                let entry = json!({
                    "sessionId": sid(who),
                    "cwd": host.path(&repo.root),
                    "pid": pid,
                    "procStart": start,
                    "updatedAt": session_lock::time::iso(now),
                });
                let dir = repo.home.join("sessions");
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                std::fs::write(dir.join(format!("{}.json", sid(who))), entry.to_string())
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(out)
}

/// The hook payload (or the raw stdin) the case describes.
fn payload_bytes(host: Host, case: &Case, repo: &Repo, cwd: &Path) -> Result<Vec<u8>, String> {
    let home = repo.home.to_string_lossy().to_string();
    // The longer names first: `$REPO` is a prefix of the others.
    let vars = [
        ("$REPO_NODRIVE_SLASH", host.no_drive(&repo.root, true)),
        ("$REPO_NODRIVE", host.no_drive(&repo.root, false)),
        ("$REPO_MSYS", host.msys(&repo.root)),
        ("$REPO", host.path(&repo.root)),
        ("$STATE_HOME", home.clone()),
        ("$CLAUDE_CONFIG_DIR", format!("{home}/claude")),
    ];
    // In `input:` and `stdin:` (JSON) a value is escaped as a JSON string's inside; in `raw:`
    // paths and `command:` lines it is written as it is.
    let subst_as = |t: &str, json: bool| -> String {
        let mut t = t.to_string();
        for (name, value) in &vars {
            let value = if json {
                let quoted = serde_json::to_string(value).unwrap_or_default();
                quoted[1..quoted.len() - 1].to_string()
            } else {
                value.clone()
            };
            t = t.replace(name, &value);
        }
        if let Some((n, text)) = &case.filler {
            t = t.replace("$FILLER", &text.repeat(*n));
        }
        t
    };
    let subst = |t: &str| subst_as(t, true);
    let plain = |t: &str| subst_as(t, false);
    if let Some(raw) = &case.stdin {
        return Ok(subst(raw).into_bytes());
    }
    let event = case.event.as_deref().unwrap_or("PreToolUse");
    let mut p = json!({
        "session_id": case.session.as_deref().map(sid).unwrap_or_default(),
        "transcript_path": host.path(&repo.base.join("transcript.jsonl")),
        "cwd": host.path(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
    });
    if case.cwd.as_deref() == Some("none")
        && let Some(o) = p.as_object_mut()
    {
        o.remove("cwd");
    }
    if case.tool.is_some() || case.path.is_some() || case.command.is_some() {
        let tool = match (&case.tool, &case.command) {
            (Some(t), _) => t.clone(),
            (None, Some(_)) => "Bash".into(),
            (None, None) => "Edit".into(),
        };
        let file = case.path.as_deref().map(|v| {
            if let Some(r) = v.strip_prefix("raw:") {
                plain(r)
            } else if let Some(r) = v.strip_prefix("bindir:") {
                host.join(&guard_dir(host), r)
            } else {
                host.join(&repo.root, v)
            }
        });
        p["tool_input"] = match &case.input {
            Some(raw) => {
                serde_json::from_str(&subst(raw)).map_err(|e| format!("input: not JSON: {e}"))?
            }
            None => {
                let command = case.command.as_deref().map(plain);
                tool_input(&tool, command.as_deref(), file)
            }
        };
        p["tool_name"] = json!(tool);
        p["tool_use_id"] = json!("toolu_selftest");
        if event == "PostToolUse" {
            p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
        }
    }
    match event {
        "SessionStart" => p["source"] = json!("startup"),
        "SessionEnd" => p["reason"] = json!("other"),
        _ => {}
    }
    Ok(p.to_string().into_bytes())
}

/// The round index as the guard finds it when the case runs (issue 19): the lock files are the
/// truth whatever the index says, so every case must answer the same in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexMode {
    /// No index: the setup's files only, as a repo from before the index.
    Missing,
    /// Built from the setup's files just before the call.
    Present,
    /// Built before the setup was written, so it describes an older folder.
    Stale,
    /// Garbage where the index goes.
    Corrupt,
}

const INDEX_NOTE: &str = "guard: the round index ";

fn prepare(host: Host, case: &Case, mode: IndexMode) -> Result<Prepared, String> {
    let repo = Repo::new();
    let now = session_lock::time::now_ms();
    let layout = session_lock::state::Layout::new(&repo.root);
    if mode == IndexMode::Stale {
        layout.ensure().map_err(|e| e.to_string())?;
        session_lock::round_index::LockSet::load(&layout);
    }
    let written = write_setup(host, &repo, case, now)?;
    match mode {
        IndexMode::Present => {
            session_lock::round_index::LockSet::load(&layout);
        }
        IndexMode::Corrupt => {
            let file = session_lock::round_index::path(&layout);
            std::fs::create_dir_all(file.parent().unwrap_or(&repo.root))
                .and_then(|()| std::fs::write(&file, "{\"version\": 1, \"locks\": ["))
                .map_err(|e| e.to_string())?;
        }
        IndexMode::Missing | IndexMode::Stale => {}
    }
    let cwd = match case.cwd.as_deref() {
        None | Some("none") => repo.root.clone(),
        Some(rel) => normalize(&repo.root.join(rel)),
    };
    std::fs::create_dir_all(&cwd).map_err(|e| format!("cwd: {e}"))?;
    let stdin = payload_bytes(host, case, &repo, &cwd)?;
    Ok(Prepared {
        repo,
        stdin,
        proc_cwd: cwd,
        exit2: written.exit2,
        written: written.locks,
        started_ms: now,
    })
}

fn check_after(case: &Case, p: &Prepared) -> Vec<String> {
    let mut errs = Vec::new();
    let lock = |s: &str| p.repo.lock_json(s);
    for (line, a) in &case.after {
        let problem: Option<String> = match a {
            After::LockBy(s, who) => match lock(s) {
                Some(l) if l["sessionId"] == sid(who) => None,
                Some(l) => Some(format!(
                    "lock {s} is held by {}, expected {}",
                    l["sessionId"],
                    sid(who)
                )),
                None => Some(format!("no lock {s}")),
            },
            After::NoLock(s) => p
                .repo
                .exists(&format!("session-lock/{s}.lock"))
                .then(|| format!("lock {s} exists")),
            After::Heartbeat(s, want_moved) | After::Claimed(s, want_moved) => {
                let key = if matches!(a, After::Heartbeat(..)) {
                    "heartbeatAt"
                } else {
                    "claimedAt"
                };
                match (lock(s), p.written.get(s)) {
                    (Some(l), before) => {
                        let now_text = l[key].as_str().unwrap_or_default().to_string();
                        let before = before.map(|(hb, cl)| {
                            if key == "heartbeatAt" {
                                hb.clone()
                            } else {
                                cl.clone()
                            }
                        });
                        let fresh = session_lock::time::parse_iso(&now_text)
                            .is_some_and(|t| t + 1000 >= p.started_ms);
                        let moved = before.as_deref() != Some(now_text.as_str()) && fresh;
                        let kept = before.as_deref() == Some(now_text.as_str());
                        match (*want_moved, moved, kept) {
                            (true, true, _) | (false, _, true) => None,
                            _ => Some(format!(
                                "{key} of {s} was {before:?}, now {now_text:?}; expected it {}",
                                if *want_moved { "moved to now" } else { "kept" }
                            )),
                        }
                    }
                    (None, _) => Some(format!("no lock {s}")),
                }
            }
            After::Round(s, n) => match lock(s) {
                Some(l) if l["round"] == *n => None,
                Some(l) => Some(format!("lock {s} has round {}, expected {n}", l["round"])),
                None => Some(format!("no lock {s}")),
            },
            After::Owns(s, owns) => match lock(s) {
                Some(l) if l["owns"] == json!(owns) => None,
                Some(l) => Some(format!("lock {s} owns {}, expected {owns:?}", l["owns"])),
                None => Some(format!("no lock {s}")),
            },
            After::Done(s) => {
                (!p.repo.exists(&format!("session-lock/{s}.done"))).then(|| format!("no {s}.done"))
            }
            After::NoDone(s) => p
                .repo
                .exists(&format!("session-lock/{s}.done"))
                .then(|| format!("{s}.done exists")),
            After::Milestone(n) => (!p
                .repo
                .exists(&format!("session-lock/milestones/ms-{n:02}.done")))
            .then(|| format!("no milestones/ms-{n:02}.done")),
            After::NoMilestone(n) => p
                .repo
                .exists(&format!("session-lock/milestones/ms-{n:02}.done"))
                .then(|| format!("milestones/ms-{n:02}.done exists")),
            After::Registered(who) | After::NotRegistered(who) => {
                let path = p.repo.home.join(format!("sessions/{}.json", sid(who)));
                let entry: Option<Value> = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok());
                match (a, entry) {
                    (After::Registered(_), Some(e)) if e["sessionId"] == sid(who) => None,
                    (After::Registered(_), other) => {
                        Some(format!("{} holds {other:?}", path.display()))
                    }
                    (_, None) => None,
                    (_, Some(_)) => Some(format!("{} still exists", path.display())),
                }
            }
        };
        if let Some(e) = problem {
            errs.push(format!("line {line}: after: {e}"));
        }
    }
    errs
}

/// `text` holds `fragment`; on Windows a fragment naming a file (`session-lock/api.lock`) may
/// also appear with the platform's separator, as in a message naming the file's full path.
fn holds(host: Host, text: &str, fragment: &str) -> bool {
    text.contains(fragment) || (host.is_windows() && text.contains(&fragment.replace('/', "\\")))
}

/// A `run:` case: the suite tool run from the repo root. The test process is the client of
/// every lock written with `client live`, so the tool runs inside that session's tree.
fn run_tool_case(case: &Case, run: &str, mode: IndexMode) -> Result<(), String> {
    let p = prepare(Host::Linux, case, mode)?;
    let mut words = run.split_whitespace();
    let name = words.next().ok_or("run: names no tool")?;
    let mut cmd = p.repo.tool(name);
    cmd.args(words);
    for (k, v) in &case.env {
        cmd.env(k, v.replace("$REPO", &p.repo.root.to_string_lossy()));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {name}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut errs = Vec::new();
    if let Some(Expect::Exit(code, frags)) = &case.expect {
        if out.status.code() != Some(*code) {
            errs.push(format!(
                "expected exit {code}, got {:?}: {text:?}",
                out.status.code()
            ));
        }
        let lacking: Vec<&String> = frags
            .iter()
            .filter(|f| !text.contains(f.as_str()))
            .collect();
        if !lacking.is_empty() {
            errs.push(format!("the output lacks {lacking:?}: {text:?}"));
        }
    }
    errs.extend(check_after(case, &p));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n      "))
    }
}

/// The `systemMessage` of a guard run, if any.
fn system_message(stdout: &str) -> String {
    serde_json::from_str::<Value>(stdout)
        .ok()
        .and_then(|v| v["systemMessage"].as_str().map(str::to_string))
        .unwrap_or_default()
}

fn run_case(case: &Case, host: Host, mode: IndexMode) -> Result<(), String> {
    if let Some(run) = &case.run {
        return run_tool_case(case, run, mode);
    }
    let p = prepare(host, case, mode)?;
    let make = || {
        let mut cmd = host.guard(&p.repo, &p.proc_cwd);
        match case.client {
            Some(Client::Live) => {
                cmd.env("CLAUDE_PID", host.live().0.to_string());
            }
            Some(Client::Dead) => {
                cmd.env("CLAUDE_PID", host.dead().to_string());
            }
            None => {}
        }
        for (k, v) in &case.env {
            cmd.env(k, v.replace("$REPO", &host.path(&p.repo.root)));
        }
        cmd
    };
    let out = host.run(make, &p.stdin);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let mut stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let mut errs: Vec<String> = Vec::new();
    // A rebuilt index is said once; a good one is not mentioned.
    let index_note = stderr.lines().any(|l| l.starts_with(INDEX_NOTE));
    if index_note && mode == IndexMode::Present {
        errs.push(format!("a good index was rebuilt: {stderr:?}"));
    }
    stderr = stderr
        .lines()
        .filter(|l| !l.starts_with(INDEX_NOTE))
        .map(|l| format!("{l}\n"))
        .collect();
    let shown = || {
        format!(
            "exit {:?}, stdout {stdout:?}, stderr {stderr:?}",
            out.status.code()
        )
    };
    let message = system_message(&stdout);
    let missing: Vec<&String> = case
        .messages
        .iter()
        .filter(|m| !message.contains(m.as_str()))
        .collect();
    if !missing.is_empty() {
        errs.push(format!("the systemMessage lacks {missing:?}; {}", shown()));
    }
    let missing_notes: Vec<&String> = case
        .notes
        .iter()
        .filter(|n| !holds(host, &stderr, n))
        .collect();
    if !missing_notes.is_empty() {
        errs.push(format!("stderr lacks {missing_notes:?}; {}", shown()));
    }
    match case.expect.as_ref() {
        Some(Expect::Block(frags)) if p.exit2 => {
            if out.status.code() != Some(2) || !stdout.is_empty() {
                errs.push(format!("expected exit 2 and empty stdout; {}", shown()));
            }
            let lacking: Vec<&String> = frags.iter().filter(|f| !holds(host, &stderr, f)).collect();
            if !lacking.is_empty() {
                errs.push(format!(
                    "the reason on stderr lacks {lacking:?}; {}",
                    shown()
                ));
            }
        }
        Some(expect @ (Expect::Allow | Expect::Block(_))) => {
            match (verdict(&out), expect) {
                (Ok(crate::support::lifecycle::Verdict::Allow), Expect::Allow) => {}
                (Ok(crate::support::lifecycle::Verdict::Block(reason)), Expect::Block(frags)) => {
                    let lacking: Vec<&String> =
                        frags.iter().filter(|f| !holds(host, &reason, f)).collect();
                    if !lacking.is_empty() {
                        errs.push(format!("the reason {reason:?} lacks {lacking:?}"));
                    }
                }
                (Ok(v), _) => errs.push(format!("expected {expect:?}, got {v:?}; {}", shown())),
                (Err(e), _) => errs.push(e),
            }
            if case.notes.is_empty() && !stderr.is_empty() {
                errs.push(format!(
                    "stderr should be empty (add '> note' if a note is expected): {stderr:?}"
                ));
            }
        }
        None | Some(Expect::Exit(..)) => errs.push("no guard expectation".into()),
    }
    errs.extend(check_after(case, &p));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n      "))
    }
}

#[test]
fn lifecycle_corpus() {
    run_corpus(
        "lifecycle",
        0,
        &[false],
        IndexMode::Missing,
        "linux",
        |_| Host::Linux,
    );
}

#[test]
fn issue_19_lifecycle_corpus_with_the_round_index_present() {
    run_corpus(
        "lifecycle",
        0,
        &[false],
        IndexMode::Present,
        "linux",
        |_| Host::Linux,
    );
}

#[test]
fn issue_19_lifecycle_corpus_with_a_stale_round_index() {
    run_corpus("lifecycle", 0, &[false], IndexMode::Stale, "linux", |_| {
        Host::Linux
    });
}

#[test]
fn issue_19_lifecycle_corpus_with_a_corrupt_round_index() {
    run_corpus(
        "lifecycle",
        0,
        &[false],
        IndexMode::Corrupt,
        "linux",
        |_| Host::Linux,
    );
}

/// Issue 11's escape attempts (selftest/escapes/): each door an ordinary tool call could open
/// to switch the protocol off, with the legitimate neighbours that must stay open.
#[test]
fn issue_11_escape_corpus() {
    run_corpus("escapes", 60, &[false], IndexMode::Missing, "linux", |_| {
        Host::Linux
    });
}

/// The Bash/PowerShell write-ownership corpus, run alone and with another live session
/// registered in the tree (ownership must not depend on company).
#[test]
fn writes_corpus() {
    run_corpus(
        "writes",
        120,
        &[false, true],
        IndexMode::Missing,
        "linux",
        |_| Host::Linux,
    );
}

/// Why `case` does not run on `host`, if it does not.
fn skip_reason(case: &Case, host: Host) -> Option<&'static str> {
    if host.is_windows() && case.run.is_some() {
        return Some("a `run:` case drives the Linux tools");
    }
    match (host.is_windows(), case.only.as_deref()) {
        (true, Some("unix")) => return Some("a fact of POSIX systems alone"),
        (false, Some("windows")) => return Some("a fact of Windows alone"),
        _ => {}
    }
    let symlink = case.setup.iter().any(|s| matches!(s, Setup::Symlink(..)));
    (host.is_windows() && symlink).then_some(
        "symlinks: wine fakes them (creating one succeeds and makes nothing), and real Windows \
         needs a privilege to make them",
    )
}

/// Runs every case of `selftest/<folder>` (at least `at_least` of them), once per `company`
/// entry (with `true`, an extra live session `company` is registered in the tree first), with
/// the round index in state `mode`, on the host `host_for` picks for each run; lists every
/// failure, then fails once.
fn run_corpus(
    folder: &str,
    at_least: usize,
    company: &[bool],
    mode: IndexMode,
    label: &str,
    host_for: impl Fn(usize) -> Host + Sync,
) {
    let files = crate::support::lifecycle::case_files(folder);
    let mut cases: Vec<Case> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for (display, text) in &files {
        match parse_file(display, text) {
            Ok(c) => cases.extend(c),
            Err(errs) => failures.extend(errs),
        }
    }
    assert!(
        cases.len() >= at_least.max(1) || !failures.is_empty(),
        "{} case(s) in selftest/{folder}, expected at least {}",
        cases.len(),
        at_least.max(1)
    );
    let runs: Vec<(&Case, bool)> = company
        .iter()
        .flat_map(|&with| cases.iter().map(move |c| (c, with)))
        .collect();
    let next = AtomicUsize::new(0);
    let skipped = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::<(String, usize, String)>::new());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 4);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(case, with)) = runs.get(i) else {
                        break;
                    };
                    let host = host_for(i);
                    if let Some(why) = skip_reason(case, host) {
                        println!(
                            "selftest: {label}: skipped {}:{} {} ({why})",
                            case.file, case.line, case.name
                        );
                        skipped.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    let started = std::time::Instant::now();
                    let result = if with {
                        let mut c = case.clone();
                        c.setup.insert(0, Setup::Registered("company".into()));
                        run_case(&c, host, mode)
                    } else {
                        run_case(case, host, mode)
                    };
                    // Under wine every process start costs more; the hint is for Linux.
                    if !host.is_windows() && started.elapsed() > std::time::Duration::from_secs(1) {
                        println!(
                            "selftest: slow case {}:{} {} ({:?})",
                            case.file,
                            case.line,
                            case.name,
                            started.elapsed()
                        );
                    }
                    if let Err(e) = result
                        && let Ok(mut f) = failed.lock()
                    {
                        let who = if with { " (with another session)" } else { "" };
                        let shown = match host {
                            Host::Linux => String::new(),
                            Host::Windows(_, form) => format!(" [paths {form:?}]"),
                        };
                        let text = format!(
                            "{}:{} {}{who}{shown}\n      {e}",
                            case.file, case.line, case.name
                        );
                        f.push((case.file.clone(), case.line, text));
                    }
                }
            });
        }
    });
    let mut run_failures = failed.into_inner().unwrap_or_default();
    run_failures.sort();
    failures.extend(run_failures.into_iter().map(|(_, _, text)| text));
    println!(
        "selftest: {label}: {} {folder} cases in {} files, {} runs (round index {mode:?}), {} skipped, {} failed ({} started again after wine failed to start them)",
        cases.len(),
        files.len(),
        runs.len(),
        skipped.into_inner(),
        failures.len(),
        crate::support::wine::RESTARTS.load(Ordering::SeqCst)
    );
    assert!(
        failures.is_empty(),
        "{} selftest failure(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// The same corpus through the Windows `guard.exe` under wine, each case addressing the repo
/// in one of the Windows path forms in turn (`Z:\…`, `Z:/…`, upper case, a lower-case drive,
/// a `..` segment).
#[test]
fn lifecycle_corpus_on_windows() {
    let wine = require_wine!();
    run_corpus(
        "lifecycle",
        0,
        &[false],
        IndexMode::Missing,
        "windows",
        |i| Host::Windows(wine, Form::ALL[i % Form::ALL.len()]),
    );
}

#[test]
fn corpus_parser_is_strict() {
    let bad = "== a\nfrobnicate: 1\ncommand: claim api\n> allow\n";
    let errs = parse_file("x.case", bad).unwrap_err();
    assert!(
        errs[0].starts_with("x.case:2: unknown key 'frobnicate'"),
        "{errs:?}"
    );
    let errs = parse_file("x.case", "command: claim api\n").unwrap_err();
    assert!(
        errs[0].contains("x.case:1: expected '== <case name>'"),
        "{errs:?}"
    );
    let errs = parse_file("x.case", "== a\ncommand: x\n").unwrap_err();
    assert!(errs[0].contains("no '> allow' or '> block'"), "{errs:?}");
    let errs = parse_file("x.case", "== a\ncommand: x\n> block oops\n").unwrap_err();
    assert!(errs[0].contains("x.case:3:"), "{errs:?}");
    let errs = parse_file(
        "x.case",
        "== a\ncommand: x\n> allow\n== a\ncommand: y\n> allow\n",
    )
    .unwrap_err();
    assert!(errs[0].contains("used twice"), "{errs:?}");
    let errs = parse_file(
        "x.case",
        "== a\nlock: api by Someone\ncommand: x\n> allow\n",
    )
    .unwrap_err();
    assert!(errs[0].contains("x.case:2: session name"), "{errs:?}");
    let errs = parse_file(
        "x.case",
        "== a\ncommand: x\n> after: lock api maybe\n> allow\n",
    )
    .unwrap_err();
    assert!(
        errs[0].contains("x.case:3: after: unknown condition"),
        "{errs:?}"
    );
    let ok = parse_file(
        "x.case",
        "# comment\n== a\nplan: api ms 2 owns src/api/** !src/api/legacy.ts\nlock: api by other heartbeat 5m client dead\nfile: a/b = x\\ny\ncommand: claim api\n> block \"held by \\\"x\\\"\" \"two\"\n> after: lock api by other\n",
    )
    .unwrap();
    assert_eq!(ok.len(), 1);
    assert_eq!(
        ok[0].expect,
        Some(Expect::Block(vec!["held by \"x\"".into(), "two".into()]))
    );
}

#[test]
fn runner_reports_wrong_expectations() {
    let text = "== wrong decision\nplan: api owns src/api/**\nlock: api by other heartbeat 1m\ntool: Edit\npath: src/api/x.ts\n> allow\n\n== wrong fragment\nplan: api owns src/api/**\nlock: api by other heartbeat 1m\ntool: Edit\npath: src/api/x.ts\n> block \"owned by stream 'ui'\"\n\n== wrong after\nplan: api owns src/api/**\ncommand: claim api\n> allow\n> after: no lock api\n\n== unexpected note\nstdin: [1]\n> allow\n";
    let cases = parse_file("x.case", text).unwrap();
    let errs: Vec<String> = cases
        .iter()
        .map(|c| run_case(c, Host::Linux, IndexMode::Missing).expect_err(&c.name))
        .collect();
    assert!(errs[0].contains("expected Allow, got Block"), "{}", errs[0]);
    assert!(
        errs[1].contains("lacks [\"owned by stream 'ui'\"]"),
        "{}",
        errs[1]
    );
    assert!(errs[2].contains("after: lock api exists"), "{}", errs[2]);
    assert!(errs[3].contains("stderr should be empty"), "{}", errs[3]);
}
