//! Plans as a claim reads them: parsed once, then taken from a cache while the file is
//! unchanged, so a claim in a round of 200 plans parses the plans that changed, not all of them.
//!
//! ```text
//! session-lock/.index/plans.json   {version, plans: [{plan, len, mtimeNs, outcome}, …]}
//! ```
//!
//! A cached entry is used only when the file's length and modification time are the ones it
//! was parsed at, and that time is older than [`SETTLED_MS`] when it was parsed (an edit in the
//! same clock tick would leave the time as it was, so a younger file is parsed every time).
//! The answer is the one [`plans::load_each`] gives: the same order, the same errors, the same
//! duplicate check. The cache is a cache: unreadable, it is rebuilt; it is never synced.
//!
//! The entries are kept in the order the plan files are found in, so one walk down both lists
//! pairs each file with its entry, and an entry's parsed plan moves into the answer as it is.

use crate::plans::{self, PlanError, Stream};
use crate::state::Layout;
use crate::{atomic, time};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

const VERSION: u32 = 2;

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

/// One plan as the cache file keeps it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cached {
    plan: String,
    len: u64,
    mtime_ns: u64,
    outcome: Outcome,
}

#[derive(Debug, Default, Deserialize)]
struct CacheFile {
    version: u32,
    plans: Vec<Cached>,
}

/// [`Cached`] as it is written, from the plans as this call found them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CachedRef<'a> {
    plan: &'a str,
    len: u64,
    mtime_ns: u64,
    outcome: &'a Outcome,
}

#[derive(Serialize)]
struct CacheFileRef<'a> {
    version: u32,
    plans: Vec<CachedRef<'a>>,
}

fn cache_path(layout: &Layout) -> PathBuf {
    layout.dir.join(".index").join("plans.json")
}

