//! Plans declare the streams: `plans/<prefix>-ms-NN-<name>/plan.md` whose frontmatter lists the
//! files the stream owns.
//!
//! ```text
//! ---
//! stream: api            # optional; default: the folder part after `ms-NN-`
//! owns:
//!   - src/api/**
//!   - "!src/api/legacy.ts"
//! ---
//! ```
//! `owns: [a, b]` on one line works too. Other keys are left alone. A malformed plan is an error
//! naming the file and line, never a silent empty `owns`.

use globset::GlobBuilder;
use std::path::{Path, PathBuf};

/// One stream as its plan declares it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stream {
    pub name: String,
    pub milestone: u32,
    pub owns: Vec<String>,
    /// The plan file, repo-relative POSIX.
    pub plan: String,
    /// The line of `owns:` in the plan, for messages.
    #[serde(skip)]
    pub owns_line: usize,
}

impl Stream {
    /// Checks every `owns` pattern's syntax; the error names the plan and the `owns:` line.
    pub fn check_globs(&self) -> Result<(), PlanError> {
        for pattern in &self.owns {
            if let Err(e) = crate::globs::check_pattern(pattern) {
                return Err(PlanError::Malformed {
                    path: self.plan.clone(),
                    line: self.owns_line,
                    reason: e.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// Why a plan could not be read.
#[derive(Debug)]
pub enum PlanError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Malformed {
        path: String,
        line: usize,
        reason: String,
    },
    BadGlob {
        glob: String,
        reason: String,
    },
    Duplicate {
        stream: String,
        first: String,
        second: String,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            PlanError::Malformed { path, line, reason } => write!(f, "{path}:{line}: {reason}"),
            PlanError::BadGlob { glob, reason } => write!(f, "bad planGlob '{glob}': {reason}"),
            PlanError::Duplicate {
                stream,
                first,
                second,
            } => {
                write!(
                    f,
                    "stream '{stream}' is declared twice: {first} and {second}"
                )
            }
        }
    }
}

impl std::error::Error for PlanError {}

/// Names no stream may take: `session-lock/build.lock` is the build serializer's OS lock, so a
/// stream called `build` would overwrite it and be skipped by every reader of `*.lock`.
pub const RESERVED_NAMES: [&str; 1] = ["build"];

/// Why `name` cannot name a stream, or `None` when it can: letters, digits, `.`, `_`, `-`;
/// 1–64 long; no leading `.`/`-`; not a reserved name (compared ignoring case, for the file
/// systems that do).
pub fn stream_name_problem(name: &str) -> Option<&'static str> {
    let charset = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !charset {
        Some("letters, digits, '.', '_', '-'; at most 64; not starting with '.' or '-'")
    } else if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        Some("'build' is reserved: session-lock/build.lock is the build lock")
    } else {
        None
    }
}

/// Is this a usable stream name? See [`stream_name_problem`].
pub fn valid_stream_name(name: &str) -> bool {
    stream_name_problem(name).is_none()
}

/// `2026-ms-03-api` → (3, "api").
pub fn parse_folder(folder: &str) -> Option<(u32, String)> {
    let mut search = 0;
    while let Some(pos) = folder[search..].find("-ms-") {
        let start = search + pos + 4;
        let rest = &folder[start..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with('-') && rest.len() > digits + 1 {
            let nn = rest[..digits].parse().ok()?;
            return Some((nn, rest[digits + 1..].to_string()));
        }
        search = start;
    }
    None
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

fn strip_comment(v: &str) -> &str {
    let t = v.trim();
    if let Some(q) = t.chars().next().filter(|c| *c == '"' || *c == '\'') {
        return match t[1..].find(q) {
            Some(end) => &t[..end + 2],
            None => t,
        };
    }
    match t.find(" #") {
        Some(i) => t[..i].trim_end(),
        None => t,
    }
}

/// Parses one plan's text. `path` is only for messages.
pub fn parse_plan(text: &str, path: &str, folder: &str) -> Result<Stream, PlanError> {
    let bad = |line: usize, reason: String| PlanError::Malformed {
        path: path.to_string(),
        line,
        reason,
    };
    let (milestone, folder_stream) = parse_folder(folder).ok_or_else(|| {
        bad(
            1,
            format!("folder '{folder}' does not match <prefix>-ms-NN-<name>"),
        )
    })?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    match lines.next() {
        Some((_, l)) if l.trim() == "---" => {}
        _ => {
            return Err(bad(
                1,
                "no frontmatter: the file must start with '---'".into(),
            ));
        }
    }
    let mut stream: Option<String> = None;
    let mut owns: Option<Vec<String>> = None;
    let mut in_owns = false;
    let mut closed = false;
    let mut owns_line = 0;
    for (n, line) in lines.by_ref() {
        if line.trim() == "---" {
            closed = true;
            break;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) =
            trimmed
                .strip_prefix("- ")
                .or(if trimmed == "-" { Some("") } else { None })
        {
            if in_owns {
                let item = unquote(strip_comment(item));
                if item.is_empty() {
                    return Err(bad(n, "empty item in owns".into()));
                }
                owns.get_or_insert_with(Vec::new).push(item.to_string());
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if in_owns {
                return Err(bad(
                    n,
                    format!("expected '- <pattern>' under owns, found '{trimmed}'"),
                ));
            }
            continue;
        }
        in_owns = false;
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(bad(n, format!("expected 'key: value', found '{trimmed}'")));
        };
        let value = strip_comment(value);
        match key.trim() {
            "owns" => {
                if owns.is_some() {
                    return Err(bad(n, "owns is given twice".into()));
                }
                owns_line = n;
                if value.is_empty() {
                    in_owns = true;
                    owns = Some(Vec::new());
                } else if let Some(inner) =
                    value.strip_prefix('[').and_then(|v| v.strip_suffix(']'))
                {
                    let items: Vec<String> = inner
                        .split(',')
                        .map(|s| unquote(s).to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    owns = Some(items);
                } else {
                    return Err(bad(n, format!("owns must be a list, found '{value}'")));
                }
            }
            "stream" => {
                let name = unquote(value);
                if let Some(problem) = stream_name_problem(name) {
                    return Err(bad(
                        n,
                        format!("stream name '{name}' is not valid ({problem})"),
                    ));
                }
                stream = Some(name.to_string());
            }
            _ => {}
        }
    }
    if !closed {
        return Err(bad(1, "frontmatter is not closed with '---'".into()));
    }
    let owns = match owns {
        None => return Err(bad(1, "frontmatter has no 'owns:' list".into())),
        Some(o) if o.is_empty() => return Err(bad(owns_line, "owns is empty".into())),
        Some(o) => o,
    };
    let name = stream.unwrap_or(folder_stream);
    if let Some(problem) = stream_name_problem(&name) {
        return Err(bad(
            1,
            format!("stream name '{name}' from the folder is not valid ({problem})"),
        ));
    }
    let stream = Stream {
        name,
        milestone,
        owns,
        plan: path.to_string(),
        owns_line,
    };
    stream.check_globs()?;
    Ok(stream)
}

/// Does `name` (one path segment) match `pattern`, a segment of literal characters, `*` (any run
/// of bytes, none too) and `?` (one byte)? What globset answers for such a segment with
/// `literal_separator` (it matches bytes too: `?` is one byte of an `é`, `??` the whole), without
/// building a regex for it.
fn segment_matches(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut i, mut j) = (0, 0);
    // The last `*` seen, and where in `name` its run would end if it took one more character.
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some(b'*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == b'?' || c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|&c| c == b'*')
}

fn io_error(path: &Path, source: std::io::Error) -> PlanError {
    PlanError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file the plan glob names.
pub(crate) struct PlanFile {
    pub path: PathBuf,
    /// Repo-relative, POSIX.
    pub rel: String,
    /// The file's metadata when finding it already read it (a literal last segment).
    pub meta: Option<std::fs::Metadata>,
}

/// The order of `Path`s (component by component) on repo-relative POSIX paths: `/` sorts
/// before every other byte. [`plan_files`] gives its files in this order.
pub(crate) fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    // The first byte that differs decides (a path that ends there sorts first).
    let key = |s: &[u8]| s.get(same).map(|&c| if c == b'/' { 0 } else { c });
    key(a).cmp(&key(b))
}

/// The plan files a glob names, sorted. Globs of `*`/`?` segments are walked folder by folder
/// (the default `plans/*-ms-*-*/plan.md` reads one folder and stats each plan in it); others go
/// through globset.
pub(crate) fn plan_files(root: &Path, plan_glob: &str) -> Result<Vec<PlanFile>, PlanError> {
    let segments: Vec<&str> = plan_glob.split('/').filter(|s| !s.is_empty()).collect();
    let simple = !plan_glob.contains("**") && !plan_glob.contains(['[', '{', '\\']);
    if simple {
        let mut level = vec![PlanFile {
            path: root.to_path_buf(),
            rel: String::new(),
            meta: None,
        }];
        let join = |rel: &str, name: &str| {
            let mut out = String::with_capacity(rel.len() + 1 + name.len());
            if !rel.is_empty() {
                out.push_str(rel);
                out.push('/');
            }
            out.push_str(name);
            out
        };
        for (i, seg) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            let mut next = Vec::new();
            let wild = seg.contains(['*', '?']);
            for dir in &level {
                if !wild {
                    let path = dir.path.join(seg);
                    let Ok(meta) = std::fs::metadata(&path) else {
                        continue;
                    };
                    if (last && meta.is_file()) || (!last && meta.is_dir()) {
                        next.push(PlanFile {
                            rel: join(&dir.rel, seg),
                            path,
                            meta: Some(meta),
                        });
                    }
                    continue;
                }
                let entries = match std::fs::read_dir(&dir.path) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io_error(&dir.path, e)),
                };
                let mut names = Vec::new();
                for entry in entries.flatten() {
                    let Ok(name) = entry.file_name().into_string() else {
                        continue;
                    };
                    if !segment_matches(seg, &name) {
                        continue;
                    }
                    let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                    if last != is_dir {
                        names.push(name);
                    }
                }
                // Each folder's names in order, the folders in order: the paths come out sorted.
                names.sort_unstable();
                next.extend(names.into_iter().map(|name| PlanFile {
                    rel: join(&dir.rel, &name),
                    path: dir.path.join(&name),
                    meta: None,
                }));
            }
            level = next;
        }
        return Ok(level);
    }
    let matcher = GlobBuilder::new(plan_glob)
        .literal_separator(true)
        .build()
        .map_err(|e| PlanError::BadGlob {
            glob: plan_glob.into(),
            reason: e.kind().to_string(),
        })?
        .compile_matcher();
    let fixed: Vec<&str> = segments
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[', '{']))
        .copied()
        .collect();
    let base = root.join(fixed.join("/"));
    let depth = if plan_glob.contains("**") {
        16
    } else {
        segments.len() - fixed.len()
    };
    if !base.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&base)
        .min_depth(1)
        .max_depth(depth)
        .sort_by_file_name()
    {
        let entry = entry.map_err(|e| {
            let path = e
                .path()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| base.clone());
            io_error(&path, e.into())
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if matcher.is_match(&rel) {
                out.push(PlanFile {
                    path: entry.path().to_path_buf(),
                    rel,
                    meta: None,
                });
            }
        }
    }
    Ok(out)
}

/// Why `stream` cannot be claimed when no plan declares it: the declared streams, then each
/// plan that could not be read, each after `sep`.
pub fn undeclared(stream: &str, streams: &[Stream], broken: &[PlanError], sep: &str) -> String {
    let names: Vec<&str> = streams.iter().map(|s| s.name.as_str()).collect();
    let mut msg = format!(
        "no plan declares stream '{stream}'; streams: {}",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    );
    for e in broken {
        msg.push_str(&format!("{sep}broken plan: {e}"));
    }
    msg
}

/// Every plan under `root` matching `plan_glob` (repo-relative, e.g. `plans/*-ms-*-*/plan.md`),
/// sorted by milestone then name. Any malformed plan is an error.
pub fn load(root: &Path, plan_glob: &str) -> Result<Vec<Stream>, PlanError> {
    let (streams, mut errors) = load_each(root, plan_glob)?;
    match errors.is_empty() {
        true => Ok(streams),
        false => Err(errors.remove(0)),
    }
}

/// Like [`load`], but one broken plan does not hide the others: the streams that parse, and one
/// error per plan that does not (a stream declared twice is an error and neither copy counts).
/// Only a bad `plan_glob` or an unreadable plans folder fails the whole.
pub fn load_each(root: &Path, plan_glob: &str) -> Result<(Vec<Stream>, Vec<PlanError>), PlanError> {
    let mut all = Collected::default();
    for PlanFile { path, rel, .. } in plan_files(root, plan_glob)? {
        let folder = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let stream = crate::atomic::read_regular(&path, crate::atomic::MAX_READ)
            .map_err(|e| io_error(&path, e))
            .and_then(|text| parse_plan(&text, &rel, &folder));
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                all.error(e);
                continue;
            }
        };
        all.add(stream);
    }
    Ok(all.finish())
}

/// The streams of a plans folder as its plans are read one by one: a stream declared twice is
/// an error, and neither copy counts.
#[derive(Default)]
pub(crate) struct Collected {
    streams: Vec<Stream>,
    /// Each stream's place in `streams`, by name.
    by_name: std::collections::HashMap<String, usize>,
    errors: Vec<PlanError>,
    twice: Vec<String>,
}

impl Collected {
    pub(crate) fn add(&mut self, stream: Stream) {
        if let Some(first) = self.by_name.get(&stream.name).map(|&i| &self.streams[i]) {
            self.errors.push(PlanError::Duplicate {
                stream: stream.name.clone(),
                first: first.plan.clone(),
                second: stream.plan.clone(),
            });
            self.twice.push(stream.name);
            return;
        }
        self.by_name.insert(stream.name.clone(), self.streams.len());
        self.streams.push(stream);
    }

