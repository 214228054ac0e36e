//! The round index: which streams are claimed, by whom, owning what — one small file the guard
//! reads with one `read`, so a call costs the same whether the round has 5 locks or 200.
//!
//! ```text
//! session-lock/.index/round.json   a header line, the file names, one line per lock (view.rs)
//! ```
//!
//! The lock files stay the source of truth; the index is a cache of them, trusted only while
//! it provably describes them:
//! - `dirStamp` is the modification time of `session-lock/` when the index was written. Every
//!   lock, heartbeat and done marker is written by rename into that folder, so any change to the
//!   set of files moves the folder's time. The index lives in a subfolder so its own writes do
//!   not. A stamp that differs from the folder's time means the index is stale.
//! - File systems keep that time at the resolution of a coarse clock tick: a file created in the
//!   same tick just after the index was written leaves the time unchanged. An index written
//!   within [`RACY_MS`] of its stamp carries `verify`: readers first compare the folder's file
//!   names with `files` (a listing, no file read), and once the folder has been quiet past the
//!   window the index is rewritten without the flag (as git does with its "racy" entries).
//! - A missing, stale or corrupt index is rebuilt from the lock files (and said so once: the
//!   rebuilt index is written back). It is never trusted over them: the locks a decision rests
//!   on (the caller's own, and those whose `owns` could match the path) are read from their
//!   files, so their heartbeat, session and done state are the files' own.
//! - A lock file rewritten in place (not by rename: a hand edit, a truncation) leaves the
//!   folder's time as it was. When a decision reads it and finds it broken, it protects what the
//!   index last read it to own (a stand-in held by no session, as for any corrupt lock), it is
//!   listed among the broken files, and the index is rebuilt so the next call knows it from the
//!   start. A lock already done or stale when it was overwritten is not read by a decision that
//!   sees no live lock; it is found at the folder's next change.
//!
//! Writers (claim, heartbeat, release, archive) update the index under the state lock, from an
//! index they checked before their write ([`Index::before_write`] → [`Index::after_write`]).
//! The guard rebuilds only when it can take the state lock at once; otherwise it decides from
//! the lock files it just read and leaves the index to the next caller.

use crate::state::{BadLock, Held, Layout};
use crate::{atomic, globs, time};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

mod view;
use view::{Hint, View};

/// The index format; another version is rebuilt.
pub const VERSION: u32 = 2;

/// The folder-time resolution the index assumes (coarse clocks tick every 1–10 ms).
pub const RACY_MS: u64 = 50;

/// One lock as the index knows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    pub stream: String,
    pub session_id: String,
    pub owns: Vec<String>,
    /// The literal prefix of each include pattern, for the pre-filter.
    pub prefixes: Vec<String>,
    pub heartbeat_ms: u64,
    pub done: bool,
    /// The session whose stale lock this claim took over, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_from: Option<String>,
}

impl Entry {
    fn of(h: &Held) -> Entry {
        Entry {
            stream: h.record.stream.clone(),
            session_id: h.record.session_id.clone(),
            owns: h.record.owns.clone(),
            prefixes: globs::include_prefixes(&h.record.owns),
            heartbeat_ms: h.heartbeat_ms,
            done: h.done,
            taken_from: h.record.taken_from.clone(),
        }
    }

    /// Could this lock's `owns` match `rel`? Decided on literal prefixes alone.
    pub fn may_own(&self, rel: &str, case_insensitive: bool) -> bool {
        self.prefixes
            .iter()
            .any(|p| globs::prefix_may_match(p, rel, case_insensitive))
    }
}

/// A lock file that could not be read, as the index keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BadEntry {
    pub file: String,
    pub reason: String,
}

/// The index file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Index {
    pub version: u32,
    /// `session-lock/`'s modification time (ns since the epoch) the index describes.
    pub dir_stamp: u64,
    /// Written within [`RACY_MS`] of the stamp: compare `files` with the folder first.
    pub verify: bool,
    /// The `*.lock` and `*.done` file names of the folder, sorted.
    pub files: Vec<String>,
    pub locks: Vec<Entry>,
    pub bad: Vec<BadEntry>,
}

