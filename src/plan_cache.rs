//! Plans as a claim reads them: parsed once, then taken from a cache while the file is
//! unchanged, so a claim in a round of 200 plans parses the plans that changed, not all of them.
//!
//! ```text
//! session-lock/.index/plans.json   {"version":2}
//!                                  ["<plan>",<len>,<mtimeNs>,"<stream>"]<TAB>{"milestone":…,"owns":[…],"ownsLine":…}
//!                                  ["<plan>",<len>,<mtimeNs>,""]<TAB>{"line":…,"reason":"…"}
//! ```
//!
//! A cached entry is used only when the file's length and modification time are the ones it
//! was parsed at, and that time is older than [`SETTLED_MS`] when it was parsed (an edit in the
//! same clock tick would leave the time as it was, so a younger file is parsed every time).
//! The answer is the one [`plans::load_each`] gives: the same order, the same errors, the same
//! duplicate check. The cache is a cache: unreadable, it is rebuilt; it is never synced.
//!
//! One line per plan (the second form for a malformed one), in the order the plan files are
//! found in, so one walk down both lists pairs each file with its line. A line's head (the
//! plan's path, stat and stream) is all a claim needs of the other plans: which plan declares
//! the stream, and that no other one does. `stream:` lets any plan declare any name, and only a
//! stat of each plan tells its cached name still holds, so every plan is stat'ed, but only the
//! claimed plan's owns are parsed ([`declaring`]); `status` parses every line ([`load_each`]).

use crate::plans::{self, PlanError, Stream};
use crate::state::Layout;
use crate::{atomic, time};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

const VERSION: u32 = 2;

/// A plan file younger than this is parsed every time.
pub const SETTLED_MS: u64 = 2_000;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Parsed {
    name: String,
    milestone: u32,
    owns: Vec<String>,
    owns_line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Stream(Parsed),
    /// A malformed plan: the line and reason `parse_plan` gave.
    Malformed {
        line: usize,
        reason: String,
    },
}

#[derive(Deserialize)]
struct Header {
    version: u32,
}

/// A line's head, `["<plan>",<len>,<mtimeNs>,"<stream>"]` (the stream `""` for a malformed
/// plan), read without copying its text.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    plan: Cow<'a, str>,
    len: u64,
    mtime_ns: u64,
    #[serde(borrow)]
    stream: Cow<'a, str>,
}

/// The rest of a stream's line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamTail {
    milestone: u32,
    owns: Vec<String>,
    owns_line: usize,
}

/// The rest of a malformed plan's line.
#[derive(Serialize, Deserialize)]
struct MalformedTail {
    line: usize,
    reason: String,
}

fn cache_path(layout: &Layout) -> PathBuf {
    layout.dir.join(".index").join("plans.json")
}

/// The cache file's lines, when it is of this version (complete lines only).
fn cache_lines(text: &str) -> Vec<&str> {
    let mut lines = text.split_inclusive('\n').filter(|l| l.ends_with('\n'));
    let current = lines
        .next()
        .and_then(|h| serde_json::from_str::<Header>(h).ok())
        .is_some_and(|h| h.version == VERSION);
    match current {
        true => lines.map(|l| &l[..l.len() - 1]).collect(),
        false => Vec::new(),
    }
}

