//! Which sessions exist: live ones from the client's registry (`<config>/sessions/<pid>.json`,
//! pid + start time alive) and the suite's registry (kept by the guard), cold ones from
//! transcripts on disk (`<config>/projects/<slug>/<id>.jsonl`) that can be resumed. Names come
//! from the client (its session name, the transcript's title) and from the streams sessions have
//! claimed in this repo (`session-lock/<stream>.lock`).

use crate::sessions::{self, claude, registry};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How much of a transcript's head and tail is read for its cwd, title and mode.
const HEAD_BYTES: u64 = 64 * 1024;
const TAIL_BYTES: u64 = 128 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Peer,
    Subagent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Idle,
    #[default]
    Offline,
}

string_enum! {
    /// Where the name a session is listed by comes from.
    NameSource {
        /// The client's name, set by the person (`-n`, `/rename`).
        User = "user",
        /// The client's name, made up by it.
        Generated = "generated",
        /// The transcript's title.
        Title = "title",
        /// A stream the session claimed in this repo.
        Stream = "stream",
        Subagent = "subagent",
        /// `session-<id8>`: it answers only to its id.
        Fallback = "fallback",
    }
}

/// A running client process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Live {
    pub pid: u32,
    pub proc_start: Option<String>,
    /// The client's messaging socket; `None` for a client without one (the hook route).
    pub socket: Option<PathBuf>,
}

/// A live target right now, per either registry (a wake checks again before resuming).
pub fn live_now(session_id: &str) -> Option<Live> {
    let mut best: Option<(u64, Live)> = None;
    for e in claude::entries() {
        if e.session_id == session_id && e.alive() {
            let at = e.started_at.unwrap_or(0);
            if best.as_ref().is_none_or(|(b, _)| at >= *b) {
                best = Some((
                    at,
                    Live {
                        pid: e.pid,
                        proc_start: e.proc_start.clone(),
                        socket: e.messaging_socket_path.as_ref().map(PathBuf::from),
                    },
                ));
            }
        }
    }
    if let Some((_, l)) = best {
        return Some(l);
    }
    let home = sessions::state_home()?;
    let e = registry::read(&home, session_id)?;
    let pid = e.pid?;
    crate::liveness::is_alive(pid, e.proc_start.as_deref()).then_some(Live {
        pid,
        proc_start: e.proc_start,
        socket: None,
    })
}

/// A session one could address.
#[derive(Clone, Debug, Default)]
pub struct Target {
    pub id: String,
    /// What lists show: the client's name, else the transcript's title, else a claimed
    /// stream, else `session-<id8>`.
    pub name: String,
    pub name_source: NameSource,
    /// Every name it answers to (case-insensitive); the fallback name is not one of them.
    pub names: Vec<String>,
    pub cwd: String,
    /// The repo (git top level) of `cwd`, or `cwd` itself outside any repo.
    pub workspace: String,
    pub kind: Kind,
    /// For a subagent: the session it belongs to.
    pub parent: Option<String>,
    pub status: Status,
    pub live: Option<Live>,
    pub last_activity_ms: u64,
    pub transcript: Option<PathBuf>,
    /// The client's permission mode name as last recorded (`bypassPermissions`, `default`, …).
    pub permission_mode: Option<String>,
}

/// `session-<first 8 of id>`.
pub fn fallback_name(id: &str) -> String {
    format!("session-{}", crate::state::short_id(id))
}

/// The transcript folder name for a cwd: every character outside `[A-Za-z0-9]` becomes `-`.
pub fn slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The repo of a folder (`git` top level), or the folder itself.
pub fn workspace_of(cwd: &str) -> String {
    if cwd.is_empty() {
        return String::new();
    }
    match crate::state::git_top(Path::new(cwd)) {
        Some(top) => top.to_string_lossy().to_string(),
        None => cwd.trim_end_matches(['/', '\\']).to_string(),
    }
}

/// What the head and tail of a transcript say.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TranscriptInfo {
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub agent_name: Option<String>,
    pub permission_mode: Option<String>,
    /// The model of the latest real answer (a resume keeps using it).
    pub model: Option<String>,
}

