//! The denied set, kept between calls: a round's floor is the same call after call until a lock
//! comes or goes or the tree under the rules changes, and resolving 200 streams' `owns` (each
//! compiled to a matcher, its folders read) is most of the floor stage's cost.
//!
//! ```text
//! session-lock/.index/floor-<session>.json   {"version":1,"key":"…","deps":[…],"denied":[…],…}
//! ```
//!
//! An entry is used only while it provably gives what [`set::compute`] would:
//! - `key` is the whole of the set's inputs (the repo root, every rule with its owner, patterns
//!   and the parts the caller keeps, the fixed paths, the case rule) and this guard program's
//!   size and time: a lock claimed, released, gone stale or rewritten with other `owns`, a
//!   config change, another build, each gives another key.
//! - `deps` are the reads of the tree the answer rests on, each redone before the entry is used
//!   (one `stat` each, no listing, no matcher): every path the rules name or a walk met (absent,
//!   or its kind and inode), and every folder a glob or an exception listed (its modification
//!   time, which an entry created, removed or renamed there moves). So a file made after the
//!   entry that another stream's glob matches changes a listed folder's time, and the next call
//!   computes the set again and denies it, as a call without the entry would.
//! - A folder listed within [`RACY_MS`] of the write could change again within the same clock
//!   tick, leaving its time as it was; such an answer, and one whose walk stopped at its bound,
//!   is not kept.
//! - Unreadable, corrupt, of another version or for another key: the set is computed and the
//!   entry written again. It is a cache: written by rename, never synced; a failed write is
//!   ignored. One file per session (the caller's own locks are inputs).

use super::set::{self, Dep, Inputs, Seen};
use super::{Denied, DeniedSet, Owner, PatternRule};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

const VERSION: u32 = 1;

/// A listed folder younger than this when the answer is made: the answer is not kept.
pub const RACY_MS: u64 = 50;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    version: u32,
    key: String,
    /// `[path, follow, kind (-1 absent), ino, listedNs]`.
    deps: Vec<(PathBuf, bool, i8, u64, u64)>,
    /// `[owner, path]`.
    denied: Vec<(String, PathBuf)>,
    /// `[owner, include, except]`.
    patterns: Vec<(String, String, Vec<String>)>,
    notes: Vec<String>,
}

/// The cache file of `session_id` in the state folder `state_dir`.
pub fn path(state_dir: &Path, session_id: &str) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    session_id.hash(&mut h);
    state_dir
        .join(".index")
        .join(format!("floor-{:016x}.json", h.finish()))
}

/// The denied set of `inputs`, from the cache at `file` while it holds, else computed (and
/// kept when it can be).
pub fn denied(file: &Path, inputs: &Inputs) -> DeniedSet {
    let key = key(inputs);
    if let Some(set) = load(file, &key) {
        return set;
    }
    let (set, deps) = set::compute_tracked(inputs);
    if let Some(deps) = deps
        && settled(&deps, crate::time::now_ms())
    {
        store(file, &key, &deps, &set);
    }
    set
}

/// Everything the set is computed from, as one string.
fn key(inputs: &Inputs) -> String {
    let program = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {t}", m.len())
        })
        .unwrap_or_default();
    format!("{program}\n{inputs:?}")
}

/// No listed folder changed within the clock tick before now.
fn settled(deps: &[Dep], now_ms: u64) -> bool {
    deps.iter().all(|d| match d.seen {
        Seen::Entry { listed_ns, .. } if listed_ns != 0 => listed_ns / 1_000_000 + RACY_MS < now_ms,
        _ => true,
    })
}

fn load(file: &Path, key: &str) -> Option<DeniedSet> {
    let text = crate::atomic::read_regular(file, 4 << 20).ok()?;
    let e: Entry = serde_json::from_str(&text).ok()?;
    if e.version != VERSION || e.key != key {
        return None;
    }
    for (path, follow, kind, ino, listed_ns) in e.deps {
        let seen = match u8::try_from(kind) {
            Ok(kind) => Seen::Entry {
                kind,
                ino,
                listed_ns,
            },
            Err(_) => Seen::Absent,
        };
        if !(Dep { path, follow, seen }).holds() {
            return None;
        }
    }
    let mut set = DeniedSet::default();
    for (owner, path) in e.denied {
        let owner = Owner::parse(&owner)?;
        set.denied.push(Denied { path, owner });
    }
    for (owner, include, except) in e.patterns {
        let owner = Owner::parse(&owner)?;
        set.patterns.push(PatternRule {
            owner,
            include,
            except,
        });
    }
    set.notes = e.notes;
    Some(set)
}

