//! The two ledgers of messaging, one JSON object per line under `<state home>/messaging/`:
//!
//! ```text
//! outbox/<sender>.jsonl    the sender's: queued | held  →  delivered | expired | refused
//!                          (+ `sent` lines: each write to a target, never final)
//! inbound/<target>.jsonl   the target's: queued | held  →  delivered | accepted | expired | refused
//! ```
//!
//! A queued message's text lives in the sender's outbox; a held message's text lives only in the
//! target's inbound ledger, and is scrubbed from it once the message is refused or expires.
//! Appends are serialized by a file lock beside the ledger and synced before anyone reports
//! success, except a line that only restates what synced lines and the target's transcript say
//! ([`Durability::Restated`]: the socket route's `taken`); a torn last line (a crash mid-append)
//! is cut back before the next append.
//! Lines with an op this build does not know are kept and never count as final.

use super::frame::Mode;
use crate::atomic;
use crate::filelock::FileLock;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

string_enum! {
    /// What one ledger line records.
    Op {
        /// A message was recorded for delivery (its start line).
        Queued = "queued",
        /// A message was recorded for the target's review (its start line).
        Held = "held",
        /// One write to the target (socket, hook, wake); never final.
        Sent = "sent",
        /// A `sent` that did not take (the socket could not be written, a wake's run failed):
        /// cancels that attempt; `reason` says why.
        Unsent = "unsent",
        /// The target's client took it (it is in its queue, its model has not seen it).
        Taken = "taken",
        /// The process that took it stopped before its model saw it: queued again.
        Returned = "returned",
        /// It is in a model request's input (a user turn an assistant turn follows).
        Delivered = "delivered",
        /// Inbound, written by earlier builds at review: final, as delivered.
        Accepted = "accepted",
        Expired = "expired",
        Refused = "refused",
    }
}

string_enum! {
    /// How a `sent`/`delivered` line reached the target.
    Via {
        Socket = "socket",
        Hook = "hook",
        Wake = "wake",
        Review = "review",
        /// Seen in the transcript by a later look (recovery, status, the hook).
        Confirmed = "confirmed",
        Create = "create",
    }
}

/// When an appended line is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Synced (`fdatasync`) before the append returns: the line records something nothing else
    /// does (a message, a write to a target, a final state).
    Synced,
    /// Written, not synced: the line restates what synced lines and the target's transcript
    /// already say (a `taken` the socket route read there), so the next look writes it again if
    /// a machine crash loses it. A killed process loses nothing (the kernel holds the written
    /// line), and the next synced append to the file, or compaction, carries it to disk too.
    Restated,
}

/// Past this many lines a ledger is compacted when at least half of it can go.
pub const COMPACT_LINES: usize = 2000;
/// Finished messages stay this long (status look-ups, rate and duplicate windows).
pub const RETAIN_MS: u64 = 24 * 3600 * 1000;

/// One ledger line. Compaction copies lines as they are, so fields this build does not know
/// survive it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub op: Op,
    pub message_id: String,
    /// ISO time of the line.
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cwd: Option<String>,
    /// The sender's permission mode as declared in the frame: `bypass` or `prompting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_mode: Option<Mode>,
    /// `from=` in the frame: the sender's socket address, or `terminal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How a `sent`/`delivered` line reached the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The target process a `sent` line wrote to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_start: Option<String>,
    /// The target's client holds it (a permission-mode mismatch): never resent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_hold: bool,
    /// The transcript's length when a `sent` line wrote to a live process: what the client
    /// writes about it comes after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The session a `create` started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl Record {
    pub fn new(op: Op, message_id: &str, now_ms: u64) -> Record {
        Record {
            op,
            message_id: message_id.into(),
            at: crate::time::iso(now_ms),
            ..Record::default()
        }
    }

    pub fn at_ms(&self) -> u64 {
        crate::time::parse_iso(&self.at).unwrap_or(0)
    }
}

/// How big a ledger is, for compaction: its lines, and (last time, lines) of each finished
/// message.
#[derive(Clone, Debug, Default)]
pub struct Size {
    pub lines: usize,
    pub finished: Vec<(u64, usize)>,
}

/// The three fields every line has, borrowed from the line where it can be.
#[derive(Deserialize)]
struct Light<'a> {
    #[serde(borrow)]
    op: std::borrow::Cow<'a, str>,
    #[serde(borrow, rename = "messageId")]
    message_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    at: std::borrow::Cow<'a, str>,
}