    pub(crate) fn error(&mut self, e: PlanError) {
        self.errors.push(e);
    }

    /// The streams in milestone order, and the errors.
    pub(crate) fn finish(mut self) -> (Vec<Stream>, Vec<PlanError>) {
        let twice = std::mem::take(&mut self.twice);
        self.streams.retain(|s| !twice.contains(&s.name));
        self.streams
            .sort_by(|a, b| (a.milestone, &a.name).cmp(&(b.milestone, &b.name)));
        (self.streams, self.errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "---\ntitle: API work\nowns:\n  - src/api/**\n  - \"!src/api/legacy.ts\"  \n  - 'docs/api.md' # ours\n---\n# Plan\n";

    #[test]
    fn reads_owns_and_names_stream_from_folder() {
        let s = parse_plan(OK, "plans/2026-ms-03-api/plan.md", "2026-ms-03-api").unwrap();
        assert_eq!(s.name, "api");
        assert_eq!(s.milestone, 3);
        assert_eq!(
            s.owns,
            vec!["src/api/**", "!src/api/legacy.ts", "docs/api.md"]
        );
    }

    #[test]
    fn stream_key_and_inline_list() {
        let text = "---\nstream: backend\nowns: [electron/**, \"!electron/store.ts\"]\n---\n";
        let s = parse_plan(text, "p", "x-ms-01-be").unwrap();
        assert_eq!(s.name, "backend");
        assert_eq!(s.owns, vec!["electron/**", "!electron/store.ts"]);
    }

    #[test]
    fn malformed_plans_name_file_and_line() {
        let cases = [
            ("no frontmatter\n", 1, "no frontmatter"),
            ("---\nowns:\n  - a/**\n", 1, "not closed"),
            ("---\ntitle: x\n---\n", 1, "no 'owns:'"),
            ("---\nowns:\n---\n", 2, "owns is empty"),
            ("---\nowns: src/**\n---\n", 2, "must be a list"),
            (
                "---\nowns:\n  - a/**\n  b/**\n---\n",
                4,
                "expected '- <pattern>'",
            ),
            ("---\nowns:\n  - src/[x\n---\n", 2, "src/[x"),
            ("---\nstream: bad name\nowns: [a]\n---\n", 2, "not valid"),
            (
                "---\njunk line\nowns: [a]\n---\n",
                2,
                "expected 'key: value'",
            ),
        ];
        for (text, line, frag) in cases {
            let err = parse_plan(text, "plans/x-ms-01-a/plan.md", "x-ms-01-a").unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("plans/x-ms-01-a/plan.md:{line}:")),
                "{msg}"
            );
            assert!(msg.contains(frag), "{msg} lacks {frag}");
        }
        assert!(parse_plan(OK, "p", "no-milestone-here").is_err());
    }