fn scan_lines(bytes: &[u8], info: &mut TranscriptInfo, head: bool) {
    for line in bytes.split(|b| *b == b'\n') {
        // Cheap prefilter: only lines that can carry what we want are parsed.
        let s = String::from_utf8_lossy(line);
        let wanted = s.contains("\"cwd\"")
            || s.contains("custom-title")
            || s.contains("agent-name")
            || s.contains("\"permissionMode\"")
            || s.contains("\"model\"");
        if !wanted {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) else {
            continue;
        };
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        if head {
            if info.cwd.is_none() {
                info.cwd = field("cwd");
            }
            continue;
        }
        match v.get("type").and_then(|t| t.as_str()) {
            Some("custom-title") => info.title = field("customTitle").or(info.title.take()),
            Some("agent-name") => info.agent_name = field("agentName").or(info.agent_name.take()),
            Some("user") => {
                if let Some(m) = field("permissionMode") {
                    info.permission_mode = Some(m);
                }
            }
            Some("assistant") => {
                let model = v
                    .get("message")
                    .and_then(|m| m.get("model"))
                    .and_then(|m| m.as_str())
                    .filter(|m| !m.is_empty() && !m.starts_with('<'));
                if let Some(m) = model {
                    info.model = Some(m.to_string());
                }
            }
            _ => {}
        }
        if info.cwd.is_none() {
            info.cwd = field("cwd");
        }
    }
}

/// Reads a transcript's first line with a cwd, and its latest title, agent name and permission
/// mode. `None` when the file cannot be read.
pub fn transcript_info(path: &Path) -> Option<TranscriptInfo> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut info = TranscriptInfo::default();
    let mut head = Vec::new();
    (&mut f).take(HEAD_BYTES).read_to_end(&mut head).ok()?;
    scan_lines(&head, &mut info, true);
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let tail = if from > 0 {
        match tail.iter().position(|b| *b == b'\n') {
            Some(i) => &tail[i + 1..],
            None => &tail[..0],
        }
    } else {
        &tail[..]
    };
    let cwd = info.cwd.clone();
    scan_lines(tail, &mut info, false);
    if cwd.is_some() {
        info.cwd = cwd;
    }
    if info.permission_mode.is_none() && from > 0 {
        info.permission_mode = last_mode(&mut f, from);
    }
    Some(info)
}

/// The latest `permissionMode` recorded before byte `end`, read back from there in chunks. The
/// client records the mode on prompt lines only, so one long turn can push it far from the tail;
/// it never ages out this way (a session's first prompt always has one).
fn last_mode(f: &mut std::fs::File, end: u64) -> Option<String> {
    const CHUNK: u64 = 64 * 1024;
    const NEEDLE: &[u8] = b"\"permissionMode\"";
    let mut hi = end;
    // The start of the line that runs into the chunk after this one.
    let mut carry: Vec<u8> = Vec::new();
    while hi > 0 {
        let lo = hi.saturating_sub(CHUNK);
        f.seek(SeekFrom::Start(lo)).ok()?;
        let mut buf = vec![0u8; (hi - lo) as usize];
        f.read_exact(&mut buf).ok()?;
        buf.extend_from_slice(&carry);
        // Unless this is the file's start, the first line may begin in an earlier chunk.
        let whole = if lo == 0 {
            0
        } else {
            match buf.iter().position(|b| *b == b'\n') {
                Some(i) => i + 1,
                None => buf.len(),
            }
        };
        for line in buf[whole..].rsplit(|b| *b == b'\n') {
            if !line.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
                continue;
            }
            let mut info = TranscriptInfo::default();
            scan_lines(line, &mut info, false);
            if info.permission_mode.is_some() {
                return info.permission_mode;
            }
        }
        buf.truncate(whole);
        carry = buf;
        hi = lo;
    }
    None
}

/// Transcript facts remembered between runs (`<state home>/messaging/transcripts.json`), each
/// valid while its file keeps the size and modification time it had: a snapshot then reads only
/// the transcripts that changed.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct InfoCache {
    files: HashMap<String, Cached>,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Cached {
    len: u64,
    mtime: u64,
    info: TranscriptInfo,
}

struct InfoReader {
    path: Option<PathBuf>,
    old: InfoCache,
    new: InfoCache,
    changed: bool,
}

impl InfoReader {
    fn load() -> InfoReader {
        let path = sessions::state_home().map(|h| h.join("messaging").join("transcripts.json"));
        let old = path
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        InfoReader {
            path,
            old,
            new: InfoCache::default(),
            changed: false,
        }
    }