impl<'a> Light<'a> {
    /// The three fields of a line as this build writes it (`{"op":"…","messageId":"…","at":"…"`
    /// first, plain values), read by position without parsing the rest of the line (a long
    /// text, say); any other line through serde.
    fn of(line: &'a [u8]) -> Option<Light<'a>> {
        fn field<'b>(rest: &'b [u8], key: &[u8]) -> Option<(&'b str, &'b [u8])> {
            let rest = rest.strip_prefix(key)?;
            let end = rest.iter().position(|b| *b == b'"' || *b == b'\\')?;
            if rest[end] != b'"' {
                return None; // an escape: let serde read it
            }
            Some((std::str::from_utf8(&rest[..end]).ok()?, &rest[end + 1..]))
        }
        let fast = || {
            let (op, rest) = field(line, b"{\"op\":\"")?;
            let (id, rest) = field(rest, b",\"messageId\":\"")?;
            let (at, rest) = field(rest, b",\"at\":\"")?;
            // The line must go on as an object does; a truncated or odd one goes to serde.
            matches!(rest.first(), Some(b',' | b'}')).then(|| Light {
                op: op.into(),
                message_id: id.into(),
                at: at.into(),
            })
        };
        fast().or_else(|| serde_json::from_slice::<Light<'_>>(line).ok())
    }
}

/// Where a message stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Recorded; the target's client has not taken it (or took it and stopped unseen).
    Queued,
    /// Waiting for the target's review.
    Held,
    /// The target's client took it; its model has not seen it yet.
    Accepted,
    /// In a model request's input.
    Delivered,
    Expired,
    Refused,
    /// Only lines of ops this build does not know (or a start line compacted away).
    Unknown,
}

impl State {
    pub fn is_final(self) -> bool {
        matches!(self, State::Delivered | State::Expired | State::Refused)
    }

    /// Not final and not held: what delivery still works on.
    pub fn is_open(self) -> bool {
        matches!(self, State::Queued | State::Accepted)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Held => "held",
            State::Accepted => "accepted",
            State::Delivered => "delivered",
            State::Expired => "expired",
            State::Refused => "refused",
            State::Unknown => "unknown",
        }
    }

    fn from_final_op(op: &Op) -> Option<State> {
        match op {
            // `accepted` lines are earlier builds' review acceptances: delivered then.
            Op::Delivered | Op::Accepted => Some(State::Delivered),
            Op::Expired => Some(State::Expired),
            Op::Refused => Some(State::Refused),
            _ => None,
        }
    }
}

/// One message folded from its lines.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: String,
    pub state: State,
    /// The `queued`/`held` line: who, to whom, the text.
    pub start: Option<Record>,
    /// Every `sent` line, in order.
    pub attempts: Vec<Record>,
    /// The `taken` line while it is accepted: the process whose client took it.
    pub taken: Option<Record>,
    /// The reason of the last attempt that did not take (a failed wake, say), and its time.
    pub failure: Option<String>,
    pub failure_ms: u64,
    /// The line that made it final.
    pub end: Option<Record>,
    /// How many lines it has.
    pub lines: usize,
    pub first_ms: u64,
    pub last_ms: u64,
}

impl Entry {
    pub fn target_id(&self) -> Option<&str> {
        self.start.as_ref().and_then(|r| r.target_id.as_deref())
    }

    pub fn sender_id(&self) -> Option<&str> {
        self.start.as_ref().and_then(|r| r.sender_id.as_deref())
    }

    pub fn text(&self) -> Option<&str> {
        self.start.as_ref().and_then(|r| r.text.as_deref())
    }

    pub fn summary(&self) -> Option<&str> {
        self.start.as_ref().and_then(|r| r.summary.as_deref())
    }

    /// True once a write went to a client that holds it for its permission mode: the hold is
    /// that client's decision, and no later route hands the message over past it.
    pub fn client_hold(&self) -> bool {
        self.attempts.iter().any(|a| a.client_hold)
    }

    /// When a client first held it.
    pub fn client_hold_ms(&self) -> Option<u64> {
        self.attempts
            .iter()
            .find(|a| a.client_hold)
            .map(Record::at_ms)
    }
}

