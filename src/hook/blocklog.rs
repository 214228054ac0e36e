//! The block log: every deny the guard makes, and every time it allowed because of its own
//! trouble (a fail-open), one JSON line in `session-lock/blocks.jsonl` of the repo.
//!
//! ```text
//! {"time":"2026-…Z","session":"3f2a…","stream":"ui","tool":"Bash","kind":"deny",
//!  "rule":"git.add-all","segment":"git add -A","reason":"git.add-all: `git add -A` …"}
//! ```
//!
//! The entry is made from the decision value (its refusal's rule, stream and path), never from
//! the rendered text. Written after the decision is on stdout, only for denies and fail-opens (a plain allow
//! writes nothing), with one `O_APPEND` write and no fsync: a lost line costs a log entry, not
//! a decision. Secrets are redacted before anything is written (`Authorization`/`Cookie`
//! headers, `--token`/`--password` values, `*_KEY=`/`*_TOKEN=`/`*_SECRET=`/`*_PASSWORD=`
//! assignments). The log is bounded: past [`MAX_BYTES`] it is renamed to `blocks.1.jsonl`
//! (replacing the older one) and a new one starts, so at most twice that is kept.

use super::Decision;
use crate::state::Layout;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The log, in `session-lock/`.
pub const FILE: &str = "blocks.jsonl";
/// The previous log, after a rotation.
pub const ROTATED: &str = "blocks.1.jsonl";
/// A log past this size is rotated.
pub const MAX_BYTES: u64 = 1024 * 1024;
/// The longest segment or reason kept in one line.
const MAX_TEXT: usize = 2000;

/// A deny, or an allow the guard gave because of its own trouble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Deny,
    FailOpen,
}

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// UTC ISO time.
    pub time: String,
    pub session: String,
    /// The stream the session holds, when it holds one.
    #[serde(default)]
    pub stream: Option<String>,
    pub tool: String,
    pub kind: Kind,
    /// The command rule's id (`git.add-all`), or the protocol check that refused
    /// ([`super::Rule::as_str`]: `ownership`, `protected`, `claim`, …).
    #[serde(default)]
    pub rule: Option<String>,
    /// The offending segment (command rules), else the tool's command or target path.
    #[serde(default)]
    pub segment: String,
    pub reason: String,
    /// The target the refusal is about (repo-relative inside the repo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The stream the refusal is about: the target's owner, the stream claimed or released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Where the log of the repo at `root` lives.
pub fn path(root: &Path) -> PathBuf {
    Layout::new(root).dir.join(FILE)
}

/// Appends the entry for `decision` (a deny or a fail-open) to the log of the payload's repo.
/// Nothing for a plain allow or a payload with no repo. An error says why the line could not
/// be written (the decision stands).
pub fn record(payload: &[u8], decision: &Decision) -> std::io::Result<()> {
    let Some(kind) = kind_of(decision) else {
        return Ok(());
    };
    let p: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
    let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let cwd = field("cwd");
    let project = std::env::var("CLAUDE_PROJECT_DIR").ok();
    let start = if cwd.is_empty() {
        std::env::current_dir().unwrap_or_default()
    } else {
        PathBuf::from(&cwd)
    };
    let Some(root) = crate::state::repo_root(&start, project.as_deref()) else {
        return Ok(());
    };
    let layout = Layout::new(&root);
    if !layout.dir.is_dir() {
        return Ok(());
    }
    let session = field("session_id");
    let stream = match &decision.caller_stream {
        Some(known) => known.clone(),
        None => stream_of(&layout, &session),
    };
    let entry = entry_for(kind, decision, &p, &session, stream);
    if let Err(e) = append(&layout, &entry) {
        // The decision is out already; said on stderr once per session (the notices file lives
        // in the state home, off the full disk), so lost lines are not lost silently.
        let home = crate::sessions::state_home();
        let notice = super::notices::Notice::new(
            "block-log-unwritable",
            format!(
                "the block log {} cannot be written ({e}); denies are not logged (guard log, status) until it can be (guard doctor checks the folder)",
                layout.dir.join(FILE).display()
            ),
        );
        for fresh in super::notices::unseen(home.as_deref(), &session, vec![notice]) {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("session-lock: {}\n", fresh.text),
            );
        }
    }
    Ok(())
}

