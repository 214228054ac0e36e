//! `owns` patterns → one matcher. `*` stays inside a path segment, `**` crosses segments, a
//! leading `!` excludes, and an exclusion wins whatever the order (`electron/**` +
//! `!electron/store.ts` owns all of electron but store.ts). A pattern ending in `/` owns the
//! whole folder.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// A pattern that does not compile, with the pattern itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError {
    pub pattern: String,
    pub reason: String,
}

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad owns pattern '{}': {}", self.pattern, self.reason)
    }
}

impl std::error::Error for GlobError {}

/// The compiled `owns` of one stream.
#[derive(Clone, Debug)]
pub struct Owns {
    include: Matcher,
    exclude: Matcher,
    empty: bool,
}

/// Patterns of one side (include or exclude). The common shapes, a folder (`src/api/**`) and a
/// file (`README.md`) in ASCII, are compared as text; the rest go through one glob set (whose
/// construction is what a guard call would otherwise pay for every stream it checks).
#[derive(Clone, Debug)]
struct Matcher {
    /// `src/api/` for `src/api/**`: the path starts with it and goes on.
    folders: Vec<String>,
    /// A literal path, matched whole.
    files: Vec<String>,
    set: Option<GlobSet>,
    ci: bool,
}

impl Matcher {
    fn is_match(&self, rel: &str) -> bool {
        let eq = |a: &str, b: &str| {
            if self.ci {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        self.folders
            .iter()
            .any(|f| rel.len() > f.len() && rel.is_char_boundary(f.len()) && eq(&rel[..f.len()], f))
            || self.files.iter().any(|f| eq(rel, f))
            || self.set.as_ref().is_some_and(|s| s.is_match(rel))
    }
}

/// A pattern as the matcher reads it: trimmed, `/` separators, no leading `./`, and a folder
/// pattern (`src/`) as its tree (`src/**`).
pub fn normalized(pattern: &str) -> String {
    let mut p = pattern.trim().replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    if p.ends_with('/') {
        p.push_str("**");
    }
    p
}

/// How a normalized pattern is matched without a glob, if it can be: `Ok(folder)` for
/// `<literal>/**`, `Err(file)` for a literal path. ASCII only (case folding beyond ASCII is the
/// glob engine's), and no character the glob syntax gives a meaning.
fn simple(p: &str) -> Option<Result<String, String>> {
    let plain = |t: &str| {
        !t.is_empty()
            && t.is_ascii()
            && !t.contains(['*', '?', '[', ']', '{', '}', '\\'])
            && !t
                .split('/')
                .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    };
    match p.strip_suffix("/**") {
        Some(folder) if plain(folder) => Some(Ok(format!("{folder}/"))),
        Some(_) => None,
        None if plain(p) => Some(Err(p.to_string())),
        None => None,
    }
}

fn compile(pattern: &str, ci: bool) -> Result<Glob, GlobError> {
    let p = normalized(pattern);
    GlobBuilder::new(&p)
        .literal_separator(true)
        .case_insensitive(ci)
        .backslash_escape(false)
        .build()
        .map_err(|e| GlobError {
            pattern: pattern.to_string(),
            reason: e.kind().to_string(),
        })
}

/// The fixed text a pattern starts with, up to its first wildcard (`src/api/` for
/// `src/api/**/*.ts`), as the matcher sees it.
pub fn literal_prefix(pattern: &str) -> String {
    let mut p = pattern.trim().replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    let end = p.find(['*', '?', '[', '{']).unwrap_or(p.len());
    p[..end].to_string()
}

/// The literal prefixes of the include patterns (exclusions left out): what
/// [`prefix_may_match`] compares, computed once when a lock is indexed.
pub fn include_prefixes<S: AsRef<str>>(patterns: &[S]) -> Vec<String> {
    patterns
        .iter()
        .map(|p| p.as_ref().trim())
        .filter(|p| !p.starts_with('!'))
        .map(literal_prefix)
        .collect()
}

/// Could a pattern with literal prefix `prefix` match `rel`? (A folder pattern `src/api/`
/// also matches the folder `src/api` itself.)
pub fn prefix_may_match(prefix: &str, rel: &str, case_insensitive: bool) -> bool {
    match rel.get(..prefix.len()) {
        Some(head) if case_insensitive => head.eq_ignore_ascii_case(prefix) || !prefix.is_ascii(),
        Some(head) => head == prefix,
        None => rel.len() + 1 == prefix.len() && prefix.ends_with('/') && prefix.starts_with(rel),
    }
}

/// True when no include pattern of `patterns` can match `rel`, decided on literal prefixes
/// alone: lets the guard skip compiling the patterns of streams that cannot own the path.
pub fn cannot_match<S: AsRef<str>>(patterns: &[S], rel: &str, case_insensitive: bool) -> bool {
    !include_prefixes(patterns)
        .iter()
        .any(|prefix| prefix_may_match(prefix, rel, case_insensitive))
}

/// True when `rel` is matched by an include pattern of `patterns` that starts with a fixed
/// folder or name (`.claude/**`, `session-lock/config.json`), not by a catch-all (`**`, `*/**`).
/// Exclusions still count.
pub fn names_explicitly<S: AsRef<str>>(patterns: &[S], rel: &str, ci: bool) -> bool {
    let kept: Vec<&str> = patterns
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| p.trim().starts_with('!') || !literal_prefix(p).is_empty())
        .collect();
    kept.iter().any(|p| !p.trim().starts_with('!'))
        && Owns::new(&kept, ci).is_ok_and(|o| o.is_match(rel))
}

/// A pattern set prepared for overlap checks against many others: each include pattern's
/// shape is worked out once, and the matcher is compiled only when a literal pattern of another
/// set has to be tested against it.
pub struct OverlapSet<'a> {
    all: &'a [String],
    /// Include patterns: (as written, literal?, literal prefix — lowercased when `ci`).
    includes: Vec<(&'a str, bool, String)>,
    matcher: std::cell::OnceCell<Option<Owns>>,
    ci: bool,
}

impl<'a> OverlapSet<'a> {
    pub fn new(all: &'a [String], ci: bool) -> OverlapSet<'a> {
        let includes = all
            .iter()
            .map(String::as_str)
            .filter(|p| !p.starts_with('!'))
            .map(|p| {
                let literal = !p.contains(['*', '?', '[', '{']) && !p.ends_with('/');
                let prefix = literal_prefix(p);
                let prefix = if ci { prefix.to_lowercase() } else { prefix };
                (p, literal, prefix)
            })
            .collect();
        OverlapSet {
            all,
            includes,
            matcher: std::cell::OnceCell::new(),
            ci,
        }
    }

    fn matches(&self, path: &str) -> bool {
        self.matcher
            .get_or_init(|| Owns::new(self.all, self.ci).ok())
            .as_ref()
            .is_some_and(|o| o.is_match(path.trim_start_matches("./")))
    }

    /// The first pair of include patterns (this set's, `other`'s) that might match one path. A
    /// literal pattern is tested exactly against the other set (exclusions count); otherwise the
    /// fixed prefixes are compared: one inside the other may overlap.
    pub fn first_overlap(&self, other: &OverlapSet<'a>) -> Option<(&'a str, &'a str)> {
        for (a, a_literal, pa) in &self.includes {
            for (b, b_literal, pb) in &other.includes {
                let hit = if *b_literal {
                    self.matches(b)
                } else if *a_literal {
                    other.matches(a)
                } else {
                    pa.starts_with(pb.as_str()) || pb.starts_with(pa.as_str())
                };
                if hit {
                    return Some((a, b));
                }
            }
        }
        None
    }
}

/// The pairs of sets (`i < j`, in order) that might own one path, each with its first
/// overlapping pair of patterns as [`OverlapSet::first_overlap`] gives it. Sets are compared
/// pairwise only where they could overlap: a set with a literal pattern against every other,
/// and sets whose wildcard patterns' prefixes nest (found in one sorted pass).
pub fn overlapping<'a>(sets: &[OverlapSet<'a>]) -> Vec<(usize, usize, &'a str, &'a str)> {
    let mut candidates = std::collections::BTreeSet::new();
    for (i, set) in sets.iter().enumerate() {
        if set.includes.iter().any(|(_, literal, _)| *literal) {
            for j in (0..sets.len()).filter(|&j| j != i) {
                candidates.insert((i.min(j), i.max(j)));
            }
        }
    }
    let mut prefixes: Vec<(&str, usize)> = sets
        .iter()
        .enumerate()
        .flat_map(|(i, set)| {
            set.includes
                .iter()
                .filter(|(_, literal, _)| !literal)
                .map(move |(_, _, prefix)| (prefix.as_str(), i))
        })
        .collect();
    prefixes.sort_unstable();
    // Sorted, the prefixes that start with one follow it in one block.
    for (k, &(p, i)) in prefixes.iter().enumerate() {
        for &(_, j) in prefixes[k + 1..]
            .iter()
            .take_while(|(q, _)| q.starts_with(p))
        {
            if i != j {
                candidates.insert((i.min(j), i.max(j)));
            }
        }
    }
    candidates
        .into_iter()
        .filter_map(|(i, j)| sets[i].first_overlap(&sets[j]).map(|(a, b)| (i, j, a, b)))
        .collect()
}