fn parse(path: &Path, rel: &str) -> Result<Outcome, PlanError> {
    let folder = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default();
    let text = crate::atomic::read_regular(path, crate::atomic::MAX_READ).map_err(|source| {
        PlanError::Io {
            path: path.to_path_buf(),
            source,
        }
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
        Outcome::Stream(p) => Some(stream_of(p, rel.to_string())),
        Outcome::Malformed { .. } => None,
    }
}

fn stream_of(p: Parsed, plan: String) -> Stream {
    Stream {
        name: p.name,
        milestone: p.milestone,
        owns: p.owns,
        plan,
        owns_line: p.owns_line,
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

/// What is known of one plan file: its cache line, when that still describes the file, or
/// what reading the file gave.
enum Known<'c> {
    Cached {
        line: &'c str,
        stream: Cow<'c, str>,
        tail: &'c str,
    },
    Read(Result<Outcome, PlanError>),
}

/// One plan file as this call found it.
struct Found<'c> {
    file: plans::PlanFile,
    len: u64,
    mtime_ns: u64,
    /// Old enough for the cache to keep.
    settled: bool,
    known: Known<'c>,
}

impl Found<'_> {
    /// The stream the plan declares, `None` for a plan that does not parse (read from the
    /// line's head when cached).
    fn stream(&self) -> Option<&str> {
        match &self.known {
            Known::Cached { stream, .. } => Some(stream.as_ref()).filter(|s| !s.is_empty()),
            Known::Read(Ok(Outcome::Stream(p))) => Some(&p.name),
            Known::Read(_) => None,
        }
    }

    /// The plan, parsed: from the rest of its cache line, or from the file when that text is
    /// not what the line's head says it is (then `broken` is set, and the cache is dropped).
    fn into_outcome(self, broken: &mut bool) -> (String, Result<Outcome, PlanError>) {
        let outcome = match self.known {
            Known::Read(outcome) => outcome,
            Known::Cached { stream, tail, .. } => {
                let from_line = match stream.is_empty() {
                    false => serde_json::from_str::<StreamTail>(tail).map(|t| {
                        Outcome::Stream(Parsed {
                            name: stream.into_owned(),
                            milestone: t.milestone,
                            owns: t.owns,
                            owns_line: t.owns_line,
                        })
                    }),
                    true => {
                        serde_json::from_str::<MalformedTail>(tail).map(|t| Outcome::Malformed {
                            line: t.line,
                            reason: t.reason,
                        })
                    }
                };
                from_line.or_else(|_| {
                    *broken = true;
                    parse(&self.file.path, &self.file.rel)
                })
            }
        };
        (self.file.rel, outcome)
    }
}

/// Every plan file the glob names, each paired with its cache line (one walk down both, in
/// path order) or, when the line does not describe the file as it is, read now. Also whether
/// the cache must be written again: a plan was read that it could keep, or a line of it was
/// not used (its plan gone, changed, unreadable or too young to keep).
fn look<'c>(
    root: &Path,
    plan_glob: &str,
    lines: &[&'c str],
) -> Result<(Vec<Found<'c>>, bool), PlanError> {
    let files = plans::plan_files(root, plan_glob)?;
    let mut cache = lines
        .iter()
        .filter_map(|line| {
            let (head, tail) = line.split_once('\t')?;
            Some((serde_json::from_str::<Head>(head).ok()?, *line, tail))
        })
        .peekable();
    let mut kept = 0;
    let mut changed = false;
    let now = time::now_ms();
    let mut found = Vec::with_capacity(files.len());
    for mut file in files {
        let meta = file
            .meta
            .take()
            .or_else(|| std::fs::metadata(&file.path).ok());
        let len = meta.as_ref().map_or(0, |m| m.len());
        let mtime_ns = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let settled = mtime_ns > 0 && now.saturating_sub(mtime_ns / 1_000_000) >= SETTLED_MS;
        // Both lists run in path order: lines before this file are of plans gone.
        while cache
            .next_if(|(h, ..)| plans::path_order(&h.plan, &file.rel).is_lt())
            .is_some()
        {}
        let line = cache
            .next_if(|(h, ..)| h.plan == file.rel)
            .filter(|(h, ..)| settled && h.len == len && h.mtime_ns == mtime_ns);
        let known = match line {
            Some((head, line, tail)) => {
                kept += 1;
                Known::Cached {
                    line,
                    stream: head.stream,
                    tail,
                }
            }
            None => {
                let read = parse(&file.path, &file.rel);
                changed |= settled && read.is_ok();
                Known::Read(read)
            }
        };
        found.push(Found {
            file,
            len,
            mtime_ns,
            settled,
            known,
        });
    }
    Ok((found, changed || kept != lines.len()))
}

/// Writes the cache: a line per settled plan in `found`, a cached one as it was read.
fn write_cache(layout: &Layout, found: &[Found]) {
    let mut text = format!("{{\"version\":{VERSION}}}\n").into_bytes();
    for f in found.iter().filter(|f| f.settled) {
        let written = match &f.known {
            Known::Cached { line, .. } => {
                text.extend_from_slice(line.as_bytes());
                Ok(())
            }
            Known::Read(Ok(outcome)) => write_line(&mut text, f, outcome),
            Known::Read(Err(_)) => continue,
        };
        if written.is_err() {
            return;
        }
        text.push(b'\n');
    }
    let file = cache_path(layout);
    if let Some(dir) = file.parent()
        && crate::atomic::create_dirs(dir).is_ok()
    {
        let _ = atomic::replace_cache(&file, &text);
    }
}