fn kind_of(decision: &Decision) -> Option<Kind> {
    if decision.is_block() {
        Some(Kind::Deny)
    } else if decision.trouble {
        Some(Kind::FailOpen)
    } else {
        None
    }
}

/// The stream whose live lock names `session`. Only the lock whose text mentions the session
/// is parsed: a deny with many live locks stays cheap.
fn stream_of(layout: &Layout, session: &str) -> Option<String> {
    if session.is_empty() {
        return None;
    }
    let quoted = format!("\"{session}\"");
    for e in std::fs::read_dir(&layout.dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(stream) = name.strip_suffix(".lock") else {
            continue;
        };
        if stream.starts_with('.') || name == "build.lock" {
            continue;
        }
        if !crate::atomic::read_regular(e.path(), crate::atomic::MAX_READ)
            .is_ok_and(|t| t.contains(&quoted))
        {
            continue;
        }
        if let Ok(Some(h)) = layout.read_lock(stream)
            && h.record.session_id == session
            && !h.done
        {
            return Some(h.record.stream);
        }
    }
    None
}

/// The log entry for a decision, with the payload's fields (`tool_name`, `tool_input`).
pub fn entry_for(
    kind: Kind,
    decision: &Decision,
    payload: &Value,
    session: &str,
    stream: Option<String>,
) -> Entry {
    let refusal = decision.refusal();
    let reason = match refusal {
        Some(r) => r.reason.clone(),
        None => decision
            .log
            .iter()
            .map(|l| l.strip_prefix("guard: ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("; "),
    };
    let input = payload.get("tool_input");
    let input_str = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
    let segment = match refusal.and_then(|r| r.segment.as_deref()) {
        Some(segment) => segment.to_string(),
        None => input_str("command")
            .or_else(|| input_str("file_path"))
            .or_else(|| input_str("notebook_path"))
            .or_else(|| input_str("path"))
            .unwrap_or("")
            .to_string(),
    };
    Entry {
        time: crate::time::iso(crate::time::now_ms()),
        session: session.to_string(),
        stream,
        tool: payload
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        kind,
        rule: refusal.map(|r| r.rule.as_str().to_string()),
        segment: clip(&redact(&segment)),
        reason: clip(&redact(&reason)),
        path: refusal
            .and_then(|r| r.path.as_deref())
            .map(|p| clip(&redact(p))),
        owner: refusal.and_then(|r| r.stream.clone()),
    }
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn append(layout: &Layout, entry: &Entry) -> std::io::Result<()> {
    let dir = &layout.dir;
    let file = dir.join(FILE);
    if std::fs::metadata(&file).is_ok_and(|m| m.len() >= MAX_BYTES) {
        std::fs::rename(&file, dir.join(ROTATED))?;
    }
    // Creating the log moves the folder's time, which the round index is stamped with.
    let created = !file.exists();
    let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    // One write on an O_APPEND file: concurrent guards' lines do not interleave.
    crate::atomic::append_line(&file, &line, false)?;
    if created {
        crate::round_index::restamp(layout);
    }
    Ok(())
}

/// Every entry of the repo's log (the rotated one first), oldest first. Lines that do not parse
/// are skipped.
pub fn read(root: &Path) -> std::io::Result<Vec<Entry>> {
    let dir = Layout::new(root).dir;
    let mut out = Vec::new();
    for name in [ROTATED, FILE] {
        let lines = crate::atomic::read_lines_as::<Entry>(&dir.join(name), false)?;
        out.extend(lines.records);
    }
    Ok(out)
}

/// A line of the log as [`denies_by_session`] reads it: the fields of [`Entry`] with the same
/// types and the same ones required, so the same lines parse, but its text borrowed rather
/// than copied out.
#[derive(Deserialize)]
#[allow(dead_code)] // read only to check the line is an entry
struct Counted<'a> {
    #[serde(borrow)]
    time: Cow<'a, str>,
    #[serde(borrow)]
    session: Cow<'a, str>,
    #[serde(default)]
    stream: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    kind: Kind,
    #[serde(default)]
    rule: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    segment: Cow<'a, str>,
    #[serde(borrow)]
    reason: Cow<'a, str>,
}

/// How many denies each session has in the repo's log (the rotated one too): the entries
/// [`read`] gives, counted without being built.
///
/// Counted incrementally: `session-lock/.index/blocks.json` keeps, per log file, how far it was
/// counted and the counts so far, so a call reads only the lines appended since (the log is
/// append-only). A file is known by a hash of its first bytes, not by its name, so the counts
/// of `blocks.jsonl` carry over when it is rotated to `blocks.1.jsonl`. An entry whose file is
/// shorter than counted or starts differently is counted again from the start; the cache is a
/// cache (unreadable, it is rebuilt) and is written only where `.index/` already exists, so it
/// never moves the folder's time the round index is stamped with.
pub fn denies_by_session(root: &Path) -> std::io::Result<HashMap<String, usize>> {
    let dir = Layout::new(root).dir;
    let cache_file = dir.join(".index").join(COUNTS_FILE);
    let cached: Vec<CountedFile> =
        crate::atomic::read_regular(&cache_file, crate::atomic::MAX_READ)
            .ok()
            .and_then(|b| serde_json::from_str::<CountsCache>(&b).ok())
            .filter(|c| c.version == COUNTS_VERSION)
            .map(|c| c.files)
            .unwrap_or_default();
    let mut files = Vec::new();
    for name in [ROTATED, FILE] {
        let mut file = match crate::atomic::open_regular(&dir.join(name)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let mut head = Vec::with_capacity(HEAD_BYTES);
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut file, HEAD_BYTES as u64),
            &mut head,
        )?;
        // The entry counted from this same file (its first bytes the same), if any.
        let known = cached.iter().find(|c| {
            c.head_len <= head.len() && c.len <= len && hash_of(&head[..c.head_len]) == c.head
        });
        let (mut counts, from) = match known {
            Some(c) => (c.counts.clone(), c.len),
            None => (HashMap::new(), 0),
        };
        let mut rest = Vec::new();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(from))?;
        std::io::Read::read_to_end(&mut file, &mut rest)?;
        let counted = count_denies(&rest, &mut counts) as u64;
        files.push(CountedFile {
            head: hash_of(&head),
            head_len: head.len(),
            len: from + counted,
            counts,
        });
    }
    let mut total: HashMap<String, usize> = HashMap::new();
    for f in &files {
        for (session, n) in &f.counts {
            *total.entry(session.clone()).or_insert(0) += n;
        }
    }
    if files != cached && cache_file.parent().is_some_and(Path::is_dir) {
        let cache = CountsCache {
            version: COUNTS_VERSION,
            files,
        };
        if let Ok(text) = serde_json::to_vec(&cache) {
            let _ = crate::atomic::replace_cache(&cache_file, &text);
        }
    }
    Ok(total)
}