/// Why an index was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unusable {
    Missing,
    Corrupt(String),
    Stale,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::Missing => write!(f, "missing"),
            Unusable::Corrupt(why) => write!(f, "corrupt ({why})"),
            Unusable::Stale => write!(f, "stale (the lock files changed after it was written)"),
        }
    }
}

/// The index's path.
pub fn path(layout: &Layout) -> PathBuf {
    layout.dir.join(".index").join("round.json")
}

/// `session-lock/`'s modification time in ns; `None` when the folder is missing.
pub fn dir_stamp(dir: &Path) -> Option<u64> {
    let modified = std::fs::metadata(dir).ok()?.modified().ok()?;
    Some(modified.duration_since(UNIX_EPOCH).ok()?.as_nanos() as u64)
}

/// Is this a file of the round (`<stream>.lock` but build.lock, `<stream>.done`)?
fn round_file(name: &str) -> bool {
    if name.starts_with('.') {
        return false;
    }
    match name.strip_suffix(".lock") {
        Some(stream) => !stream.is_empty() && stream != "build",
        None => name.ends_with(".done") && name.len() > ".done".len(),
    }
}

/// The round's file names in the folder, sorted (one listing, no file read).
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| round_file(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn stamp_ms(stamp: u64) -> u64 {
    stamp / 1_000_000
}

impl Index {
    /// Builds the index from the lock files. `None` when the folder changed while it was read
    /// (the result would describe neither state); the locks read are returned either way.
    pub fn build(layout: &Layout) -> (Option<Index>, Vec<Held>, Vec<BadLock>) {
        ensure_folder(layout);
        let before = dir_stamp(&layout.dir);
        let (good, bad) = layout.read_locks();
        let files = listing(&layout.dir);
        let after = dir_stamp(&layout.dir);
        let index = match (before, after) {
            (Some(b), Some(a)) if a == b => Some(Index {
                version: VERSION,
                dir_stamp: b,
                verify: time::now_ms().saturating_sub(stamp_ms(b)) < RACY_MS,
                files,
                locks: good.iter().map(Entry::of).collect(),
                bad: bad.iter().map(|b| bad_entry(layout, b)).collect(),
            }),
            _ => None,
        };
        (index, good, bad)
    }

    /// Reads the index and checks it against the folder.
    pub fn load(layout: &Layout) -> Result<Index, Unusable> {
        View::load(layout)?.into_index()
    }

    /// Writes the index (a cache: replaced atomically, not synced; a lost or torn index is
    /// found stale or corrupt and rebuilt).
    pub fn write(&self, layout: &Layout) -> std::io::Result<()> {
        let file = path(layout);
        if let Some(dir) = file.parent() {
            crate::atomic::create_dirs(dir)?;
        }
        let text = view::render(self).map_err(std::io::Error::other)?;
        atomic::replace_cache(&file, &text)
    }

    /// Under the state lock, before a write: the index as it stands, if it is good.
    pub fn before_write(layout: &Layout) -> Option<Index> {
        Index::load(layout).ok()
    }

    /// Under the state lock, after writing the files of `streams`: the index brought up to
    /// date (from `before` when it was good, else rebuilt) and written. Failures are left to
    /// the next reader, which rebuilds.
    pub fn after_write(layout: &Layout, before: Option<Index>, streams: &[&str]) {
        ensure_folder(layout);
        let index = match before {
            Some(mut index) => {
                for stream in streams {
                    index.refresh_stream(layout, stream);
                }
                let Some(stamp) = dir_stamp(&layout.dir) else {
                    return;
                };
                index.dir_stamp = stamp;
                index.files = listing(&layout.dir);
                index.verify = time::now_ms().saturating_sub(stamp_ms(stamp)) < RACY_MS;
                index
            }
            None => match Index::build(layout) {
                (Some(index), _, _) => index,
                _ => return,
            },
        };
        let _ = index.write(layout);
    }

    fn refresh_stream(&mut self, layout: &Layout, stream: &str) {
        let file = format!("{stream}.lock");
        self.locks.retain(|e| e.stream != stream);
        self.bad.retain(|b| b.file != file);
        match layout.read_lock(stream) {
            Ok(Some(h)) => self.locks.push(Entry::of(&h)),
            Ok(None) => {}
            Err(b) => self.bad.push(bad_entry(layout, &b)),
        }
        self.locks.sort_by(|a, b| a.stream.cmp(&b.stream));
    }
}

/// The newest heartbeat of the entries not done (0 for none): the index's header keeps it, so
/// "is any lock live?" needs no entry parsed.
fn latest<'a>(entries: impl Iterator<Item = &'a Entry>) -> u64 {
    entries
        .filter(|e| !e.done)
        .map(|e| e.heartbeat_ms)
        .max()
        .unwrap_or(0)
}

