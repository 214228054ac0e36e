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

/// A source file's module path: `src/a/b.rs` and `src/a/b/mod.rs` are `["a", "b"]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The absolute module paths (as far as two words) a file's code names: `crate::a::b`,
/// `super::b` and `self::b` resolved from `module`, grouped `{…}` items included. Comment lines
/// are left out; code after an inline `mod tests {` is read one module deeper.
fn named_paths(text: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let mut here: Vec<String> = module.to_vec();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if code.starts_with("mod tests {") {
            here.push("tests".into());
        }
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < code.len() {
            let at = &code[i..];
            let boundary =
                i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            let (mut base, mut rest) = if boundary && at.starts_with("crate::") {
                (Vec::new(), &at["crate::".len()..])
            } else if boundary && (at.starts_with("super::") || at.starts_with("self::")) {
                let mut base = here.clone();
                let mut rest = at;
                loop {
                    if let Some(r) = rest.strip_prefix("super::") {
                        base.pop();
                        rest = r;
                    } else if let Some(r) = rest.strip_prefix("self::") {
                        rest = r;
                    } else {
                        break;
                    }
                }
                (base, rest)
            } else {
                i += at.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            let consumed = at.len() - rest.len();
            // The words that follow, as far as two.
            let mut words = Vec::new();
            while words.len() < 2 {
                let w: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if w.is_empty() {
                    break;
                }
                rest = &rest[w.len()..];
                words.push(w);
                match rest.strip_prefix("::") {
                    Some(r) if !r.starts_with('{') => rest = r,
                    _ => break,
                }
            }
            if words.is_empty() {
                if let Some(group) = rest.strip_prefix('{') {
                    for item in named_modules(&format!("crate::{{{group}")) {
                        let mut p = base.clone();
                        p.push(item);
                        out.insert(p);
                    }
                }
            } else {
                base.extend(words);
                out.insert(base);
            }
            i += consumed.max(1);
        }
    }
    out
}

/// For each folder of `src/`, the pairs of its modules (files and subfolders) that import each
/// other, `folder: a ↔ b`.
fn circles_inside_folders() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Module path → the absolute paths its files name.
    let mut names: Vec<(Vec<String>, BTreeSet<Vec<String>>)> = Vec::new();
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.expect("walk src/");
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).expect("under src/");
        if rel.starts_with("bin") {
            continue;
        }
        let module = module_of(rel);
        let text = std::fs::read_to_string(path).expect("read a source file");
        names.push((module.clone(), named_paths(&text, &module)));
    }
    // Folder → child → the folder's other children it (or anything under it) names.
    let mut arrows: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, paths) in &names {
        for depth in 1..module.len() {
            let (folder, child) = (&module[..depth], &module[depth]);
            let set = arrows
                .entry(folder.to_vec())
                .or_default()
                .entry(child.clone())
                .or_default();
            for p in paths {
                if p.len() > depth && p[..depth] == *folder && p[depth] != *child {
                    set.insert(p[depth].clone());
                }
            }
        }
    }
    let mut found = Vec::new();
    for (folder, children) in &arrows {
        for (a, to) in children {
            for b in to {
                if a < b && children.get(b).is_some_and(|back| back.contains(a)) {
                    found.push(format!("{}: {a} ↔ {b}", folder.join("::")));
                }
            }
        }
    }
    found
}

/// Circles inside a folder that are still to be taken apart; each must still be there (remove
/// it from this list when it goes).
const KNOWN_CIRCLES: [&str; 1] = ["shell: heredoc ↔ lexer"];

#[test]
fn issue_25_no_two_modules_of_one_folder_import_each_other() {
    let found = circles_inside_folders();
    let new: Vec<&String> = found
        .iter()
        .filter(|c| !KNOWN_CIRCLES.contains(&c.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "modules of one folder importing each other: {new:?}"
    );
    for known in KNOWN_CIRCLES {
        assert!(
            found.iter().any(|c| c == known),
            "{known} is gone: take it off KNOWN_CIRCLES"
        );
    }
}

#[test]
fn the_folder_reader_resolves_super_self_and_groups() {
    let module: Vec<String> = ["messaging", "send"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let paths = named_paths(
        "use super::{ledger::Op, socket};\n// super::hook in a comment\nlet x = self::y::z();\nuse crate::tools::report::Row;\nuse super::super::time;\nmod tests {\n    use super::wake;\n}",
        &module,
    );
    let want: BTreeSet<Vec<String>> = [
        vec!["messaging", "ledger"],
        vec!["messaging", "socket"],
        vec!["messaging", "send", "y", "z"],
        vec!["tools", "report"],
        vec!["time"],
        vec!["messaging", "send", "wake"],
    ]
    .iter()
    .map(|p| p.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(paths, want);
}