    fn info(&mut self, file: &Path) -> TranscriptInfo {
        let key = file.to_string_lossy().to_string();
        let (len, mtime) = (file_len(file), mtime_ms(file));
        if let Some(c) = self.old.files.get(&key)
            && c.len == len
            && c.mtime == mtime
        {
            self.new.files.insert(key, c.clone());
            return c.info.clone();
        }
        let info = transcript_info(file).unwrap_or_default();
        self.changed = true;
        self.new.files.insert(
            key,
            Cached {
                len,
                mtime,
                info: info.clone(),
            },
        );
        info
    }

    /// Keeps what this snapshot saw (a full scan drops files that are gone).
    fn save(self, full: bool) {
        let Some(path) = self.path else { return };
        let before = self.old.files.len();
        let mut keep = self.new;
        if !full {
            for (k, v) in self.old.files {
                keep.files.entry(k).or_insert(v);
            }
        }
        if !self.changed && (!full || keep.files.len() == before) {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = crate::private::create_dirs(dir);
        }
        if let Ok(text) = serde_json::to_string(&keep) {
            let _ = crate::atomic::write_atomic(&path, text.as_bytes());
        }
    }
}

/// The transcript of a session: the suite registry's record, else `<projects>/<slug(cwd)>/`,
/// else any project folder holding `<id>.jsonl`.
pub fn find_transcript(session_id: &str, cwd: &str) -> Option<PathBuf> {
    crate::messaging::ledger::safe_name(session_id)?;
    if let Some(home) = sessions::state_home()
        && let Some(e) = registry::read(&home, session_id)
        && let Some(p) = e.transcript_path.map(PathBuf::from)
        && p.is_file()
    {
        return Some(p);
    }
    let projects = claude::config_dir()?.join("projects");
    let file = format!("{session_id}.jsonl");
    if !cwd.is_empty() {
        let p = projects.join(slug(cwd)).join(&file);
        if p.is_file() {
            return Some(p);
        }
    }
    for d in std::fs::read_dir(&projects).ok()?.flatten() {
        let p = d.path().join(&file);
        if p.is_file() {
            return Some(p);
        }
    }
    None
}

/// True when `id` appears in the transcript after `offset` bytes.
pub fn transcript_mentions(path: &Path, id: &str, offset: u64) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    if f.seek(SeekFrom::Start(offset)).is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    if f.read_to_end(&mut bytes).is_err() {
        return false;
    }
    String::from_utf8_lossy(&bytes).contains(id)
}

/// The length of a file now (0 when missing): where to start looking for a new line.
pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// What to gather.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Also sessions that are not running (transcripts on disk).
    pub cold: bool,
    /// Also subagent transcripts (`<session>/subagents/*.jsonl`).
    pub subagents: bool,
    /// The repo whose stream claims name sessions.
    pub repo_root: Option<PathBuf>,
}

fn mtime_ms(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn add_name(t: &mut Target, name: &str) {
    let name = name.trim();
    if !name.is_empty() && !t.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        t.names.push(name.to_string());
    }
}

/// Every session there is, live first as the registries say, then cold ones from transcripts.
pub fn snapshot(opts: &Options) -> Vec<Target> {
    let mut by_id: BTreeMap<String, Target> = BTreeMap::new();
    add_client_registry(&mut by_id);
    if let Some(home) = sessions::state_home() {
        add_suite_registry(&mut by_id, &home);
    }
    add_transcripts(&mut by_id, opts);
    if let Some(root) = opts.repo_root.as_deref() {
        add_stream_names(&mut by_id, root);
    }
    let mut out: Vec<Target> = by_id.into_values().collect();
    for t in &mut out {
        if t.name.is_empty() {
            t.name = fallback_name(&t.id);
            t.name_source = NameSource::Fallback;
        }
        t.workspace = workspace_of(&t.cwd);
    }
    out
}

/// The client's registry: several files may name one session (a resume after a crash); only a
/// live one counts, the newest wins.
fn add_client_registry(by_id: &mut BTreeMap<String, Target>) {
    let mut entries = claude::entries();
    entries.sort_by_key(|e| std::cmp::Reverse(e.started_at.unwrap_or(0)));
    for e in entries {
        if !e.alive() || by_id.contains_key(&e.session_id) {
            continue;
        }
        let mut t = Target {
            id: e.session_id.clone(),
            cwd: e.cwd.clone(),
            status: if e.status.as_deref() == Some("busy") {
                Status::Running
            } else {
                Status::Idle
            },
            live: Some(Live {
                pid: e.pid,
                proc_start: e.proc_start.clone(),
                socket: e.messaging_socket_path.as_ref().map(PathBuf::from),
            }),
            last_activity_ms: e.started_at.unwrap_or(0),
            ..Target::default()
        };
        if let Some(n) = e.name.as_deref().filter(|n| !n.trim().is_empty()) {
            add_name(&mut t, n);
            t.name = n.to_string();
            t.name_source = e
                .name_source
                .as_deref()
                .map_or(NameSource::User, NameSource::parse);
        }
        by_id.insert(e.session_id, t);
    }
}