/// Creates `.index/` (when the folder exists) before any stamp is taken: creating it moves the
/// folder's time.
fn ensure_folder(layout: &Layout) {
    if layout.dir.is_dir()
        && let Some(dir) = path(layout).parent()
    {
        let _ = crate::atomic::create_dirs(dir);
    }
}

fn bad_entry(layout: &Layout, b: &BadLock) -> BadEntry {
    let file = b
        .path
        .strip_prefix(&layout.dir)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_else(|_| b.path.display().to_string());
    BadEntry {
        file,
        reason: b.reason.clone(),
    }
}

/// The live-lock set one guard call decides from: the index (or, when it could not be
/// trusted, every lock file), and the lock files of the locks a decision rests on.
pub struct LockSet {
    layout: Layout,
    /// The index as read (entries parsed when asked for), or `None` when it was rebuilt in
    /// this call from the lock files in `read`.
    view: Option<View>,
    /// The entries of `read` (a rebuilt index).
    entries: Vec<Entry>,
    latest_heartbeat_ms: u64,
    bad: Vec<BadLock>,
    /// Lock files the index called good that could not be read when a decision read them
    /// (written in place, which leaves the folder's time and so the index as they were).
    found_bad: std::cell::RefCell<Vec<BadLock>>,
    /// The locks as read from their files, when the index was rebuilt in this call.
    read: Option<Vec<Held>>,
    /// Every lock file, read when an index entry could not be (the files decide then): the
    /// good ones, and stand-ins for the broken ones.
    fallback: std::cell::OnceCell<Vec<Held>>,
    /// The caller's own locks, once asked: a command with several write targets asks per target.
    own: std::cell::OnceCell<(String, Vec<Held>)>,
    /// Said once, when the index had to be rebuilt.
    pub note: Option<String>,
    /// Other machines' live leases (from the lease mirror), applied like local locks.
    foreign: Vec<Held>,
    /// Streams whose lease this session lost: its local lock no longer makes them its own.
    lost: Vec<String>,
}

/// How long the guard waits for the state lock to write back a rebuilt index: not at all.
const NO_WAIT: Duration = Duration::ZERO;