/// Folds ledger lines into messages, in the order each first appeared. The first final line
/// wins; lines of unknown ops are counted but change nothing.
pub fn fold(records: impl IntoIterator<Item = Record>) -> Vec<Entry> {
    let mut order: Vec<Entry> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in records {
        if r.message_id.is_empty() {
            continue;
        }
        let at = r.at_ms();
        let i = match index.get(&r.message_id) {
            Some(i) => *i,
            None => {
                index.insert(r.message_id.clone(), order.len());
                order.push(Entry {
                    id: r.message_id.clone(),
                    state: State::Unknown,
                    start: None,
                    attempts: Vec::new(),
                    taken: None,
                    failure: None,
                    failure_ms: 0,
                    end: None,
                    lines: 0,
                    first_ms: at,
                    last_ms: at,
                });
                order.len() - 1
            }
        };
        let e = &mut order[i];
        e.lines += 1;
        e.last_ms = e.last_ms.max(at);
        match &r.op {
            Op::Queued | Op::Held => {
                if !e.state.is_final() && e.state != State::Accepted {
                    e.state = if r.op == Op::Queued {
                        State::Queued
                    } else {
                        State::Held
                    };
                }
                if e.start.is_none() {
                    e.start = Some(r);
                }
            }
            Op::Sent => e.attempts.push(r),
            Op::Unsent => {
                if let Some(i) = e
                    .attempts
                    .iter()
                    .rposition(|a| a.via == r.via && a.pid == r.pid)
                {
                    e.attempts.remove(i);
                }
                if r.reason.is_some() {
                    e.failure = r.reason.clone();
                    e.failure_ms = at;
                }
            }
            Op::Taken => {
                if !e.state.is_final() {
                    e.state = State::Accepted;
                    e.taken = Some(r);
                }
            }
            Op::Returned => {
                if e.state == State::Accepted {
                    e.state = State::Queued;
                    e.taken = None;
                    e.failure = r.reason.clone();
                }
            }
            op => {
                if let Some(s) = State::from_final_op(op)
                    && !e.state.is_final()
                {
                    e.state = s;
                    e.end = Some(r);
                }
            }
        }
    }
    order
}

/// The complete lines of a ledger file (a torn tail left out), each with its parsed record
/// (`None` for a line that does not parse).
fn raw_lines(path: &Path) -> io::Result<Vec<(String, Option<Record>)>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    Ok(bytes[..complete]
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| {
            (
                String::from_utf8_lossy(l).into_owned(),
                serde_json::from_slice::<Record>(l).ok(),
            )
        })
        .collect())
}

/// One ledger file and the lock file beside it.
#[derive(Clone, Debug)]
pub struct Ledger {
    pub path: PathBuf,
}

/// A ledger file name from a session id (or `terminal`); `None` for anything that could climb
/// out of the folder.
pub fn safe_name(id: &str) -> Option<&str> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(id)
}

/// `<state home>/messaging`.
pub fn root(home: &Path) -> PathBuf {
    home.join("messaging")
}

impl Ledger {
    pub fn outbox(home: &Path, sender: &str) -> io::Result<Ledger> {
        Ledger::in_dir(&root(home).join("outbox"), sender)
    }

    pub fn inbound(home: &Path, target: &str) -> io::Result<Ledger> {
        Ledger::in_dir(&root(home).join("inbound"), target)
    }

    /// The target's inbound ledger if it exists (creates nothing: the hook's fast path).
    pub fn existing_inbound(home: &Path, target: &str) -> Option<Ledger> {
        let path = root(home)
            .join("inbound")
            .join(format!("{}.jsonl", safe_name(target)?));
        path.is_file().then_some(Ledger { path })
    }

    fn in_dir(dir: &Path, id: &str) -> io::Result<Ledger> {
        let name = safe_name(id)
            .ok_or_else(|| io::Error::other(format!("ledger: bad session id '{id}'")))?;
        crate::private::create_dirs(dir)?;
        Ok(Ledger {
            path: dir.join(format!("{name}.jsonl")),
        })
    }

    /// Takes the ledger's lock; appends and compaction need it.
    pub fn lock(&self) -> io::Result<FileLock> {
        FileLock::exclusive(&self.path.with_extension("lock"))
    }

    /// Takes the target's write lock (an inbound ledger's): every route decides whether a
    /// process of the target needs a message, and records the `sent` line, under it, so two
    /// commands looking at once never both write one message to one process.
    pub fn write_lock(&self) -> io::Result<FileLock> {
        FileLock::exclusive(&self.path.with_extension("write.lock"))
    }

