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
    include: GlobSet,
    exclude: GlobSet,
    empty: bool,
}

fn compile(pattern: &str, ci: bool) -> Result<Glob, GlobError> {
    let mut p = pattern.trim().replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    if p.ends_with('/') {
        p.push_str("**");
    }
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
fn literal_prefix(pattern: &str) -> String {
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

/// Might include pattern `a` (of the set `a_all`) and `b` (of `b_all`) match one path? A
/// literal pattern is tested exactly against the other set (exclusions count); otherwise the
/// fixed prefixes are compared: one inside the other may overlap.
pub fn may_overlap(a_all: &[String], a: &str, b_all: &[String], b: &str, ci: bool) -> bool {
    let literal = |p: &str| !p.contains(['*', '?', '[', '{']) && !p.ends_with('/');
    if literal(b) {
        return Owns::new(a_all, ci).is_ok_and(|o| o.is_match(b.trim_start_matches("./")));
    }
    if literal(a) {
        return Owns::new(b_all, ci).is_ok_and(|o| o.is_match(a.trim_start_matches("./")));
    }
    let (pa, pb) = (literal_prefix(a), literal_prefix(b));
    let (pa, pb) = if ci {
        (pa.to_lowercase(), pb.to_lowercase())
    } else {
        (pa, pb)
    };
    pa.starts_with(&pb) || pb.starts_with(&pa)
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
        let mut inc = GlobSetBuilder::new();
        let mut exc = GlobSetBuilder::new();
        let mut n_inc = 0;
        for raw in patterns {
            let raw = raw.as_ref();
            if raw.trim().is_empty() {
                return Err(GlobError {
                    pattern: raw.to_string(),
                    reason: "empty pattern".into(),
                });
            }
            match raw.trim().strip_prefix('!') {
                Some(neg) => {
                    exc.add(compile(neg, case_insensitive)?);
                }
                None => {
                    inc.add(compile(raw, case_insensitive)?);
                    n_inc += 1;
                }
            }
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| GlobError {
                pattern: patterns
                    .iter()
                    .map(|p| p.as_ref())
                    .collect::<Vec<_>>()
                    .join(", "),
                reason: e.to_string(),
            })
        };
        Ok(Owns {
            include: build(inc)?,
            exclude: build(exc)?,
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
