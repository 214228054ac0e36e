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