impl LockSet {
    /// Loads the set for one call. Never fails: without a usable index the lock files are read.
    pub fn load(layout: &Layout) -> LockSet {
        match View::load(layout) {
            Ok(view) => {
                if view.verify && time::now_ms().saturating_sub(stamp_ms(view.dir_stamp)) >= RACY_MS
                {
                    settle(layout);
                }
                LockSet::from_view(layout, view)
            }
            Err(why) => {
                let (built, good, bad) = Index::build(layout);
                let written = match built {
                    Some(index) => write_locked(layout, &index),
                    None => Ok(false),
                };
                let note = match written {
                    // Said at every call: each one rebuilds it until the write can be made.
                    Err(e) => Some(format!("guard: the round index was not written: {e}")),
                    Ok(rebuilt) => (rebuilt
                        && !(why == Unusable::Missing && good.is_empty() && bad.is_empty()))
                    .then(|| {
                        format!(
                            "guard: the round index {} was {why}; rebuilt it from the lock files",
                            path(layout).display()
                        )
                    }),
                };
                let entries: Vec<Entry> = good.iter().map(Entry::of).collect();
                LockSet {
                    layout: layout.clone(),
                    view: None,
                    latest_heartbeat_ms: latest(entries.iter()),
                    entries,
                    bad,
                    found_bad: Default::default(),
                    read: Some(good),
                    fallback: Default::default(),
                    own: Default::default(),
                    note,
                    foreign: Vec::new(),
                    lost: Vec::new(),
                }
            }
        }
    }