/// Checks one pattern's syntax without building a matcher (cheap: no regex is compiled).
pub fn check_pattern(pattern: &str) -> Result<(), GlobError> {
    let raw = pattern.trim();
    if raw.is_empty() || raw == "!" {
        return Err(GlobError {
            pattern: pattern.to_string(),
            reason: "empty pattern".into(),
        });
    }
    compile(raw.strip_prefix('!').unwrap_or(raw), false).map(|_| ())
}

impl Owns {
    /// Compiles patterns; `case_insensitive` for filesystems that ignore case.
    pub fn new<S: AsRef<str>>(patterns: &[S], case_insensitive: bool) -> Result<Owns, GlobError> {
        let side = || Matcher {
            folders: Vec::new(),
            files: Vec::new(),
            set: None,
            ci: case_insensitive,
        };
        let (mut include, mut exclude) = (side(), side());
        let mut inc = GlobSetBuilder::new();
        let mut exc = GlobSetBuilder::new();
        let (mut n_inc, mut globs_inc, mut globs_exc) = (0, 0, 0);
        for raw in patterns {
            let raw = raw.as_ref();
            if raw.trim().is_empty() {
                return Err(GlobError {
                    pattern: raw.to_string(),
                    reason: "empty pattern".into(),
                });
            }
            let (pattern, side, builder, globs) = match raw.trim().strip_prefix('!') {
                Some(neg) => (neg, &mut exclude, &mut exc, &mut globs_exc),
                None => {
                    n_inc += 1;
                    (raw, &mut include, &mut inc, &mut globs_inc)
                }
            };
            match simple(&normalized(pattern)) {
                Some(Ok(folder)) => side.folders.push(folder),
                Some(Err(file)) => side.files.push(file),
                None => {
                    builder.add(compile(pattern, case_insensitive)?);
                    *globs += 1;
                }
            }
        }
        let build = |b: GlobSetBuilder, n: usize| {
            if n == 0 {
                return Ok(None);
            }
            b.build().map(Some).map_err(|e| GlobError {
                pattern: patterns
                    .iter()
                    .map(|p| p.as_ref())
                    .collect::<Vec<_>>()
                    .join(", "),
                reason: e.to_string(),
            })
        };
        include.set = build(inc, globs_inc)?;
        exclude.set = build(exc, globs_exc)?;
        Ok(Owns {
            include,
            exclude,
            empty: n_inc == 0,
        })
    }