/// The suite's registry: the mode and transcript the guard recorded for live sessions, and a
/// live client the client's registry does not list (one without a socket).
fn add_suite_registry(by_id: &mut BTreeMap<String, Target>, home: &Path) {
    for e in registry::entries(home) {
        if let Some(t) = by_id.get_mut(&e.session_id) {
            t.permission_mode = e.permission_mode.clone();
            t.transcript = e.transcript_path.as_ref().map(PathBuf::from);
            continue;
        }
        if !e.alive() {
            continue;
        }
        let Some(pid) = e.pid else { continue };
        let t = Target {
            id: e.session_id.clone(),
            cwd: e.cwd.clone(),
            status: Status::Running,
            live: Some(Live {
                pid,
                proc_start: e.proc_start.clone(),
                socket: None,
            }),
            last_activity_ms: crate::time::parse_iso(&e.updated_at).unwrap_or(0),
            transcript: e.transcript_path.as_ref().map(PathBuf::from),
            permission_mode: e.permission_mode.clone(),
            ..Target::default()
        };
        by_id.insert(e.session_id, t);
    }
}

/// Transcripts: cold sessions, and titles and modes of live ones.
fn add_transcripts(by_id: &mut BTreeMap<String, Target>, opts: &Options) {
    let mut reader = InfoReader::load();
    let Some(projects) = claude::config_dir().map(|d| d.join("projects")) else {
        return;
    };
    let Ok(dirs) = std::fs::read_dir(&projects) else {
        return;
    };
    for d in dirs.flatten() {
        let Ok(files) = std::fs::read_dir(d.path()) else {
            continue;
        };
        for f in files.flatten() {
            let path = f.path();
            let name = f.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if opts.subagents {
                    add_subagents(by_id, &path, &name, &mut reader);
                }
                continue;
            }
            if let Some(id) = name.strip_suffix(".jsonl") {
                add_transcript(by_id, opts, id, &path, &mut reader);
            }
        }
    }
    reader.save(opts.cold);
}

fn add_transcript(
    by_id: &mut BTreeMap<String, Target>,
    opts: &Options,
    id: &str,
    path: &Path,
    reader: &mut InfoReader,
) {
    if crate::messaging::ledger::safe_name(id).is_none() {
        return;
    }
    if !by_id.contains_key(id) && !opts.cold {
        return;
    }
    let info = reader.info(path);
    let t = by_id.entry(id.to_string()).or_insert_with(|| Target {
        id: id.to_string(),
        cwd: info.cwd.clone().unwrap_or_default(),
        status: Status::Offline,
        ..Target::default()
    });
    t.last_activity_ms = t.last_activity_ms.max(mtime_ms(path));
    if t.transcript.is_none() {
        t.transcript = Some(path.to_path_buf());
    }
    if t.permission_mode.is_none() {
        t.permission_mode = info.permission_mode.clone();
    }
    for n in [&info.title, &info.agent_name].into_iter().flatten() {
        add_name(t, n);
        if t.name.is_empty() {
            t.name = n.clone();
            t.name_source = NameSource::Title;
        }
    }
}

/// Names from the streams sessions hold in this repo.
fn add_stream_names(by_id: &mut BTreeMap<String, Target>, root: &Path) {
    let (locks, _) = crate::state::Layout::new(root).read_locks();
    for held in locks.iter().filter(|h| !h.done) {
        if let Some(t) = by_id.get_mut(&held.record.session_id) {
            add_name(t, &held.record.stream);
            if t.name.is_empty() {
                t.name = held.record.stream.clone();
                t.name_source = NameSource::Stream;
            }
        }
    }
}

