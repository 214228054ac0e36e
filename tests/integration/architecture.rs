//! The crate's arrows, read from its source: core modules import no feature module, and no two
//! top-level modules import each other (issue 10). A cheap check of text, not of the compiler's
//! view: it reads every `crate::<module>` path, including those inside `use crate::{…}`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Modules built on the core; the core may not name them.
const FEATURES: [&str; 5] = ["agent", "hook", "leases", "messaging", "tools"];

/// Every `crate::<name>` a source text names.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The first word of each item at depth 0 of the braces.
            let (mut depth, mut at_item) = (0usize, true);
            let mut word = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if at_item && !word.is_empty() {
                            out.insert(std::mem::take(&mut word));
                        }
                        word.clear();
                        at_item = true;
                    }
                    c if at_item && (c.is_ascii_alphanumeric() || c == '_') => word.push(c),
                    _ if at_item && !word.is_empty() => {
                        out.insert(std::mem::take(&mut word));
                        at_item = false;
                    }
                    _ => {}
                }
            }
            if !word.is_empty() {
                out.insert(word);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Top-level module → the other top-level modules its files name.
fn arrows() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.expect("walk src/");
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).expect("under src/");
        let top = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .unwrap_or_default();
        if top == "bin" || top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read a source file");
        let names = named_modules(&text);
        let set = map.entry(top.clone()).or_default();
        set.extend(names.into_iter().filter(|n| *n != top));
    }
    map
}

#[test]
fn issue_10_core_modules_import_no_feature_module() {
    let bad: Vec<String> = arrows()
        .iter()
        .filter(|(m, _)| !FEATURES.contains(&m.as_str()))
        .flat_map(|(m, to)| {
            to.iter()
                .filter(|t| FEATURES.contains(&t.as_str()))
                .map(move |t| format!("{m} → {t}"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "core modules naming feature modules: {bad:?}"
    );
}

#[test]
fn issue_10_no_two_modules_import_each_other() {
    let map = arrows();
    let mut cycles = Vec::new();
    for (a, to) in &map {
        for b in to {
            if a < b && map.get(b).is_some_and(|back| back.contains(a)) {
                cycles.push(format!("{a} ↔ {b}"));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules importing each other: {cycles:?}"
    );
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let names = named_modules(
        "use crate::{atomic, state::{Layout, Held},\n    paths};\nlet x = crate::time::now_ms();",
    );
    let want: BTreeSet<String> = ["atomic", "paths", "state", "time"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, want);
}

/// A source file's module path: `src/hook/checks/claims.rs` → `hook::checks::claims`,
/// `src/hook/mod.rs` → `hook`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// The text without its `//` comments (doc links name modules without depending on them).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a `use`-style path text starting at `rest` names, each as its segments, with `{…}`
/// groups expanded (`context::{Ctx, Env}` → `context::Ctx`, `context::Env`).
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    fn parse(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            let start = *i;
            while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == '_') {
                *i += 1;
            }
            if *i > start {
                path.push(s[start..*i].iter().collect());
            }
            if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
                *i += 2;
                if s.get(*i) == Some(&'{') {
                    *i += 1;
                    loop {
                        while s.get(*i).is_some_and(|c| c.is_whitespace()) {
                            *i += 1;
                        }
                        match s.get(*i) {
                            None => return,
                            Some('}') => {
                                *i += 1;
                                return;
                            }
                            Some(',') => *i += 1,
                            Some(_) => {
                                let before = *i;
                                parse(s, i, path.clone(), out);
                                // Skip what a path does not parse (`self`, `as x`, `*`).
                                while s.get(*i).is_some_and(|c| !matches!(c, ',' | '}')) {
                                    *i += 1;
                                }
                                if *i == before {
                                    *i += 1;
                                }
                            }
                        }
                    }
                }
                continue;
            }
            out.push(path);
            return;
        }
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut out = Vec::new();
    parse(&chars, &mut 0, Vec::new(), &mut out);
    out
}

/// Every module path a file at `module` (`is_dir_module` for a `mod.rs`) names through
/// `crate::`, `super::` and `self::` paths.
fn named_paths(module: &[String], is_dir_module: bool, text: &str) -> Vec<Vec<String>> {
    let code = code_of(text);
    let mut out = Vec::new();
    let word_start = |i: usize| {
        i == 0
            || !code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for (i, _) in code.match_indices("crate::") {
        if word_start(i) {
            out.extend(paths_at(&code[i + "crate::".len()..]));
        }
    }
    // `super::` from `a/b.rs` (module a::b) is `a`; from `a/b/mod.rs` (module a::b) it is `a`.
    for (i, _) in code.match_indices("super::") {
        if !word_start(i) {
            continue;
        }
        let mut rest = &code[i..];
        let mut base = module.to_vec();
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let _ = is_dir_module;
        for p in paths_at(rest) {
            out.push(base.iter().cloned().chain(p).collect());
        }
    }
    for (i, _) in code.match_indices("self::") {
        if word_start(i) {
            for p in paths_at(&code[i + "self::".len()..]) {
                out.push(module.iter().cloned().chain(p).collect());
            }
        }
    }
    out
}

/// Folder module → child module → the sibling children its files name (a file belongs to the
/// child of each folder above it; a folder's own `mod.rs` is the parent, not a sibling).
type Folders = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn sibling_arrows(files: &[(std::path::PathBuf, String)]) -> Folders {
    let modules: Vec<(Vec<String>, bool)> = files
        .iter()
        .map(|(rel, _)| (module_of(rel), rel.ends_with("mod.rs")))
        .collect();
    let exists = |m: &[String]| {
        modules
            .iter()
            .any(|(x, _)| x.starts_with(m) && !m.is_empty())
    };
    let mut out: Folders = BTreeMap::new();
    for ((module, dir), (_, text)) in modules.iter().zip(files) {
        let named = named_paths(module, *dir, text);
        for depth in 0..module.len() {
            let folder = &module[..depth];
            let child = &module[depth];
            let key = folder.join("::");
            let arrows = out
                .entry(key)
                .or_default()
                .entry(child.clone())
                .or_default();
            for p in &named {
                if p.len() > depth
                    && p[..depth] == *folder
                    && p[depth] != *child
                    && exists(&p[..=depth])
                {
                    arrows.insert(p[depth].clone());
                }
            }
        }
    }
    out
}

/// The circles among one folder's children: each strongly connected set of more than one.
fn circles(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Reachability by a walk from each child; small graphs, so no need for anything cleverer.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for n in arrows.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for m in arrows.keys() {
        let from_m = reach(m);
        if !from_m.contains(m) {
            continue;
        }
        let mut set: Vec<String> = from_m
            .iter()
            .filter(|n| reach(n).contains(m))
            .cloned()
            .collect();
        set.sort();
        if !out.contains(&set) {
            out.push(set);
        }
    }
    out
}

fn source_files() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.expect("walk src/");
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).expect("under src/").to_path_buf();
        if rel.starts_with("bin") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read a source file");
        files.push((rel, without_inline_tests(&text).to_string()));
    }
    files
}