fn write_line(out: &mut Vec<u8>, f: &Found, outcome: &Outcome) -> serde_json::Result<()> {
    let stream = match outcome {
        Outcome::Stream(p) => p.name.as_str(),
        Outcome::Malformed { .. } => "",
    };
    serde_json::to_writer(&mut *out, &(&f.file.rel, f.len, f.mtime_ns, stream))?;
    out.push(b'\t');
    match outcome {
        Outcome::Stream(p) => serde_json::to_writer(
            out,
            &StreamTail {
                milestone: p.milestone,
                owns: p.owns.clone(),
                owns_line: p.owns_line,
            },
        ),
        Outcome::Malformed { line, reason } => serde_json::to_writer(
            out,
            &MalformedTail {
                line: *line,
                reason: reason.clone(),
            },
        ),
    }
}

/// [`plans::load_each`] through the cache: the streams that parse, and one error per plan that
/// does not (a stream declared twice is an error and neither copy counts).
pub fn load_each(
    root: &Path,
    plan_glob: &str,
    layout: &Layout,
) -> Result<(Vec<Stream>, Vec<PlanError>), PlanError> {
    let text = crate::atomic::read_regular(cache_path(layout), crate::atomic::MAX_READ)
        .unwrap_or_default();
    let lines = cache_lines(&text);
    let (found, stale) = look(root, plan_glob, &lines)?;
    if stale {
        write_cache(layout, &found);
    }
    let mut broken = false;
    let mut all = plans::Collected::default();
    for f in found {
        match f.into_outcome(&mut broken) {
            (rel, Ok(Outcome::Stream(p))) => all.add(stream_of(p, rel)),
            (path, Ok(Outcome::Malformed { line, reason })) => {
                all.error(PlanError::Malformed { path, line, reason })
            }
            (_, Err(e)) => all.error(e),
        }
    }
    drop_if_broken(layout, broken);
    Ok(all.finish())
}

/// The plan that declares `stream`, as [`load_each`] would find it among its streams, reading
/// of the other plans only their stat and their line's head. `None` when no plan declares it
/// or two do (neither counts then): [`load_each`] gives the whole picture for the message.
pub fn declaring(
    root: &Path,
    plan_glob: &str,
    layout: &Layout,
    stream: &str,
) -> Result<Option<Stream>, PlanError> {
    let text = crate::atomic::read_regular(cache_path(layout), crate::atomic::MAX_READ)
        .unwrap_or_default();
    let lines = cache_lines(&text);
    let (mut found, stale) = look(root, plan_glob, &lines)?;
    if stale {
        write_cache(layout, &found);
    }
    let mut named = found
        .iter()
        .enumerate()
        .filter(|(_, f)| f.stream() == Some(stream))
        .map(|(i, _)| i);
    let (Some(only), None) = (named.next(), named.next()) else {
        return Ok(None);
    };
    let mut broken = false;
    let plan = match found.swap_remove(only).into_outcome(&mut broken) {
        (rel, Ok(Outcome::Stream(p))) if p.name == stream => Some(stream_of(p, rel)),
        _ => None,
    };
    drop_if_broken(layout, broken);
    Ok(plan)
}