fn add_subagents(
    by_id: &mut BTreeMap<String, Target>,
    dir: &Path,
    parent: &str,
    reader: &mut InfoReader,
) {
    let Ok(files) = std::fs::read_dir(dir.join("subagents")) else {
        return;
    };
    let parent_cwd = by_id.get(parent).map(|t| t.cwd.clone());
    for f in files.flatten() {
        let name = f.file_name().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".jsonl") else {
            continue;
        };
        let id = format!("{parent}/{stem}");
        let info = reader.info(&f.path());
        by_id.insert(
            id.clone(),
            Target {
                name: stem.to_string(),
                name_source: NameSource::Subagent,
                id,
                cwd: info.cwd.or(parent_cwd.clone()).unwrap_or_default(),
                kind: Kind::Subagent,
                parent: Some(parent.to_string()),
                status: Status::Offline,
                last_activity_ms: mtime_ms(&f.path()),
                transcript: Some(f.path()),
                ..Target::default()
            },
        );
    }
}

/// Running first, then the most recently active, then by name.
pub fn sort(targets: &mut [Target]) {
    let rank = |s: Status| match s {
        Status::Running => 0,
        Status::Idle => 1,
        Status::Offline => 2,
    };
    targets.sort_by(|a, b| {
        rank(a.status)
            .cmp(&rank(b.status))
            .then(b.last_activity_ms.cmp(&a.last_activity_ms))
            .then(a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_sessions_show_a_short_id() {
        assert_eq!(
            fallback_name("0f3c9a1b-2222-4333-8444-555555555555"),
            "session-0f3c9a1b"
        );
        assert_eq!(fallback_name("abc"), "session-abc");
    }

    #[test]
    fn slug_matches_the_clients() {
        assert_eq!(slug("/home/u/proj"), "-home-u-proj");
        assert_eq!(slug("/tmp/cc-demo.XXXX/proj"), "-tmp-cc-demo-XXXX-proj");
    }

    #[test]
    fn transcript_info_reads_cwd_title_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut text = String::new();
        text.push_str(r#"{"type":"custom-title","customTitle":"old","sessionId":"s"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"user","cwd":"/r/a","permissionMode":"default","message":{}}"#);
        text.push('\n');
        text.push_str(r#"{"type":"user","cwd":"/r/b","permissionMode":"bypassPermissions"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"custom-title","customTitle":"worker b","sessionId":"s"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"agent-name","agentName":"worker b","sessionId":"s"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"assistant","message":{"model":"claude-opus-5-5"}}"#);
        text.push('\n');
        text.push_str(r#"{"type":"assistant","message":{"model":"<synthetic>"}}"#);
        text.push('\n');
        std::fs::write(&p, text).unwrap();
        let info = transcript_info(&p).unwrap();
        assert_eq!(info.cwd.as_deref(), Some("/r/a"));
        assert_eq!(info.title.as_deref(), Some("worker b"));
        assert_eq!(info.permission_mode.as_deref(), Some("bypassPermissions"));
        assert_eq!(info.model.as_deref(), Some("claude-opus-5-5"));
        assert!(transcript_mentions(&p, "worker b", 0));
        assert!(!transcript_mentions(&p, "worker b", file_len(&p)));
    }

    #[test]
    fn the_mode_is_found_however_far_back_it_was_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut text = String::new();
        text.push_str(r#"{"type":"user","cwd":"/r","permissionMode":"default"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"user","permissionMode":"bypassPermissions","message":{}}"#);
        text.push('\n');
        // Long lines after it, one larger than a read chunk, none recording a mode.
        let big = "x".repeat(70 * 1024);
        for _ in 0..5 {
            text.push_str(&format!(r#"{{"type":"attachment","content":"{big}"}}"#));
            text.push('\n');
        }
        std::fs::write(&p, &text).unwrap();
        assert!(text.len() as u64 > TAIL_BYTES + HEAD_BYTES);
        let info = transcript_info(&p).unwrap();
        assert_eq!(info.permission_mode.as_deref(), Some("bypassPermissions"));
        assert_eq!(info.cwd.as_deref(), Some("/r"));
    }

    #[test]
    fn sort_puts_running_then_recent_then_name() {
        let t = |name: &str, status, at| Target {
            name: name.into(),
            status,
            last_activity_ms: at,
            ..Target::default()
        };
        let mut v = vec![
            t("c", Status::Offline, 9),
            t("b", Status::Idle, 5),
            t("a", Status::Idle, 5),
            t("z", Status::Running, 1),
            t("y", Status::Idle, 7),
        ];
        sort(&mut v);
        let names: Vec<&str> = v.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["z", "y", "a", "b", "c"]);
    }
}