/// A file's code without its inline unit tests (`#[cfg(test)]` then `mod tests {`, by custom
/// the end of the file): a module's tests may reach its neighbours to check that they agree,
/// and that makes no module of the build depend on another.
fn without_inline_tests(text: &str) -> &str {
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let next = next.trim();
                next.starts_with("mod ") && next.ends_with('{')
            })
        {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

#[test]
fn the_reader_leaves_out_inline_tests_only() {
    let text = "use crate::a;\n#[cfg(test)]\nmod b_tests;\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n";
    assert_eq!(
        without_inline_tests(text),
        "use crate::a;\n#[cfg(test)]\nmod b_tests;\nfn f() {}\n"
    );
    assert_eq!(without_inline_tests("fn g() {}\n"), "fn g() {}\n");
}

/// Circles inside a folder that are known and being taken apart. The test fails on any other
/// circle, and on an entry here that is no longer a circle (strike it).
const KNOWN_CIRCLES: &[&str] = &["shell: heredoc, lexer", "tools::guard: agents, doctor"];

/// Every circle in every folder, as `folder: a → b → …` (members sorted).
fn all_circles(files: &[(std::path::PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, arrows) in sibling_arrows(files) {
        for c in circles(&arrows) {
            let name = if folder.is_empty() { "crate" } else { &folder };
            out.push(format!("{name}: {}", c.join(", ")));
        }
    }
    out
}

#[test]
fn issue_25_no_circle_inside_a_folder() {
    let found = all_circles(&source_files());
    let new: Vec<&String> = found
        .iter()
        .filter(|c| !KNOWN_CIRCLES.contains(&c.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "modules of one folder import each other in a circle: {new:?}"
    );
    let gone: Vec<&&str> = KNOWN_CIRCLES
        .iter()
        .filter(|k| !found.iter().any(|c| c == **k))
        .collect();
    assert!(
        gone.is_empty(),
        "no longer circles, strike them from KNOWN_CIRCLES: {gone:?}"
    );
}

/// Checks importing checks, as `a → b`.
fn check_imports(files: &[(std::path::PathBuf, String)]) -> Vec<String> {
    sibling_arrows(files)
        .get("hook::checks")
        .into_iter()
        .flatten()
        .flat_map(|(a, to)| to.iter().map(move |b| format!("{a} → {b}")))
        .collect()
}

#[test]
fn issue_25_no_check_imports_another() {
    let files = source_files();
    assert!(
        files.iter().any(|(p, _)| p.starts_with("hook/checks")),
        "the checks live in src/hook/checks/"
    );
    let bad = check_imports(&files);
    assert!(bad.is_empty(), "checks importing checks: {bad:?}");
}

#[test]
fn the_folder_checkers_find_circles_and_check_imports() {
    let f = |path: &str, text: &str| (std::path::PathBuf::from(path), text.to_string());
    let files = vec![
        f("lib.rs", "pub mod a; pub mod hook;"),
        f(
            "a/mod.rs",
            "pub mod x; pub mod y; pub mod z; use self::x::X;",
        ),
        f(
            "a/x.rs",
            "use super::y::Y; // crate::a::z named in a comment only",
        ),
        f("a/y.rs", "use crate::a::{z::{Z, W}, q};"),
        f("a/z.rs", "fn f() { super::x::g(); }"),
        f("hook/mod.rs", "pub mod checks; pub mod context;"),
        f("hook/context.rs", "use super::Payload;"),
        f("hook/checks/mod.rs", "pub mod one; pub mod two;"),
        f("hook/checks/one.rs", "use crate::hook::context::Ctx;"),
        f(
            "hook/checks/two.rs",
            "use super::super::checks::one::check;",
        ),
    ];
    assert_eq!(all_circles(&files), vec!["a: x, y, z".to_string()]);
    assert_eq!(check_imports(&files), vec!["two → one".to_string()]);
    let arrows = sibling_arrows(&files);
    assert_eq!(
        arrows["hook"]["checks"],
        BTreeSet::from(["context".to_string()])
    );
    assert!(
        arrows["hook"]["context"].is_empty(),
        "the parent is no sibling"
    );
    // Taking one arrow out breaks the circle.
    let mut broken = files.clone();
    broken[4] = f("a/z.rs", "fn f() {}");
    assert!(all_circles(&broken).is_empty());
}