    /// [`Ledger::write_lock`] if it comes within `limit`.
    pub fn write_lock_within(&self, limit: std::time::Duration) -> io::Result<Option<FileLock>> {
        FileLock::exclusive_within(&self.path.with_extension("write.lock"), limit)
    }

    /// Takes the lock if it comes within `limit` (the hook never waits long).
    pub fn lock_within(&self, limit: std::time::Duration) -> io::Result<Option<FileLock>> {
        FileLock::exclusive_within(&self.path.with_extension("lock"), limit)
    }

    /// Every complete line that parses (a torn tail is left out; reading needs no lock).
    pub fn read(&self) -> io::Result<Vec<Record>> {
        Ok(raw_lines(&self.path)?
            .into_iter()
            .filter_map(|(_, r)| r)
            .collect())
    }

    /// The folded messages, every line parsed whole.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        Ok(fold(self.read()?))
    }

    /// The messages limits and delivery need, cheaply: unfinished ones, and those first seen at
    /// or after `since_ms`. Finished older ones are left out (only counted, for compaction), and
    /// only the op, id and time of their lines are read.
    pub fn entries_since(&self, since_ms: u64) -> io::Result<Vec<Entry>> {
        Ok(self.scan(since_ms)?.0)
    }

    /// [`Ledger::entries_since`], with what compaction needs to know of the lines left out.
    pub fn scan(&self, since_ms: u64) -> io::Result<(Vec<Entry>, Size)> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(e),
        };
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let lines: Vec<&[u8]> = bytes[..complete]
            .split(|b| *b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .collect();
        let light: Vec<Option<Light<'_>>> = lines.iter().map(|l| Light::of(l)).collect();
        // Per message: finished?, first and last time, lines.
        let mut seen: HashMap<&str, (bool, u64, u64, usize)> = HashMap::new();
        for l in light.iter().flatten() {
            let at = crate::time::parse_iso(&l.at).unwrap_or(0);
            let e = seen
                .entry(l.message_id.as_ref())
                .or_insert((false, at, at, 0));
            e.0 |= State::from_final_op(&Op::parse(&l.op)).is_some();
            e.2 = e.2.max(at);
            e.3 += 1;
        }
        let wanted = |id: &str| {
            seen.get(id)
                .is_some_and(|(finished, first, _, _)| !finished || *first >= since_ms)
        };
        let records: Vec<Record> = lines
            .iter()
            .zip(&light)
            .filter(|(_, l)| l.as_ref().is_some_and(|l| wanted(&l.message_id)))
            .filter_map(|(raw, _)| serde_json::from_slice::<Record>(raw).ok())
            .collect();
        let size = Size {
            lines: light.iter().flatten().count(),
            finished: seen.values().filter(|v| v.0).map(|v| (v.2, v.3)).collect(),
        };
        Ok((fold(records), size))
    }

    /// Appends lines durably. The caller holds [`Ledger::lock`].
    pub fn append_locked(&self, lock: &FileLock, records: &[Record]) -> io::Result<()> {
        self.append_locked_as(lock, records, Durability::Synced)
    }

    /// Appends lines, synced or not. The caller holds [`Ledger::lock`].
    pub fn append_locked_as(
        &self,
        _lock: &FileLock,
        records: &[Record],
        durability: Durability,
    ) -> io::Result<()> {
        self.repair_tail()?;
        let mut text = String::new();
        for (i, r) in records.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&serde_json::to_string(r).map_err(io::Error::other)?);
        }
        atomic::append_line(&self.path, &text, durability == Durability::Synced)
    }

    /// Takes the lock, appends durably, lets it go.
    pub fn append(&self, records: &[Record]) -> io::Result<()> {
        self.append_as(records, Durability::Synced)
    }

    /// Takes the lock, appends (synced or not), lets it go.
    pub fn append_as(&self, records: &[Record], durability: Durability) -> io::Result<()> {
        let lock = self.lock()?;
        self.append_locked_as(&lock, records, durability)
    }

    /// Cuts a torn last line (no newline) so the next append starts on a fresh line.
    fn repair_tail(&self) -> io::Result<()> {
        let mut file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(());
        }
        file.seek(SeekFrom::Start(len - 1))?;
        let mut last = [0u8; 1];
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            atomic::read_lines(&self.path, true)?;
        }
        Ok(())
    }

    /// Rewrites the ledger without finished messages older than `retain_ms`, and without the
    /// text of refused or expired messages; every other line is copied as it is. Does nothing
    /// unless that drops at least half the lines or scrubs a text. The caller holds the lock.
    pub fn compact_locked(
        &self,
        _lock: &FileLock,
        now_ms: u64,
        retain_ms: u64,
    ) -> io::Result<bool> {
        let lines = raw_lines(&self.path)?;
        let total = lines.len();
        let entries = fold(lines.iter().filter_map(|(_, r)| r.clone()));
        let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
        let mut keep: Vec<String> = Vec::new();
        let mut scrubbed = false;
        for (raw, rec) in &lines {
            let Some(rec) = rec else {
                continue; // a line no build could read
            };
            let Some(e) = by_id.get(rec.message_id.as_str()) else {
                continue;
            };
            if e.state.is_final() && now_ms.saturating_sub(e.last_ms) > retain_ms {
                continue;
            }
            if matches!(e.state, State::Expired | State::Refused) && rec.text.is_some() {
                let mut v: Value = serde_json::from_str(raw).map_err(io::Error::other)?;
                if let Some(o) = v.as_object_mut() {
                    o.remove("text");
                }
                keep.push(v.to_string());
                scrubbed = true;
            } else {
                keep.push(raw.clone());
            }
        }
        if !scrubbed && keep.len() * 2 > total {
            return Ok(false);
        }
        let mut text = keep.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        atomic::write_atomic(&self.path, text.as_bytes())?;
        Ok(true)
    }

    /// Compacts when the ledger has grown past [`COMPACT_LINES`] lines and at least half of
    /// them belong to messages finished more than [`RETAIN_MS`] ago.
    pub fn maybe_compact_locked(
        &self,
        lock: &FileLock,
        size: &Size,
        now_ms: u64,
    ) -> io::Result<()> {
        if size.lines <= COMPACT_LINES {
            return Ok(());
        }
        let old: usize = size
            .finished
            .iter()
            .filter(|(last, _)| now_ms.saturating_sub(*last) > RETAIN_MS)
            .map(|(_, n)| n)
            .sum();
        if old * 2 >= size.lines {
            self.compact_locked(lock, now_ms, RETAIN_MS)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn rec(op: &str, id: &str, at: u64) -> Record {
        Record::new(Op::parse(op), id, at)
    }

    #[test]
    fn fold_follows_ops_and_first_final_wins() {
        let mut q = rec("queued", "m1", 1000);
        q.text = Some("hi".into());
        q.target_id = Some("t".into());
        let records = vec![
            q,
            rec("sent", "m1", 1100),
            rec("sent", "m1", 1120),
            rec("unsent", "m1", 1130),
            rec("future-op", "m1", 1150),
            rec("delivered", "m1", 1200),
            rec("expired", "m1", 1300),
            rec("held", "m2", 1400),
            rec("future-op", "m3", 1500),
        ];
        let e = fold(records);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].state, State::Delivered);
        assert_eq!(e[0].attempts.len(), 1);
        assert_eq!(e[0].text(), Some("hi"));
        assert_eq!(e[0].target_id(), Some("t"));
        assert_eq!(e[0].end.as_ref().unwrap().op, Op::Delivered);
        assert_eq!(e[1].state, State::Held);
        assert_eq!(e[2].state, State::Unknown, "unknown ops are never final");
        assert!(!e[2].state.is_final());
    }

    #[test]
    fn taken_then_returned_then_delivered() {
        let e = fold(vec![
            rec("queued", "m", 1),
            rec("sent", "m", 2),
            rec("taken", "m", 3),
        ]);
        assert_eq!(e[0].state, State::Accepted);
        assert!(!e[0].state.is_final() && e[0].state.is_open());
        let mut back = rec("returned", "m", 4);
        back.reason = Some("the target stopped".into());
        let e = fold(vec![rec("queued", "m", 1), rec("taken", "m", 3), back]);
        assert_eq!(e[0].state, State::Queued);
        assert_eq!(e[0].failure.as_deref(), Some("the target stopped"));
        // An earlier build's review acceptance is final: delivered.
        let e = fold(vec![rec("held", "h", 1), rec("accepted", "h", 2)]);
        assert_eq!(e[0].state, State::Delivered);
    }

    #[test]
    fn a_ledger_of_this_version_reads_back_byte_for_byte() {
        let lines = [
            r#"{"op":"queued","messageId":"m","at":"2026-11-30T05:40:00.123Z","senderId":"s","senderName":"alpha","senderCwd":"/src/app","senderMode":"prompting","senderAddress":"uds:/tmp/a.sock","targetId":"t","targetName":"worker-b","text":"hi","summary":"sum"}"#,
            r#"{"op":"sent","messageId":"m","at":"2026-11-30T05:40:00.200Z","via":"socket","pid":2524,"procStart":"283870","offset":1024}"#,
            r#"{"op":"taken","messageId":"m","at":"2026-11-30T05:40:00.210Z","via":"socket","pid":2524,"procStart":"283870"}"#,
            r#"{"op":"delivered","messageId":"m","at":"2026-11-30T05:40:01.000Z","via":"confirmed"}"#,
            r#"{"op":"a-later-op","messageId":"m","at":"2026-11-30T05:40:02.000Z","via":"a-later-route"}"#,
        ];
        for l in lines {
            let r: Record = serde_json::from_str(l).unwrap();
            assert_eq!(serde_json::to_string(&r).unwrap(), l);
        }
        let r: Record = serde_json::from_str(lines[4]).unwrap();
        assert_eq!(r.op, Op::Other("a-later-op".into()));
        assert_eq!(r.via, Some(Via::Other("a-later-route".into())));
        let r: Record = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(r.sender_mode, Some(Mode::Prompting));
    }

    /// One `queued` line, then the start of a line a crash cut short.
    fn queued_then_torn(l: &Ledger, torn: &[u8]) {
        l.append(&[rec("queued", "a", 1)]).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&l.path)
            .unwrap()
            .write_all(torn)
            .unwrap();
    }

    #[test]
    fn append_repairs_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::outbox(dir.path(), "s1").unwrap();
        queued_then_torn(&l, b"{\"op\":\"deliv");
        assert_eq!(l.read().unwrap().len(), 1, "torn tail left out");
        l.append(&[rec("sent", "a", 2)]).unwrap();
        let back = l.read().unwrap();
        assert_eq!(back.len(), 2);
        let text = std::fs::read_to_string(&l.path).unwrap();
        assert!(text.ends_with('\n') && !text.contains("deliv\""));
    }

    #[test]
    fn a_restated_line_is_appended_like_a_synced_one() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::outbox(dir.path(), "s1").unwrap();
        queued_then_torn(&l, b"{\"op\":\"sen");
        l.append_as(&[rec("taken", "a", 2)], Durability::Restated)
            .unwrap();
        let ops: Vec<Op> = l.read().unwrap().into_iter().map(|r| r.op).collect();
        assert_eq!(ops, [Op::Queued, Op::Taken], "the torn tail cut first");
        assert_eq!(l.entries().unwrap()[0].state, State::Accepted);
    }

    #[test]
    fn compaction_drops_old_finished_and_scrubs_refused_text() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::inbound(dir.path(), "t").unwrap();
        let day = RETAIN_MS;
        let mut lines = Vec::new();
        for i in 0..10 {
            let id = format!("old{i}");
            lines.push(rec("queued", &id, 1000));
            lines.push(rec("delivered", &id, 2000));
        }
        let mut held = rec("held", "h", day + 10);
        held.text = Some("secret".into());
        lines.push(held);
        lines.push(rec("refused", "h", day + 20));
        let mut pending = rec("queued", "p", 1000);
        pending.text = Some("still waiting".into());
        lines.push(pending);
        let lock = l.lock().unwrap();
        l.append_locked(&lock, &lines).unwrap();
        // A line of a later build, with a field this one does not know.
        atomic::append_line(
            &l.path,
            r#"{"op":"future-op","messageId":"p","at":"1970-01-01T00:00:01.500Z","futureField":7}"#,
            true,
        )
        .unwrap();
        assert!(l.compact_locked(&lock, day + 3000, RETAIN_MS).unwrap());
        let e = l.entries().unwrap();
        let ids: Vec<&str> = e.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["h", "p"]);
        assert_eq!(e[0].state, State::Refused);
        assert_eq!(e[0].text(), None, "refused text is stored nowhere");
        assert_eq!(e[1].text(), Some("still waiting"));
        assert_eq!(e[1].lines, 2, "unknown lines of open messages are kept");
        assert!(
            std::fs::read_to_string(&l.path)
                .unwrap()
                .contains("\"futureField\":7")
        );
        assert!(!std::fs::read_to_string(&l.path).unwrap().contains("secret"));
        // Nothing more to drop: no rewrite.
        assert!(!l.compact_locked(&lock, day + 3000, RETAIN_MS).unwrap());
    }

    #[test]
    fn a_long_ledger_of_old_messages_is_compacted_when_half_can_go() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::outbox(dir.path(), "s").unwrap();
        let now = 10 * RETAIN_MS;
        let mut lines = Vec::new();
        for i in 0..1100 {
            let id = format!("m{i}");
            let at = if i < 600 { 1000 } else { now - 1000 };
            lines.push(rec("queued", &id, at));
            lines.push(rec("delivered", &id, at));
        }
        let lock = l.lock().unwrap();
        l.append_locked(&lock, &lines).unwrap();
        let (_, size) = l.scan(now).unwrap();
        l.maybe_compact_locked(&lock, &size, now).unwrap();
        assert_eq!(l.read().unwrap().len(), 1000, "the 600 old messages went");
        // Now under the threshold: left alone.
        let (_, size) = l.scan(now).unwrap();
        l.maybe_compact_locked(&lock, &size, now + RETAIN_MS)
            .unwrap();
        assert_eq!(l.read().unwrap().len(), 1000);
    }

    #[test]
    fn cheap_reads_keep_what_limits_and_delivery_need() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::outbox(dir.path(), "s").unwrap();
        let mut lines = Vec::new();
        for (i, at) in [(0, 1_000u64), (1, 50_000), (2, 90_000)] {
            let id = format!("m{i}");
            let mut q = rec("queued", &id, at);
            q.text = Some(format!("text {i}"));
            q.target_id = Some("t".into());
            lines.push(q);
            if i != 2 {
                lines.push(rec("delivered", &id, at + 1));
            }
        }
        l.append(&lines).unwrap();
        let full = l.entries().unwrap();
        let (cheap, size) = l.scan(40_000).unwrap();
        let states = |v: &[Entry]| {
            v.iter()
                .map(|e| (e.id.clone(), e.state))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            states(&full)[1..],
            states(&cheap)[..],
            "old finished ones are left out"
        );
        assert_eq!(cheap[0].text(), Some("text 1"), "recent: whole");
        assert_eq!(cheap[1].text(), Some("text 2"), "unfinished: whole");
        assert_eq!(size.lines, 5);
        assert_eq!(size.finished.len(), 2);
    }

    #[test]
    fn the_three_fields_read_by_position_agree_with_serde() {
        let light = |l: &str| {
            Light::of(l.as_bytes()).map(|x| {
                (
                    x.op.into_owned(),
                    x.message_id.into_owned(),
                    x.at.into_owned(),
                )
            })
        };
        let r = Record {
            text: Some("a \"quoted\" text, with {\"op\":\"delivered\"} inside".into()),
            ..rec("queued", "m-1", 1000)
        };
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(
            light(&line),
            Some(("queued".into(), "m-1".into(), crate::time::iso(1000)))
        );
        // Other orders, spaces and escapes go through serde, with the same answer.
        for l in [
            r#"{"messageId":"m-2","at":"2026-01-01T00:00:00.000Z","op":"sent"}"#,
            r#"{ "op": "sent", "messageId": "m-2", "at": "2026-01-01T00:00:00.000Z" }"#,
            r#"{"op":"s\u0065nt","messageId":"m-2","at":"2026-01-01T00:00:00.000Z"}"#,
        ] {
            assert_eq!(
                light(l),
                Some((
                    "sent".into(),
                    "m-2".into(),
                    "2026-01-01T00:00:00.000Z".into()
                )),
                "{l}"
            );
        }
        for l in [
            r#"{"op":"sent","messageId":"m-2","at":"2026"#,
            r#"{"op":"sent","messageId":"m-2""#,
            "not json",
        ] {
            assert!(light(l).is_none(), "{l}");
        }
    }

    #[test]
    fn names_cannot_climb_out() {
        assert!(safe_name("../x").is_none());
        assert!(safe_name("").is_none());
        assert!(safe_name("a/b").is_none());
        assert_eq!(safe_name("terminal"), Some("terminal"));
        let dir = tempfile::tempdir().unwrap();
        assert!(Ledger::outbox(dir.path(), "..").is_err());
    }
}
