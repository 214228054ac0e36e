//! Plans as a claim reads them: parsed once, then taken from a cache while the file is
//! unchanged, so a claim in a round of 200 plans parses the plans that changed, not all of them.
//!
//! ```text
//! session-lock/.index/plans.json   {version, plans: {<plan path>: {len, mtimeNs, stream | error}}}
//! ```
//!
//! A cached entry is used only when the file's length and modification time are the ones it
//! was parsed at, and that time is older than [`SETTLED_MS`] when it was parsed (an edit in the
//! same clock tick would leave the time as it was, so a younger file is parsed every time).
//! The answer is the one [`plans::load_each`] gives: the same order, the same errors, the same
//! duplicate check. The cache is a cache: unreadable, it is rebuilt; it is never synced.

use crate::plans::{self, PlanError, Stream};
use crate::state::Layout;
use crate::{atomic, time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

const VERSION: u32 = 1;

/// A plan file younger than this is parsed every time.
pub const SETTLED_MS: u64 = 2_000;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Parsed {
    name: String,
    milestone: u32,
    owns: Vec<String>,
    owns_line: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
enum Outcome {
    Stream(Parsed),
    /// A malformed plan: the line and reason `parse_plan` gave.
    Malformed {
        line: usize,
        reason: String,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct Cached {
    len: u64,
    mtime_ns: u64,
    outcome: Outcome,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheFile {
    version: u32,
    plans: BTreeMap<String, Cached>,
}

fn cache_path(layout: &Layout) -> PathBuf {
    layout.dir.join(".index").join("plans.json")
}

fn read_cache(layout: &Layout) -> CacheFile {
    std::fs::read(cache_path(layout))
        .ok()
        .and_then(|t| serde_json::from_slice::<CacheFile>(&t).ok())
        .filter(|c| c.version == VERSION)
        .unwrap_or_default()
}

fn parse(path: &Path, rel: &str) -> Result<Outcome, PlanError> {
    let folder = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default();
    let text = std::fs::read_to_string(path).map_err(|source| PlanError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(match plans::parse_plan(&text, rel, &folder) {
        Ok(s) => Outcome::Stream(Parsed {
            name: s.name,
            milestone: s.milestone,
            owns: s.owns,
            owns_line: s.owns_line,
        }),
        Err(PlanError::Malformed { line, reason, .. }) => Outcome::Malformed { line, reason },
        Err(e) => return Err(e),
    })
}

/// The one plan at `rel` (repo-relative), read and parsed now: `None` when it is missing or
/// malformed. For a re-claim, which needs its own plan and no other.
pub fn read_one(root: &Path, rel: &str) -> Option<Stream> {
    match parse(&root.join(rel), rel).ok()? {
        Outcome::Stream(p) => Some(Stream {
            name: p.name,
            milestone: p.milestone,
            owns: p.owns,
            plan: rel.to_string(),
            owns_line: p.owns_line,
        }),
        Outcome::Malformed { .. } => None,
    }
}

/// Every plan, as [`plans::load`] reads them, parsing only the files that changed.
pub fn load(root: &Path, plan_glob: &str, layout: &Layout) -> Result<Vec<Stream>, PlanError> {
    let (streams, mut errors) = load_each(root, plan_glob, layout)?;
    match errors.is_empty() {
        true => Ok(streams),
        false => Err(errors.remove(0)),
    }
}

/// [`plans::load_each`] through the cache: the streams that parse, and one error per plan that
/// does not (a stream declared twice is an error and neither copy counts).
pub fn load_each(
    root: &Path,
    plan_glob: &str,
    layout: &Layout,
) -> Result<(Vec<Stream>, Vec<PlanError>), PlanError> {
    // The cache is brought up to date in place: entries of unchanged plans stay as read.
    let mut cache = read_cache(layout);
    let mut changed = false;
    let mut seen = std::collections::HashSet::new();
    let now = time::now_ms();
    let mut all = plans::Collected::default();
    for path in plans::plan_files(root, plan_glob)? {
        let rel = match path.strip_prefix(root) {
            Ok(r) => r.to_string_lossy().replace('\\', "/"),
            Err(_) => continue,
        };
        let meta = std::fs::metadata(&path).ok();
        let len = meta.as_ref().map_or(0, |m| m.len());
        let mtime_ns = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let settled = mtime_ns > 0 && now.saturating_sub(mtime_ns / 1_000_000) >= SETTLED_MS;
        let cached = cache
            .plans
            .get(&rel)
            .filter(|c| settled && c.len == len && c.mtime_ns == mtime_ns);
        let outcome = match cached {
            Some(c) => c.outcome.clone(),
            None => match parse(&path, &rel) {
                Ok(o) => {
                    if settled {
                        let entry = Cached {
                            len,
                            mtime_ns,
                            outcome: o.clone(),
                        };
                        cache.plans.insert(rel.clone(), entry);
                        changed = true;
                    }
                    o
                }
                Err(e) => {
                    all.error(e);
                    continue;
                }
            },
        };
        if settled {
            seen.insert(rel.clone());
        }
        let stream = match outcome {
            Outcome::Stream(p) => Stream {
                name: p.name,
                milestone: p.milestone,
                owns: p.owns,
                plan: rel,
                owns_line: p.owns_line,
            },
            Outcome::Malformed { line, reason } => {
                all.error(PlanError::Malformed {
                    path: rel,
                    line,
                    reason,
                });
                continue;
            }
        };
        all.add(stream);
    }
    // Plans gone, unreadable or too young to keep leave the cache.
    let before = cache.plans.len();
    cache.plans.retain(|rel, _| seen.contains(rel));
    if changed || cache.plans.len() != before {
        cache.version = VERSION;
        write_cache(layout, &cache);
    }
    Ok(all.finish())
}

fn write_cache(layout: &Layout, cache: &CacheFile) {
    let file = cache_path(layout);
    if let Some(dir) = file.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_vec(cache)
    {
        let _ = atomic::replace_cache(&file, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn plan(root: &Path, folder: &str, text: &str) -> PathBuf {
        let dir = root.join("plans").join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("plan.md");
        std::fs::write(&file, text).unwrap();
        // Settled: older than the window, so the cache may keep it.
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        file
    }

    const GLOB: &str = "plans/*-ms-*-*/plan.md";

    #[test]
    fn answers_as_plans_load_does_and_reparses_a_changed_plan() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns:\n  - src/api/**\n---\n");
        plan(root, "r-ms-02-ui", "---\nowns: [src/ui/**]\n---\n");
        let first = load(root, GLOB, &layout).unwrap();
        assert_eq!(first, plans::load(root, GLOB).unwrap());
        assert!(cache_path(&layout).exists());
        assert_eq!(load(root, GLOB, &layout).unwrap(), first, "from the cache");

        plan(
            root,
            "r-ms-01-api",
            "---\nowns:\n  - src/api/**\n  - docs/**\n---\n",
        );
        let again = load(root, GLOB, &layout).unwrap();
        assert_eq!(again[0].owns, vec!["src/api/**", "docs/**"]);
        assert_eq!(again, plans::load(root, GLOB).unwrap());

        plan(root, "r-ms-03-db", "---\nowns: nope\n---\n");
        let ours = load(root, GLOB, &layout).unwrap_err().to_string();
        assert_eq!(ours, plans::load(root, GLOB).unwrap_err().to_string());
        assert_eq!(ours, load(root, GLOB, &layout).unwrap_err().to_string());

        plan(root, "r-ms-03-db", "---\nstream: api\nowns: [db/**]\n---\n");
        let dup = load(root, GLOB, &layout).unwrap_err().to_string();
        assert!(dup.contains("declared twice"), "{dup}");
        assert_eq!(dup, plans::load(root, GLOB).unwrap_err().to_string());
    }

    #[test]
    fn a_corrupt_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns:\n  - src/api/**\n---\n");
        std::fs::create_dir_all(cache_path(&layout).parent().unwrap()).unwrap();
        std::fs::write(cache_path(&layout), "{{{").unwrap();
        assert_eq!(load(root, GLOB, &layout).unwrap().len(), 1);
    }
}