    /// True when the repo-relative POSIX path is owned.
    pub fn is_match(&self, rel: &str) -> bool {
        !self.empty && self.include.is_match(rel) && !self.exclude.is_match(rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owns(p: &[&str]) -> Owns {
        Owns::new(p, false).unwrap()
    }

    #[test]
    fn the_sorted_pass_finds_what_comparing_every_pair_finds() {
        let owns: Vec<Vec<String>> = [
            vec!["src/api/**", "!src/api/gen/**"],
            vec!["src/api/gen/**"],
            vec!["src/ui/**"],
            vec!["**/*.md"],
            vec!["docs/guide.md"],
            vec!["src/ui/button.ts", "tools/**"],
            vec!["tools/bin/**"],
            vec!["Src/UI/**"],
            vec!["lib/"],
            vec!["lib/x/*.rs"],
        ]
        .iter()
        .map(|v| v.iter().map(|s| s.to_string()).collect())
        .collect();
        for ci in [false, true] {
            let sets: Vec<OverlapSet> = owns.iter().map(|o| OverlapSet::new(o, ci)).collect();
            let mut every = Vec::new();
            for i in 0..sets.len() {
                for j in i + 1..sets.len() {
                    if let Some((a, b)) = sets[i].first_overlap(&sets[j]) {
                        every.push((i, j, a, b));
                    }
                }
            }
            assert!(every.len() > 5, "the table has overlaps: {every:?}");
            assert_eq!(overlapping(&sets), every, "case-insensitive: {ci}");
        }
    }

    #[test]
    fn folders_and_files_matched_as_text_agree_with_the_glob_engine() {
        let patterns = [
            "src/api/**",
            "./src/api/",
            "src\\api\\**",
            "README.md",
            "docs/guide.md",
            "src/**",
            "a.b/c-d_e/**",
            "Src/Api/**",
        ];
        let paths = [
            "src/api/x.ts",
            "src/api/deep/y.ts",
            "src/api",
            "src/apix/y.ts",
            "src/ap",
            "README.md",
            "readme.md",
            "README.md/x",
            "docs/guide.md",
            "docs/guide.mdx",
            "src/x",
            "a.b/c-d_e/f",
            "SRC/API/X.TS",
            "src/api/é.ts",
        ];
        for ci in [false, true] {
            for p in patterns {
                assert!(simple(&normalized(p)).is_some(), "{p} takes the text path");
                let glob = GlobSetBuilder::new()
                    .add(compile(p, ci).unwrap())
                    .build()
                    .unwrap();
                let text = Owns::new(&[p], ci).unwrap();
                for rel in paths {
                    assert_eq!(
                        text.is_match(rel),
                        glob.is_match(rel),
                        "{p} vs {rel} (case-insensitive: {ci})"
                    );
                }
            }
        }
        for p in [
            "src/*.ts",
            "src/**/x",
            "src/[ab]/**",
            "src/{a,b}/**",
            "é/**",
            "src/../x/**",
        ] {
            assert!(simple(&normalized(p)).is_none(), "{p} is a glob");
        }
    }

    #[test]
    fn star_stays_in_segment_and_globstar_crosses() {
        let o = owns(&["src/*.ts", "docs/**"]);
        assert!(o.is_match("src/a.ts"));
        assert!(!o.is_match("src/api/a.ts"));
        assert!(o.is_match("docs/a/b/c.md"));
        assert!(o.is_match("docs/x"));
        assert!(!o.is_match("docsx/a"));
    }

    #[test]
    fn exclusion_wins_in_any_order() {
        for pats in [
            ["electron/**", "!electron/store.ts"],
            ["!electron/store.ts", "electron/**"],
        ] {
            let o = owns(&pats);
            assert!(o.is_match("electron/main.ts"));
            assert!(!o.is_match("electron/store.ts"));
        }
        let o = owns(&["src/**", "!src/gen/**"]);
        assert!(!o.is_match("src/gen/deep/x.ts"));
        assert!(o.is_match("src/genx.ts"));
    }

    #[test]
    fn folder_patterns_and_case() {
        let o = owns(&["src/api/"]);
        assert!(o.is_match("src/api/x.ts") && o.is_match("src/api/d/y.ts"));
        assert!(!o.is_match("src/apix/y.ts"));
        let ci = Owns::new(&["Src/API/**"], true).unwrap();
        assert!(ci.is_match("src/api/x.ts"));
        assert!(!owns(&["Src/API/**"]).is_match("src/api/x.ts"));
    }

    #[test]
    fn literal_prefixes_only_rule_out_what_cannot_match() {
        assert!(cannot_match(&["src/api/**"], "src/ui/x.ts", false));
        assert!(!cannot_match(&["src/api/**"], "src/api/x.ts", false));
        assert!(!cannot_match(&["**/*.ts"], "anything", false));
        assert!(!cannot_match(&["src/*.ts", "docs/"], "docs/a", false));
        assert!(cannot_match(&["Src/API/**"], "src/api/x", false));
        assert!(!cannot_match(&["Src/API/**"], "src/api/x", true));
        assert!(
            cannot_match(&["!src/**"], "src/x", false),
            "exclusions own nothing"
        );
        assert!(!cannot_match(&["./src\\api/**"], "src/api/x", false));
        for (pats, rel) in [
            (vec!["src/api/**"], "src/api"),
            (vec!["a/b/c"], "a/b/c"),
            (vec!["x/*/y"], "x/q/y"),
        ] {
            let o = Owns::new(&pats, false).unwrap();
            if o.is_match(rel) {
                assert!(!cannot_match(&pats, rel, false), "{pats:?} {rel}");
            }
        }
    }

    #[test]
    fn pattern_syntax_is_checked_without_a_matcher() {
        assert!(check_pattern("src/**").is_ok());
        assert!(check_pattern("!src/x.ts").is_ok());
        assert_eq!(check_pattern("src/[x").unwrap_err().pattern, "src/[x");
        assert!(check_pattern("  ").is_err());
    }

    #[test]
    fn only_exclusions_own_nothing_and_bad_patterns_name_themselves() {
        assert!(!owns(&["!a/**"]).is_match("b/c"));
        assert!(!owns(&[] as &[&str]).is_match("a"));
        let err = Owns::new(&["src/[x"], false).unwrap_err();
        assert_eq!(err.pattern, "src/[x");
        assert!(err.to_string().contains("src/[x"));
    }
}