/// The deny counts cache in `session-lock/.index/`.
const COUNTS_FILE: &str = "blocks.json";
const COUNTS_VERSION: u32 = 1;
/// How many of a log file's first bytes name it.
const HEAD_BYTES: usize = 256;

#[derive(Serialize, Deserialize)]
struct CountsCache {
    version: u32,
    files: Vec<CountedFile>,
}

/// One log file as far as it was counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountedFile {
    /// A hash of its first `head_len` bytes (at most [`HEAD_BYTES`]).
    head: u64,
    head_len: usize,
    /// The bytes counted: whole lines only.
    len: u64,
    counts: HashMap<String, usize>,
}

fn hash_of(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Adds the denies of the complete lines of `bytes` to `counts`; returns how many bytes those
/// lines take (a torn last line is left for the next count).
fn count_denies(bytes: &[u8], counts: &mut HashMap<String, usize>) -> usize {
    for (_, line) in crate::atomic::complete_lines(bytes) {
        if let Ok(e) = serde_json::from_slice::<Counted>(line)
            && e.kind == Kind::Deny
        {
            match counts.get_mut(e.session.as_ref()) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(e.session.into_owned(), 1);
                }
            }
        }
    }
    bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)
}

const REDACTED: &str = "[redacted]";

/// Hides secrets in a command or reason: header values of `Authorization`, `Proxy-Authorization`
/// and `Cookie`/`Set-Cookie`; the value after `--token`, `--password`, `--api-key`, `--secret`
/// (`=` or a space); and the value of assignments to names ending in `_KEY`, `_TOKEN`,
/// `_SECRET`, `_PASSWORD` (any case).
pub fn redact(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if let Some((value_at, header)) = secret_starts(b, i) {
            out.push_str(&text[i..value_at]);
            out.push_str(REDACTED);
            i = if header {
                // A header's value runs to the end of its quoted argument or line.
                b[value_at..]
                    .iter()
                    .position(|c| b"'\"\n".contains(c))
                    .map_or(b.len(), |k| value_at + k)
            } else {
                value_end(b, value_at)
            };
            continue;
        }
        let ch = text[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

const HEADERS: [&str; 2] = ["authorization:", "cookie:"];
const FLAGS: [&str; 4] = ["--token", "--password", "--api-key", "--secret"];
const SUFFIXES: [&str; 4] = ["_key=", "_token=", "_secret=", "_password="];

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where a secret value starts, when a secret's name starts at `i` (and whether it is a
/// header's).
fn secret_starts(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let at = &b[i..];
    let skip_spaces = |mut j: usize| {
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        j
    };
    for h in HEADERS {
        if at.starts_with(h.as_bytes()) {
            return Some((skip_spaces(i + h.len()), true)).filter(|&(j, _)| j < b.len());
        }
    }
    if i == 0 || !is_word(b[i - 1]) && b[i - 1] != b'-' {
        for f in FLAGS {
            if at.starts_with(f.as_bytes()) {
                let j = i + f.len();
                match b.get(j) {
                    Some(b'=') => return Some((j + 1, false)),
                    Some(b' ') => {
                        return Some((skip_spaces(j), false)).filter(|&(k, _)| k < b.len());
                    }
                    _ => {}
                }
            }
        }
    }
    // An assignment: the name runs from a non-word byte to one of the suffixes.
    if is_word(b[i]) && (i == 0 || !is_word(b[i - 1])) {
        let mut j = i;
        while j < b.len() && is_word(b[j]) {
            j += 1;
        }
        if b.get(j) == Some(&b'=') {
            let name_eq = &b[i..=j];
            if SUFFIXES.iter().any(|s| name_eq.ends_with(s.as_bytes())) {
                return Some((j + 1, false));
            }
        }
    }
    None
}

/// Where a secret value ends: its closing quote when quoted, else the next space, quote,
/// separator or line end.
fn value_end(b: &[u8], start: usize) -> usize {
    if let Some(&q) = b.get(start).filter(|c| **c == b'\'' || **c == b'"') {
        return b[start + 1..]
            .iter()
            .position(|c| *c == q)
            .map_or(b.len(), |k| start + 1 + k + 1);
    }
    let mut j = start;
    while j < b.len() && !b" \t\n'\";&|`)".contains(&b[j]) {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::{Refusal, Rule};
    use crate::rules::RuleId;
    use crate::words::HookEvent;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted() {
        let cases = [
            (
                "curl -H 'Authorization: Bearer abc.def' https://x",
                "curl -H 'Authorization: [redacted]' https://x",
            ),
            (
                "curl -H \"Cookie: sid=1; a=2\" u",
                "curl -H \"Cookie: [redacted]\" u",
            ),
            ("gh --token ghp_123 api", "gh --token [redacted] api"),
            (
                "mysql --password=hunter2 db",
                "mysql --password=[redacted] db",
            ),
            (
                "OPENAI_API_KEY=sk-1 GH_TOKEN='a b' npm run x",
                "OPENAI_API_KEY=[redacted] GH_TOKEN=[redacted] npm run x",
            ),
            (
                "export db_password=\"p w\"; ls",
                "export db_password=[redacted]; ls",
            ),
            ("git push --tokens-file x", "git push --tokens-file x"),
            ("MONKEY=1 KEY=2 ls", "MONKEY=1 KEY=2 ls"),
            ("echo ünïcode_TOKEN=x", "echo ünïcode_TOKEN=[redacted]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn an_entry_names_the_rule_and_segment_of_a_command_deny() {
        let reason = "git.add-all: `git add -A` stages every session's files; sweeping. Instead: git add <paths>.";
        let refusal = Refusal {
            segment: Some("git add -A".into()),
            ..Refusal::new(Rule::Command(RuleId::GitAddAll), reason)
        };
        let d = Decision::deny(HookEvent::PreToolUse, refusal);
        let p = json!({"tool_name": "Bash", "tool_input": {"command": "TOKEN_KEY=s git add -A"}});
        let e = entry_for(Kind::Deny, &d, &p, "s1", Some("ui".into()));
        assert_eq!(e.rule.as_deref(), Some("git.add-all"));
        assert_eq!(e.segment, "git add -A");
        assert_eq!(e.reason, reason);
        assert_eq!((e.tool.as_str(), e.stream.as_deref()), ("Bash", Some("ui")));

        // The rule comes from the value, whatever the reason says.
        let d = Decision::deny(
            HookEvent::PreToolUse,
            Refusal::new(Rule::Ownership, "x.ts: `a` is owned")
                .with_stream("api")
                .with_path("src/api/x.ts"),
        );
        let p = json!({"tool_name": "Edit", "tool_input": {"file_path": "/r/src/api/x.ts"}});
        let e = entry_for(Kind::Deny, &d, &p, "s1", None);
        assert_eq!(e.rule.as_deref(), Some("ownership"));
        assert_eq!(e.segment, "/r/src/api/x.ts");
        assert_eq!(
            (e.path.as_deref(), e.owner.as_deref()),
            (Some("src/api/x.ts"), Some("api"))
        );
        let d = Decision::deny(
            HookEvent::PreToolUse,
            Refusal::new(Rule::Protected, "x is owned by stream 'y'"),
        );
        assert_eq!(
            entry_for(Kind::Deny, &d, &p, "s1", None).rule.as_deref(),
            Some("protected"),
            "a reason that reads like another rule's does not change the rule"
        );

        let d = Decision::fail_open("bad config");
        assert_eq!(kind_of(&d), Some(Kind::FailOpen));
        assert_eq!(kind_of(&Decision::allow(HookEvent::PreToolUse)), None);
        let e = entry_for(Kind::FailOpen, &d, &p, "s1", None);
        assert_eq!((e.rule, e.reason.as_str()), (None, "bad config"));
    }

    #[test]
    fn the_log_rotates_past_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let sl = dir.path().join("session-lock");
        std::fs::create_dir_all(&sl).unwrap();
        let p = json!({"tool_name": "Bash", "tool_input": {"command": "x"}});
        let e = entry_for(Kind::FailOpen, &Decision::fail_open("n"), &p, "s", None);
        std::fs::write(sl.join(FILE), vec![b'\n'; MAX_BYTES as usize]).unwrap();
        append(&Layout::new(dir.path()), &e).unwrap();
        assert_eq!(
            std::fs::metadata(sl.join(ROTATED)).unwrap().len(),
            MAX_BYTES
        );
        assert_eq!(read(dir.path()).unwrap(), vec![e]);
    }

    /// A deny line of `session`, as the guard appends it.
    fn deny_line(session: &str, n: usize) -> String {
        let e = Entry {
            time: format!("2026-11-30T05:40:{:02}.000Z", n % 60),
            session: session.into(),
            stream: None,
            tool: "Bash".into(),
            kind: Kind::Deny,
            rule: Some("git.add-all".into()),
            segment: "git add -A".into(),
            reason: format!("blocked #{n}"),
            path: None,
            owner: None,
        };
        format!("{}\n", serde_json::to_string(&e).unwrap())
    }

    fn add(path: &Path, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// The counts a full read of every line gives.
    fn recount(root: &Path) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for e in read(root).unwrap() {
            if e.kind == Kind::Deny {
                *out.entry(e.session).or_insert(0) += 1;
            }
        }
        out
    }

    /// Adds a count no log line gives to the cache's first file, to see the cache being read.
    fn plant(sl: &Path, n: usize) {
        let mut cache = cache_of(sl);
        cache.files[0].counts.insert("planted".into(), n);
        std::fs::write(
            sl.join(".index").join(COUNTS_FILE),
            serde_json::to_vec(&cache).unwrap(),
        )
        .unwrap();
    }

    fn cache_of(sl: &Path) -> CountsCache {
        serde_json::from_slice(&std::fs::read(sl.join(".index").join(COUNTS_FILE)).unwrap())
            .unwrap()
    }

    #[test]
    fn denies_are_counted_from_where_the_last_count_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let sl = dir.path().join("session-lock");
        std::fs::create_dir_all(sl.join(".index")).unwrap();
        let log = sl.join(FILE);
        for n in 0..5 {
            add(&log, &deny_line(if n % 2 == 0 { "a" } else { "b" }, n));
        }
        add(&log, "not json\n");
        assert_eq!(denies_by_session(dir.path()).unwrap(), recount(dir.path()));
        let cache = cache_of(&sl);
        assert_eq!(cache.files.len(), 1);
        assert_eq!(cache.files[0].len, std::fs::metadata(&log).unwrap().len());

        // The cache is what is read: a count planted in it shows, and only new lines are added.
        plant(&sl, 7);
        add(&log, &deny_line("a", 5));
        let counts = denies_by_session(dir.path()).unwrap();
        assert_eq!(counts.get("planted"), Some(&7));
        assert_eq!(counts.get("a"), Some(&4));
        assert_eq!(counts.get("b"), Some(&2));

        // A log that starts differently (deleted and begun again) is counted from its start.
        std::fs::write(&log, deny_line("c", 9)).unwrap();
        assert_eq!(denies_by_session(dir.path()).unwrap(), recount(dir.path()));
        assert_eq!(recount(dir.path()).get("c"), Some(&1));

        // A broken cache is a cache: the counts are right and it is written again.
        std::fs::write(sl.join(".index").join(COUNTS_FILE), "{oops").unwrap();
        assert_eq!(denies_by_session(dir.path()).unwrap(), recount(dir.path()));
        assert_eq!(cache_of(&sl).version, COUNTS_VERSION);
    }

    #[test]
    fn a_torn_last_line_is_counted_once_when_it_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let sl = dir.path().join("session-lock");
        std::fs::create_dir_all(sl.join(".index")).unwrap();
        let log = sl.join(FILE);
        add(&log, &deny_line("a", 0));
        let line = deny_line("a", 1);
        let (first, second) = line.split_at(line.len() / 2);
        add(&log, first);
        assert_eq!(denies_by_session(dir.path()).unwrap().get("a"), Some(&1));
        add(&log, second);
        assert_eq!(denies_by_session(dir.path()).unwrap().get("a"), Some(&2));
        assert_eq!(denies_by_session(dir.path()).unwrap().get("a"), Some(&2));
    }

    #[test]
    fn counts_carry_over_a_rotation_and_no_cache_is_made_without_the_index_folder() {
        let dir = tempfile::tempdir().unwrap();
        let sl = dir.path().join("session-lock");
        std::fs::create_dir_all(&sl).unwrap();
        let log = sl.join(FILE);
        add(&log, &deny_line("a", 0));
        assert_eq!(denies_by_session(dir.path()).unwrap().get("a"), Some(&1));
        assert!(
            !sl.join(".index").exists(),
            "the folder's time must not move"
        );

        std::fs::create_dir_all(sl.join(".index")).unwrap();
        denies_by_session(dir.path()).unwrap();
        plant(&sl, 3);
        // Rotated as `append` does: the counted file is now blocks.1.jsonl.
        std::fs::rename(&log, sl.join(ROTATED)).unwrap();
        add(&log, &deny_line("b", 1));
        let counts = denies_by_session(dir.path()).unwrap();
        assert_eq!(
            counts.get("planted"),
            Some(&3),
            "the rotated file was not read again"
        );
        assert_eq!((counts.get("a"), counts.get("b")), (Some(&1), Some(&1)));
        assert_eq!(cache_of(&sl).files.len(), 2);
    }
}