fn read_cache(layout: &Layout) -> Vec<Cached> {
    std::fs::read(cache_path(layout))
        .ok()
        .and_then(|t| serde_json::from_slice::<CacheFile>(&t).ok())
        .filter(|c| c.version == VERSION)
        .unwrap_or_default()
        .plans
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

/// One plan file as this call found it.
struct Found {
    rel: String,
    len: u64,
    mtime_ns: u64,
    /// Old enough for the cache to keep.
    settled: bool,
    outcome: Result<Outcome, PlanError>,
}

/// [`plans::load_each`] through the cache: the streams that parse, and one error per plan that
/// does not (a stream declared twice is an error and neither copy counts).
pub fn load_each(
    root: &Path,
    plan_glob: &str,
    layout: &Layout,
) -> Result<(Vec<Stream>, Vec<PlanError>), PlanError> {
    let files = plans::plan_files(root, plan_glob)?;
    let cache = read_cache(layout);
    let cached_count = cache.len();
    let mut cache = cache.into_iter().peekable();
    // Entries used as they stand; the file is written again when any other is needed.
    let mut kept = 0;
    let mut changed = false;
    let now = time::now_ms();
    let mut found = Vec::with_capacity(files.len());
    for file in files {
        let meta = file.meta.or_else(|| std::fs::metadata(&file.path).ok());
        let len = meta.as_ref().map_or(0, |m| m.len());
        let mtime_ns = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let settled = mtime_ns > 0 && now.saturating_sub(mtime_ns / 1_000_000) >= SETTLED_MS;
        // Both lists run in the files' order: entries before this file are of plans gone.
        while cache
            .next_if(|c| plans::path_order(&c.plan, &file.rel).is_lt())
            .is_some()
        {}
        let entry = cache.next_if(|c| c.plan == file.rel);
        let outcome = match entry.filter(|c| settled && c.len == len && c.mtime_ns == mtime_ns) {
            Some(c) => {
                kept += 1;
                Ok(c.outcome)
            }
            None => {
                let parsed = parse(&file.path, &file.rel);
                changed |= settled && parsed.is_ok();
                parsed
            }
        };
        found.push(Found {
            rel: file.rel,
            len,
            mtime_ns,
            settled,
            outcome,
        });
    }
    // Plans gone, unreadable or too young to keep leave the cache.
    if changed || kept != cached_count {
        write_cache(layout, &found);
    }
    let mut all = plans::Collected::default();
    for f in found {
        match f.outcome {
            Ok(Outcome::Stream(p)) => all.add(Stream {
                name: p.name,
                milestone: p.milestone,
                owns: p.owns,
                plan: f.rel,
                owns_line: p.owns_line,
            }),
            Ok(Outcome::Malformed { line, reason }) => all.error(PlanError::Malformed {
                path: f.rel,
                line,
                reason,
            }),
            Err(e) => all.error(e),
        }
    }
    Ok(all.finish())
}

/// Writes the cache of the settled plans `found` read.
fn write_cache(layout: &Layout, found: &[Found]) {
    let plans = found
        .iter()
        .filter(|f| f.settled)
        .filter_map(|f| {
            Some(CachedRef {
                plan: &f.rel,
                len: f.len,
                mtime_ns: f.mtime_ns,
                outcome: f.outcome.as_ref().ok()?,
            })
        })
        .collect();
    let cache = CacheFileRef {
        version: VERSION,
        plans,
    };
    let file = cache_path(layout);
    if let Some(dir) = file.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_vec(&cache)
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

    /// Rewrites `file` as no plan, of the same length and modification time: a change only the
    /// cache cannot see, so what `load` answers tells whether the cache answered.
    fn behind_the_cache(file: &Path) {
        let meta = std::fs::metadata(file).unwrap();
        std::fs::write(file, "#".repeat(meta.len() as usize)).unwrap();
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(meta.modified().unwrap())
            .unwrap();
    }

    #[test]
    fn unchanged_plans_come_from_the_cache_and_gone_ones_leave_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        let api = plan(root, "r-ms-01-api", "---\nowns: [src/api/**]\n---\n");
        let ui = plan(root, "r-ms-01-ui", "---\nowns: [src/ui/**]\n---\n");
        let docs = plan(root, "r-ms-02-docs", "---\nowns: [docs/**]\n---\n");
        load(root, GLOB, &layout).unwrap();
        for f in [&api, &ui, &docs] {
            behind_the_cache(f);
        }
        let names = |s: &[Stream]| s.iter().map(|s| s.owns[0].clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&load(root, GLOB, &layout).unwrap()),
            ["src/api/**", "src/ui/**", "docs/**"],
            "every plan from its cache entry"
        );
        std::fs::remove_dir_all(ui.parent().unwrap()).unwrap();
        assert_eq!(
            names(&load(root, GLOB, &layout).unwrap()),
            ["src/api/**", "docs/**"]
        );
        let text = std::fs::read_to_string(cache_path(&layout)).unwrap();
        assert!(!text.contains("r-ms-01-ui"), "{text}");
        assert_eq!(
            names(&load(root, GLOB, &layout).unwrap()),
            ["src/api/**", "docs/**"],
            "the others still from the cache"
        );
    }

    #[test]
    fn a_cache_out_of_order_costs_parses_not_answers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns: [src/api/**]\n---\n");
        plan(root, "r-ms-01-ui", "---\nowns: [src/ui/**]\n---\n");
        let first = load(root, GLOB, &layout).unwrap();
        let mut cache: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cache_path(&layout)).unwrap()).unwrap();
        cache["plans"].as_array_mut().unwrap().reverse();
        std::fs::write(cache_path(&layout), cache.to_string()).unwrap();
        assert_eq!(load(root, GLOB, &layout).unwrap(), first);
        let again: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cache_path(&layout)).unwrap()).unwrap();
        let order: Vec<&str> = again["plans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["plan"].as_str().unwrap())
            .collect();
        assert_eq!(
            order,
            ["plans/r-ms-01-api/plan.md", "plans/r-ms-01-ui/plan.md"],
            "written again in the files' order"
        );
    }
}