    #[test]
    fn build_is_reserved_because_build_lock_is_the_build_serializer() {
        assert!(valid_stream_name("api") && valid_stream_name("builder"));
        for name in ["build", "Build", "BUILD"] {
            assert!(!valid_stream_name(name), "{name}");
        }
        let err = parse_plan("---\nowns: [tools/**]\n---\n", "p", "r-ms-01-build").unwrap_err();
        assert!(err.to_string().contains("'build' is reserved"), "{err}");
    }

    #[test]
    fn wildcards_stay_in_their_segment() {
        let m = segment_matches;
        assert!(m("*-ms-*-*", "r1-ms-01-api"));
        assert!(m("*-ms-*-*", "a-ms--b-c"));
        assert!(!m("*-ms-*-*", "notes"));
        assert!(m("plan.md", "plan.md"));
        assert!(!m("plan.md", "plan.mdx"));
        assert!(m("p?an*", "plan.md"));
        assert!(m("*", ""));
        assert!(!m("a*b", "acb-c"));
        assert!(m("a*b*", "aXbYb"));
    }

    #[test]
    fn segment_wildcards_answer_as_globset_does() {
        // Every pattern of up to 4 of `a`, `é`, `*`, `?` against every name of up to 4 of `a`,
        // `b`, `é` (globset matches bytes: `?` is half an `é`).
        fn words(alphabet: &[char], max: usize) -> Vec<String> {
            let mut all = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                    .collect();
                all.extend(last.iter().cloned());
            }
            all
        }
        let names = words(&['a', 'b', 'é'], 4);
        for pattern in words(&['a', 'é', '*', '?'], 4) {
            let glob = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .unwrap()
                .compile_matcher();
            for name in &names {
                assert_eq!(
                    segment_matches(&pattern, name),
                    glob.is_match(name),
                    "{pattern:?} vs {name:?}"
                );
            }
        }
    }