    fn from_view(layout: &Layout, mut view: View) -> LockSet {
        LockSet {
            bad: std::mem::take(&mut view.bad)
                .into_iter()
                .map(|b| BadLock {
                    path: layout.dir.join(&b.file),
                    reason: b.reason,
                })
                .collect(),
            layout: layout.clone(),
            latest_heartbeat_ms: view.latest_heartbeat_ms,
            view: Some(view),
            entries: Vec::new(),
            found_bad: Default::default(),
            read: None,
            fallback: Default::default(),
            own: Default::default(),
            note: None,
            foreign: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// Lock files that could not be read: those the index or the files named at load, and
    /// those found broken since, when a decision read them.
    pub fn bad(&self) -> Vec<BadLock> {
        let mut out = self.bad.clone();
        out.extend(self.found_bad.borrow().iter().cloned());
        out
    }

    /// Every lock the index lists (each entry parsed).
    pub fn entries(&self) -> Vec<Entry> {
        match &self.view {
            Some(view) => match view.select(Hint::Every) {
                Ok(all) => all.into_iter().cloned().collect(),
                Err(()) => self.files().iter().map(Entry::of).collect(),
            },
            None => self.entries.clone(),
        }
    }

    /// Every lock file, read once (when the index cannot answer); a broken one is a stand-in
    /// with the `owns` the index last knew for it.
    fn files(&self) -> &[Held] {
        self.fallback.get_or_init(|| {
            let (mut good, bad) = self.layout.read_locks();
            for b in bad {
                let known = self.view.as_ref().and_then(|v| v.find(&b.stream()));
                if let Some(held) = self.broken(&b, known.as_ref()) {
                    good.push(held);
                }
            }
            good
        })
    }

    /// A lock file found broken while deciding, that the index did not list as broken: kept
    /// for [`LockSet::bad`], the index rebuilt so the next call starts from it, and a
    /// stand-in that protects what `entry` (the index's last reading of it) owns.
    fn broken(&self, bad: &BadLock, entry: Option<&Entry>) -> Option<Held> {
        let stream = bad.stream();
        let known = |list: &[BadLock]| list.iter().any(|b| b.path == bad.path);
        if !known(&self.bad) && !known(&self.found_bad.borrow()) {
            self.found_bad.borrow_mut().push(bad.clone());
            if let (Some(index), _, _) = Index::build(&self.layout) {
                let _ = write_locked(&self.layout, &index);
            }
        }
        entry.map(|e| Held::stand_in(&stream, e.owns.clone(), "", 0, time::now_ms(), bad.why()))
    }

    /// The locks `wanted` picks among those `hint` could concern, read from their files.
    fn held(&self, hint: Hint, wanted: impl Fn(&Entry) -> bool) -> Vec<Held> {
        if let Some(read) = &self.read {
            let names: Vec<&str> = self
                .entries
                .iter()
                .filter(|e| wanted(e))
                .map(|e| e.stream.as_str())
                .collect();
            return read
                .iter()
                .filter(|h| names.contains(&h.record.stream.as_str()))
                .cloned()
                .collect();
        }
        let Some(view) = &self.view else {
            return Vec::new();
        };
        match view.select(hint) {
            Ok(entries) => entries
                .into_iter()
                .filter(|e| wanted(e))
                .filter_map(|e| match self.layout.read_lock(&e.stream) {
                    Ok(held) => held,
                    // Broken behind the index's back: it keeps protecting.
                    Err(bad) => self.broken(&bad, Some(e)),
                })
                .collect(),
            // An entry the index cannot give: every lock file decides.
            Err(()) => self
                .files()
                .iter()
                .filter(|h| wanted(&Entry::of(h)))
                .cloned()
                .collect(),
        }
    }

    /// Takes locks this call rewrote (its heartbeat), so later reads see them as written.
    pub fn rewrote(&mut self, fresh: &[Held]) {
        self.own.take();
        if let Some(read) = &mut self.read {
            for h in fresh {
                if let Some(old) = read.iter_mut().find(|r| r.record.stream == h.record.stream) {
                    *old = h.clone();
                }
            }
        }
    }

    /// Adds other machines' leases; `lost`: streams whose lease the caller lost.
    pub fn add_foreign(&mut self, foreign: Vec<Held>, lost: Vec<String>) {
        self.own.take();
        self.foreign.extend(foreign);
        self.lost.extend(lost);
    }

    /// The caller's own locks, read from their files (for the heartbeat and "mine covers").
    pub fn own(&self, session_id: &str) -> Vec<Held> {
        if let Some((id, held)) = self.own.get()
            && id == session_id
        {
            return held.clone();
        }
        let quoted = quoted(session_id);
        let held = self.held(Hint::Mentions(&quoted), |e| {
            e.session_id == session_id && !self.lost.contains(&e.stream)
        });
        let _ = self.own.set((session_id.to_string(), held.clone()));
        held
    }

    /// Locks other sessions took over from `session_id` (its stale claims, claimed since).
    pub fn taken_from(&self, session_id: &str) -> Vec<Held> {
        let quoted = quoted(session_id);
        self.held(Hint::Mentions(&quoted), |e| {
            e.taken_from.as_deref() == Some(session_id)
        })
    }

    /// Is any lock (or other machine's lease) live? Decided on the index alone.
    pub fn any_live(&self, now: u64, stale_ms: u64) -> bool {
        now.saturating_sub(self.latest_heartbeat_ms) < stale_ms && self.latest_heartbeat_ms > 0
            || self.foreign.iter().any(|h| h.is_live(now, stale_ms))
    }

    /// The locks of other sessions whose `owns` could match `rel`, read from their files, and
    /// other machines' leases that could.
    pub fn others_for(&self, session_id: &str, rel: &str, case_insensitive: bool) -> Vec<Held> {
        let mut out = self.held(Hint::MayOwn(rel, case_insensitive), |e| {
            e.session_id != session_id && e.may_own(rel, case_insensitive)
        });
        out.extend(
            self.foreign
                .iter()
                .filter(|h| h.record.session_id != session_id)
                .filter(|h| !globs::cannot_match(&h.record.owns, rel, case_insensitive))
                .cloned(),
        );
        out
    }

    /// Every lock, read from its file, and other machines' leases (the protected-path check
    /// counts the live ones).
    pub fn all(&self) -> Vec<Held> {
        let mut out = self.held(Hint::Every, |_| true);
        out.extend(self.foreign.iter().cloned());
        out
    }
}

/// `s` as a JSON string, as the index writes it (what [`Hint::Mentions`] looks for).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Writes a rebuilt index if the state lock is free now (a writer holding it writes its own):
/// whether it was written, or why it could not be.
fn write_locked(layout: &Layout, index: &Index) -> std::io::Result<bool> {
    match layout.lock_state(NO_WAIT)? {
        Some(_guard) => {
            // Checked again under the lock: a writer may have finished in between (or taking
            // the lock created its file); then it is built again, now that no writer runs.
            if dir_stamp(&layout.dir) == Some(index.dir_stamp) {
                return index.write(layout).map(|()| true);
            }
            match Index::build(layout) {
                (Some(again), _, _) => again.write(layout).map(|()| true),
                _ => Ok(false),
            }
        }
        None => Ok(false),
    }
}

/// After a file outside the round was created in `session-lock/` (the block log), which moves
/// the folder's time the index is stamped with: the index written again now, if the state lock
/// is free, so the next call neither rebuilds it nor reports it stale.
pub fn restamp(layout: &Layout) {
    if let Ok(Some(_guard)) = layout.lock_state(NO_WAIT) {
        Index::after_write(layout, Index::before_write(layout), &[]);
    }
}

/// The folder has been quiet past the racy window: rewrite the index without `verify`.
fn settle(layout: &Layout) {
    if let Ok(Some(_guard)) = layout.lock_state(NO_WAIT)
        && let Ok(mut index) = Index::load(layout)
        && index.verify
    {
        index.verify = false;
        let _ = index.write(layout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::record;

    fn set_folder_time(l: &Layout, t: std::time::SystemTime) {
        crate::state::tests::set_folder_time(&l.dir, t);
    }

    /// Moves the folder's time one second back, out of the racy window.
    fn backdate(l: &Layout) {
        set_folder_time(l, std::time::SystemTime::now() - Duration::from_secs(1));
    }

    #[test]
    fn a_missing_index_is_built_and_then_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        l.write_lock(&record("api", now)).unwrap();
        backdate(&l);
        let set = LockSet::load(&l);
        assert!(set.note.as_deref().unwrap().contains("missing"));
        assert_eq!(set.entries().len(), 1);
        let index = Index::load(&l).unwrap();
        assert_eq!(index.files, vec!["api.lock"]);
        assert_eq!(index.locks[0].prefixes, vec!["src/api/"]);
        let again = LockSet::load(&l);
        assert!(again.note.is_none(), "said once");
        assert!(again.read.is_none(), "served from the index");
        assert_eq!(again.own(&record("api", now).session_id).len(), 1);
    }

    #[test]
    fn the_callers_own_locks_are_read_once_and_forgotten_when_the_set_changes() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        let api = record("api", now);
        l.write_lock(&api).unwrap();
        backdate(&l);
        LockSet::load(&l);
        let mut set = LockSet::load(&l);
        assert_eq!(set.own(&api.session_id).len(), 1);
        // Asked again (a second write target), the answer is the same; another id is not it.
        assert_eq!(set.own(&api.session_id).len(), 1);
        assert!(set.own("someone-else").is_empty());
        assert_eq!(set.own(&api.session_id).len(), 1);
        // A lost lease changes what is the caller's own: the kept answer must not outlive it.
        set.add_foreign(Vec::new(), vec!["api".into()]);
        assert!(set.own(&api.session_id).is_empty());
    }

    #[test]
    fn a_lock_written_behind_the_index_makes_it_stale() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        l.write_lock(&record("api", now)).unwrap();
        backdate(&l);
        LockSet::load(&l);
        assert!(Index::load(&l).is_ok());
        let mut ui = record("ui", now);
        ui.owns = vec!["src/ui/**".into()];
        ui.session_id = "other".into();
        l.write_lock(&ui).unwrap();
        assert_eq!(Index::load(&l), Err(Unusable::Stale));
        let set = LockSet::load(&l);
        assert!(set.note.as_deref().unwrap().contains("stale"));
        let others = set.others_for("me", "src/ui/x.ts", false);
        assert_eq!(others.len(), 1);
        assert!(set.others_for("me", "src/db/x.ts", false).is_empty());
    }

    #[test]
    fn a_corrupt_index_is_rebuilt_and_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        l.write_lock(&record("api", time::now_ms())).unwrap();
        std::fs::create_dir_all(path(&l).parent().unwrap()).unwrap();
        std::fs::write(path(&l), "{\"version\":1,").unwrap();
        let set = LockSet::load(&l);
        assert!(
            set.note.as_deref().unwrap().contains("corrupt"),
            "{:?}",
            set.note
        );
        assert_eq!(set.entries().len(), 1);
    }