fn store(file: &Path, key: &str, deps: &[Dep], set: &DeniedSet) {
    let entry = Entry {
        version: VERSION,
        key: key.to_string(),
        deps: deps
            .iter()
            .map(|d| match d.seen {
                Seen::Absent => (d.path.clone(), d.follow, -1, 0, 0),
                Seen::Entry {
                    kind,
                    ino,
                    listed_ns,
                } => (d.path.clone(), d.follow, kind as i8, ino, listed_ns),
            })
            .collect(),
        denied: set
            .denied
            .iter()
            .map(|d| (d.owner.label(), d.path.clone()))
            .collect(),
        patterns: set
            .patterns
            .iter()
            .map(|p| (p.owner.label(), p.include.clone(), p.except.clone()))
            .collect(),
        notes: set.notes.clone(),
    };
    let Ok(text) = serde_json::to_vec(&entry) else {
        return;
    };
    if let Some(dir) = file.parent()
        && crate::atomic::create_dirs(dir).is_ok()
    {
        let _ = crate::atomic::replace_cache(file, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::floor::set::Rule;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        dir
    }

    /// Moves a folder's time an hour back, as a folder nobody touched lately has.
    fn settle(dir: &Path) {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        crate::state::tests::set_folder_time(dir, old);
    }

    fn stream(name: &str, patterns: &[&str]) -> Rule {
        Rule {
            owner: Owner::Stream(name.into()),
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            keep: Vec::new(),
        }
    }

    fn inputs(root: &Path, rules: Vec<Rule>) -> Inputs {
        Inputs {
            root: root.to_path_buf(),
            rules,
            ..Inputs::default()
        }
    }

    fn names(set: &DeniedSet) -> Vec<String> {
        set.denied
            .iter()
            .map(|d| d.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn an_entry_is_used_while_its_key_and_reads_hold() {
        let dir = tree(&["src/api/a.ts", "src/web/b.ts"]);
        let file = dir.path().join("cache/floor.json");
        let i = inputs(dir.path(), vec![stream("api", &["src/api/**"])]);
        let first = denied(&file, &i);
        assert_eq!(names(&first), ["api"]);
        assert_eq!(first, set::compute(&i));
        // A hit answers from the file: an entry edited to name another owner is what comes back.
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("stream:api", "stream:edited")).unwrap();
        let hit = denied(&file, &i);
        assert_eq!(hit.denied[0].owner, Owner::Stream("edited".into()));
    }

    #[test]
    fn a_lock_added_or_released_gives_another_key() {
        let dir = tree(&["src/api/a.ts", "src/web/b.ts"]);
        let file = dir.path().join("cache/floor.json");
        let one = inputs(dir.path(), vec![stream("api", &["src/api/**"])]);
        assert_eq!(names(&denied(&file, &one)), ["api"]);
        let two = inputs(
            dir.path(),
            vec![
                stream("api", &["src/api/**"]),
                stream("web", &["src/web/**"]),
            ],
        );
        assert_eq!(names(&denied(&file, &two)), ["api", "web"], "added");
        let released = inputs(dir.path(), vec![stream("web", &["src/web/**"])]);
        assert_eq!(names(&denied(&file, &released)), ["web"], "released");
        let reowned = inputs(dir.path(), vec![stream("web", &["src/api/**"])]);
        assert_eq!(names(&denied(&file, &reowned)), ["api"], "owns changed");
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_computed_again_and_rewritten() {
        let dir = tree(&["src/api/a.ts"]);
        let file = dir.path().join("cache/floor.json");
        let i = inputs(dir.path(), vec![stream("api", &["src/api/**"])]);
        let want = set::compute(&i);
        denied(&file, &i);
        let good = std::fs::read_to_string(&file).unwrap();
        for broken in [
            good[..good.len() / 2].to_string(),
            String::new(),
            good.replace("\"version\":1", "\"version\":99"),
            good.replace("stream:api", "not an owner"),
            "{\"denied\": []}".to_string(),
        ] {
            std::fs::write(&file, &broken).unwrap();
            assert_eq!(denied(&file, &i), want, "{broken}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), good, "rewritten");
        }
    }

    #[test]
    fn a_file_made_later_that_a_glob_matches_is_denied() {
        let dir = tree(&["src/a.test.ts", "src/a.ts"]);
        let src = dir.path().join("src");
        settle(&src);
        let file = dir.path().join("cache/floor.json");
        let i = inputs(dir.path(), vec![stream("tests", &["src/*.test.ts"])]);
        assert_eq!(names(&denied(&file, &i)), ["a.test.ts"]);
        assert!(file.exists(), "a settled answer is kept");
        std::fs::write(src.join("b.test.ts"), "x").unwrap();
        std::fs::write(src.join("b.ts"), "x").unwrap();
        assert_eq!(names(&denied(&file, &i)), ["a.test.ts", "b.test.ts"]);
        // A folder an exception needs listed, the same.
        let dir = tree(&["lib/gen/x.ts", "lib/y.ts"]);
        let lib = dir.path().join("lib");
        settle(&lib);
        let file = dir.path().join("cache/floor.json");
        let i = inputs(dir.path(), vec![stream("lib", &["lib/**", "!lib/gen/**"])]);
        assert_eq!(names(&denied(&file, &i)), ["y.ts"]);
        std::fs::write(lib.join("z.ts"), "x").unwrap();
        assert_eq!(names(&denied(&file, &i)), ["y.ts", "z.ts"]);
        // A literal owner that did not exist, then does.
        let i = inputs(dir.path(), vec![stream("lit", &["lib/new.ts"])]);
        assert!(denied(&file, &i).denied.is_empty());
        std::fs::write(lib.join("new.ts"), "x").unwrap();
        assert_eq!(names(&denied(&file, &i)), ["new.ts"]);
    }

    #[test]
    fn a_folder_listed_within_the_clock_tick_is_not_kept() {
        let dir = tree(&["src/a.test.ts"]);
        let file = dir.path().join("cache/floor.json");
        let i = inputs(dir.path(), vec![stream("tests", &["src/*.test.ts"])]);
        assert_eq!(names(&denied(&file, &i)), ["a.test.ts"]);
        assert!(!file.exists(), "src was just written");
        // A folder owned whole is not listed: its time does not matter.
        let i = inputs(dir.path(), vec![stream("src", &["src/**"])]);
        denied(&file, &i);
        assert!(file.exists());
    }
}