/// A cache line whose rest did not read as its head said: the cache file goes, and the next
/// reader builds it again.
fn drop_if_broken(layout: &Layout, broken: bool) {
    if broken {
        let _ = std::fs::remove_file(cache_path(layout));
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
        let text =
            crate::atomic::read_regular(cache_path(&layout), crate::atomic::MAX_READ).unwrap();
        assert!(!text.contains("r-ms-01-ui"), "{text}");
        assert_eq!(
            names(&load(root, GLOB, &layout).unwrap()),
            ["src/api/**", "docs/**"],
            "the others still from the cache"
        );
    }

    /// The cache file's plan lines, its header left out.
    fn plan_lines(layout: &Layout) -> Vec<String> {
        let text =
            crate::atomic::read_regular(cache_path(layout), crate::atomic::MAX_READ).unwrap();
        text.lines().skip(1).map(str::to_string).collect()
    }

    fn write_lines(layout: &Layout, lines: &[String]) {
        let text = format!("{{\"version\":{VERSION}}}\n{}\n", lines.join("\n"));
        std::fs::write(cache_path(layout), text).unwrap();
    }

    #[test]
    fn a_cache_out_of_order_costs_parses_not_answers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns: [src/api/**]\n---\n");
        plan(root, "r-ms-01-ui", "---\nowns: [src/ui/**]\n---\n");
        let first = load(root, GLOB, &layout).unwrap();
        let mut lines = plan_lines(&layout);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with(r#"["plans/r-ms-01-api/plan.md","#) && lines[0].contains("\t{"),
            "{lines:?}"
        );
        lines.reverse();
        write_lines(&layout, &lines);
        assert_eq!(load(root, GLOB, &layout).unwrap(), first);
        lines.reverse();
        assert_eq!(
            plan_lines(&layout),
            lines,
            "written again in the files' order"
        );
    }

    #[test]
    fn a_line_whose_rest_is_not_its_plan_is_read_from_the_file_and_the_cache_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns: [src/api/**]\n---\n");
        let first = load(root, GLOB, &layout).unwrap();
        let line = &plan_lines(&layout)[0];
        let head = line.split('\t').next().unwrap();
        write_lines(&layout, &[format!("{head}\t{{\"line\":1}}")]);
        assert_eq!(load(root, GLOB, &layout).unwrap(), first);
        assert!(!cache_path(&layout).exists(), "dropped, to be built again");
        assert_eq!(load(root, GLOB, &layout).unwrap(), first);
        assert_eq!(&plan_lines(&layout)[0], line);
    }

    #[test]
    fn a_claim_finds_its_plan_by_the_heads_of_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let layout = Layout::new(root);
        plan(root, "r-ms-01-api", "---\nowns: [src/api/**]\n---\n");
        plan(
            root,
            "r-ms-01-x",
            "---\nstream: ui\nowns: [src/ui/**]\n---\n",
        );
        plan(root, "r-ms-02-bad", "---\nowns: nope\n---\n");
        let all = load(root, GLOB, &layout).unwrap_err();
        assert!(all.to_string().contains("r-ms-02-bad"), "{all}");
        let find = |name: &str| declaring(root, GLOB, &layout, name).unwrap();
        let (streams, _) = load_each(root, GLOB, &layout).unwrap();
        for name in ["api", "ui"] {
            let want = streams.iter().find(|s| s.name == name).cloned();
            assert_eq!(find(name), want, "{name}");
            assert!(want.is_some());
        }
        assert_eq!(find("bad"), None, "a malformed plan declares nothing");
        assert_eq!(find("x"), None, "renamed by its stream key");
        // Only the claimed plan's line is read past its head: the others' rest may be garbage.
        let lines: Vec<String> = plan_lines(&layout)
            .into_iter()
            .map(|l| match l.contains("r-ms-01-api") {
                true => l,
                false => format!("{}\tgarbage", l.split('\t').next().unwrap()),
            })
            .collect();
        write_lines(&layout, &lines);
        assert_eq!(find("api").unwrap().owns, ["src/api/**"]);
        assert_eq!(plan_lines(&layout), lines, "nothing to write");
        // A second plan declaring it: neither counts, as for load_each.
        plan(
            root,
            "r-ms-03-dup",
            "---\nstream: api\nowns: [db/**]\n---\n",
        );
        assert_eq!(find("api"), None);
        let (streams, errors) = load_each(root, GLOB, &layout).unwrap();
        assert!(!streams.iter().any(|s| s.name == "api"));
        assert!(
            errors
                .iter()
                .any(|e| e.to_string().contains("declared twice"))
        );
        // A changed plan is read again, whatever its line says.
        std::fs::remove_dir_all(root.join("plans/r-ms-03-dup")).unwrap();
        plan(
            root,
            "r-ms-01-api",
            "---\nowns: [src/api/**, docs/**]\n---\n",
        );
        assert_eq!(find("api").unwrap().owns, ["src/api/**", "docs/**"]);
    }
}