    #[test]
    fn a_same_tick_change_is_caught_by_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        l.write_lock(&record("api", time::now_ms())).unwrap();
        let (index, _, _) = Index::build(&l);
        let mut index = index.unwrap();
        assert!(index.verify, "written right after the lock: racy");
        // A file created in the same clock tick leaves the folder time as it was.
        index.write(&l).unwrap();
        let stamp = index.dir_stamp;
        std::fs::write(l.lock_path("ui"), "{}").unwrap();
        set_folder_time(&l, std::time::UNIX_EPOCH + Duration::from_nanos(stamp));
        assert_eq!(Index::load(&l), Err(Unusable::Stale));
        index.verify = false;
        index.write(&l).unwrap();
        assert!(
            Index::load(&l).is_ok(),
            "without verify only the stamp is compared"
        );
    }

    #[test]
    fn a_racy_index_settles_once_the_folder_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        l.write_lock(&record("api", time::now_ms())).unwrap();
        LockSet::load(&l);
        backdate(&l);
        let mut index = Index::build(&l).0.unwrap();
        assert!(!index.verify, "an old folder time is not racy");
        index.verify = true;
        index.write(&l).unwrap();
        let set = LockSet::load(&l);
        assert!(
            set.note.is_none() && set.read.is_none(),
            "used after the listing matched"
        );
        assert!(
            !Index::load(&l).unwrap().verify,
            "rewritten without the flag"
        );
    }

    #[test]
    fn a_lock_broken_in_place_behind_a_fresh_index_keeps_protecting() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        l.write_lock(&record("api", now)).unwrap();
        backdate(&l);
        LockSet::load(&l);
        // The same file rewritten in place: the folder's time, and so the index, unchanged.
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(l.lock_path("api"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{oops"))
            .unwrap();
        let set = LockSet::load(&l);
        assert!(
            set.read.is_none() && set.bad().is_empty(),
            "served from the index"
        );
        let others = set.others_for("me", "src/api/x.ts", false);
        assert_eq!(others.len(), 1);
        assert!(others[0].record.session_id.is_empty(), "a stand-in");
        assert_eq!(others[0].record.owns, vec!["src/api/**"]);
        assert!(others[0].is_live(time::now_ms(), 1000));
        assert_eq!(set.bad().len(), 1, "said");
        assert!(set.bad()[0].to_string().contains("api.lock"));
        // The index was rebuilt: the next call knows the broken file from the start.
        let next = LockSet::load(&l);
        assert_eq!(next.bad().len(), 1);
    }

    #[test]
    fn writers_keep_the_index_current() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout::new(dir.path());
        let now = time::now_ms();
        l.write_lock(&record("api", now)).unwrap();
        LockSet::load(&l);
        let before = Index::before_write(&l);
        assert!(before.is_some());
        let mut ui = record("ui", now);
        ui.owns = vec!["src/ui/**".into(), "!src/ui/gen/**".into()];
        l.write_lock(&ui).unwrap();
        Index::after_write(&l, before, &["ui"]);
        let index = Index::load(&l).unwrap();
        assert_eq!(index.files, vec!["api.lock", "ui.lock"]);
        assert_eq!(index.locks[1].prefixes, vec!["src/ui/"]);
        std::fs::write(l.lock_path("web"), "not json").unwrap();
        let before = Index::before_write(&l);
        assert!(before.is_none(), "the hand-written file made it stale");
        Index::after_write(&l, before, &["ui"]);
        let index = Index::load(&l).unwrap();
        assert_eq!(index.bad.len(), 1);
        assert_eq!(index.bad[0].file, "web.lock");
        let set = LockSet::load(&l);
        assert_eq!(set.bad().len(), 1);
        assert!(set.bad()[0].to_string().contains("web.lock"));
    }
}