    #[test]
    fn plan_paths_sort_as_paths_do() {
        let rels = [
            "plans/a-ms-01-x/plan.md",
            "plans/a-ms-01-x-y/plan.md",
            "plans/a-ms-01-x.y/plan.md",
            "plans/a-ms-01-x/plan.mdx",
            "plans/a-ms-01-x",
            "plans/a-ms-1-x/plan.md",
            "plans/A-ms-01-x/plan.md",
            "plans/é-ms-01-x/plan.md",
            "plans-old/a-ms-01-x/plan.md",
            "plans",
        ];
        for a in rels {
            for b in rels {
                assert_eq!(
                    path_order(a, b),
                    Path::new(a).cmp(Path::new(b)),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn plan_files_come_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for folder in [
            "r-ms-01-x-y",
            "r-ms-01-x",
            "r-ms-01-x.y",
            "R-ms-02-a",
            "r-ms-1-b",
        ] {
            let d = dir.path().join("plans").join(folder);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("plan.md"), "").unwrap();
        }
        let files = plan_files(dir.path(), "plans/*-ms-*-*/plan.md").unwrap();
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        let mut sorted = rels.clone();
        sorted.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        assert_eq!(rels, sorted);
        assert_eq!(rels.len(), 5);
        assert!(
            files
                .iter()
                .all(|f| f.meta.as_ref().is_some_and(|m| m.is_file()))
        );
    }

    #[test]
    fn one_broken_plan_leaves_the_others_loadable() {
        let dir = tempfile::tempdir().unwrap();
        for (folder, text) in [
            ("r-ms-01-api", "---\nowns: [src/api/**]\n---\n"),
            ("r-ms-01-ui", "---\nowns: src/ui\n---\n"),
            ("r-ms-02-docs", "---\nowns: [docs/**]\n---\n"),
        ] {
            let d = dir.path().join("plans").join(folder);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("plan.md"), text).unwrap();
        }
        let (ok, bad) = load_each(dir.path(), "plans/*-ms-*-*/plan.md").unwrap();
        let names: Vec<&str> = ok.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["api", "docs"]);
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0]
                .to_string()
                .starts_with("plans/r-ms-01-ui/plan.md:2:"),
            "{}",
            bad[0]
        );
        assert!(load(dir.path(), "plans/*-ms-*-*/plan.md").is_err());
    }

    #[test]
    fn complex_globs_fall_back_to_globset() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("work/plans/x-ms-03-api");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("plan.md"), "---\nowns: [src/**]\n---\n").unwrap();
        let s = load(dir.path(), "work/**/*-ms-*-*/plan.{md,markdown}").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].plan, "work/plans/x-ms-03-api/plan.md");
        assert!(load(dir.path(), "work/[x/plan.md").is_err());
    }

    #[test]
    fn folder_names() {
        assert_eq!(parse_folder("2026-ms-03-api"), Some((3, "api".into())));
        assert_eq!(
            parse_folder("round2-ms-12-ui-polish"),
            Some((12, "ui-polish".into()))
        );
        assert_eq!(parse_folder("x-ms-ab-c"), None);
        assert_eq!(parse_folder("x-ms-01-"), None);
    }

    #[test]
    fn load_walks_the_glob_and_sorts() {
        let dir = tempfile::tempdir().unwrap();
        for (folder, owns) in [("r-ms-02-ui", "src/ui/**"), ("r-ms-01-api", "src/api/**")] {
            let d = dir.path().join("plans").join(folder);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("plan.md"), format!("---\nowns:\n  - {owns}\n---\n")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("plans/notes")).unwrap();
        std::fs::write(dir.path().join("plans/notes/plan.md"), "not a plan").unwrap();
        let s = load(dir.path(), "plans/*-ms-*-*/plan.md").unwrap();
        let names: Vec<_> = s.iter().map(|s| (s.milestone, s.name.as_str())).collect();
        assert_eq!(names, vec![(1, "api"), (2, "ui")]);
        assert_eq!(s[0].plan, "plans/r-ms-01-api/plan.md");
        assert!(
            load(&dir.path().join("nope"), "plans/*-ms-*-*/plan.md")
                .unwrap()
                .is_empty()
        );
    }
}
