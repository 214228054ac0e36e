//! The files a write tool's input names, found by one walk over its nested values.
//!
//! An MCP writer names its files in many shapes: a top-level `path`, `{args: {path}}`,
//! `files: [{path}]`, `edits: [{file_path}]`, keys in any case or separator style (`Path`,
//! `FILE_PATH`, `targetFile`, `target_file`), a `file://` URI, a move's source *and*
//! destination, or patch text (`*** Update File: x`, `+++ b/x`) under a `patch` or `diff` key.
//! The walk takes every string under a path key (`mcpPathKeys`, compared with case, `_` and
//! `-` ignored) at any depth, every path a patch names, and nothing else.
//!
//! It is bounded: at most [`MAX_DEPTH`] levels and [`MAX_NODES`] values. An input deeper or
//! larger than that is an error the guard refuses: a writer's input the model shapes is never
//! let through half read.

use serde_json::Value;

/// The deepest nesting walked.
pub const MAX_DEPTH: usize = 32;
/// The most values walked in one input.
pub const MAX_NODES: usize = 20_000;

/// Why an input could not be read to its end.
#[derive(Debug, PartialEq, Eq)]
pub enum Cut {
    Deep,
    Large,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Deep => write!(f, "is nested deeper than {MAX_DEPTH} levels"),
            Cut::Large => write!(f, "holds more than {MAX_NODES} values"),
        }
    }
}

/// A key as compared: lower case, without `_`, `-` and blanks (`FILE_PATH` = `filePath`).
fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Keys whose string is patch text naming the files it writes.
const PATCH_KEYS: &[&str] = &["patch", "diff", "patchtext", "unifieddiff"];

struct Walk {
    keys: Vec<String>,
    nodes: usize,
    out: Vec<String>,
}

/// Every path `input` names under one of `keys`, in the order met; a patch's files too.
pub fn paths(input: &Value, keys: &[String]) -> Result<Vec<String>, Cut> {
    let mut walk = Walk {
        keys: keys.iter().map(|k| norm(k)).collect(),
        nodes: 0,
        out: Vec::new(),
    };
    walk.value(input, 0, None)?;
    Ok(walk.out)
}

impl Walk {
    /// One value; `under` is the normalized key it sits under, when that key names paths or a
    /// patch (a list under such a key keeps it for its items).
    fn value(&mut self, v: &Value, depth: usize, under: Option<&str>) -> Result<(), Cut> {
        if depth > MAX_DEPTH {
            return Err(Cut::Deep);
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Cut::Large);
        }
        match v {
            Value::String(s) => match under {
                Some(k) if PATCH_KEYS.contains(&k) => self.out.extend(patch_paths(s)),
                Some(_) => self.out.push(from_uri(s)),
                None => {}
            },
            Value::Array(items) => {
                for item in items {
                    self.value(item, depth + 1, under)?;
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let k = norm(k);
                    let named = PATCH_KEYS.contains(&k.as_str()) || self.keys.contains(&k);
                    self.value(item, depth + 1, named.then_some(k.as_str()))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A `file://` URI as the path it names (`file:///a%20b` → `/a b`, `file:///C:/x` → `C:/x`);
/// anything else as it is.
fn from_uri(s: &str) -> String {
    let Some(rest) = s
        .strip_prefix("file://")
        .or_else(|| s.strip_prefix("FILE://"))
    else {
        return s.to_string();
    };
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let path = percent_decode(rest);
    // `/C:/x` is a drive path.
    let b = path.as_bytes();
    if b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return path[1..].to_string();
    }
    path
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The files patch text writes: a Codex patch envelope's operations, or a unified diff's
/// `---`/`+++` names (without `a/`, `b/`, and never `/dev/null`). Text that is neither names
/// the one path it is (a key named `patch` holding a file name).
fn patch_paths(text: &str) -> Vec<String> {
    if text.trim_start().starts_with("*** Begin Patch") {
        if let Ok(p) = crate::clients::patch::parse(text) {
            return p.written_paths().into_iter().map(str::to_string).collect();
        }
        // Unreadable envelope: every file it mentions counts.
        return text
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                [
                    "*** Add File:",
                    "*** Update File:",
                    "*** Delete File:",
                    "*** Move to:",
                ]
                .iter()
                .find_map(|m| l.strip_prefix(m))
            })
            .map(|p| p.trim().to_string())
            .collect();
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(name) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        else {
            continue;
        };
        let name = name.split('\t').next().unwrap_or_default().trim();
        if name.is_empty() || name == "/dev/null" {
            continue;
        }
        let name = name
            .strip_prefix("a/")
            .or_else(|| name.strip_prefix("b/"))
            .unwrap_or(name);
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() && !text.contains('\n') && !text.trim().is_empty() {
        out.push(text.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> Vec<String> {
        crate::config::Config::default().mcp_path_keys
    }

    fn of(v: Value) -> Vec<String> {
        paths(&v, &keys()).unwrap()
    }

    #[test]
    fn nested_shapes_and_key_spellings_are_all_found() {
        assert_eq!(of(json!({"path": "a"})), ["a"]);
        assert_eq!(of(json!({"args": {"path": "a"}})), ["a"]);
        assert_eq!(
            of(json!({"files": [{"path": "a", "content": "b"}, {"path": "c"}]})),
            ["a", "c"]
        );
        assert_eq!(
            of(json!({"edits": [{"file_path": "a", "old_string": "src/x"}]})),
            ["a"]
        );
        for key in [
            "Path",
            "FILE_PATH",
            "targetFile",
            "target_file",
            "output_path",
            "uri",
        ] {
            assert_eq!(of(json!({ key: "a" })), ["a"], "{key}");
        }
        assert_eq!(
            of(json!({"source": "a", "destination": "b"})),
            ["a", "b"],
            "a move writes both"
        );
        assert_eq!(of(json!({"from": "a", "to": "b"})), ["a", "b"]);
        assert_eq!(of(json!({"paths": ["a", "b"]})), ["a", "b"]);
    }

    #[test]
    fn what_is_not_a_path_key_is_not_taken() {
        assert!(of(json!({"content": "src/x/y.ts", "old_string": "a"})).is_empty());
        assert!(of(json!({"query": "path", "limit": 3, "recursive": true})).is_empty());
        assert!(of(json!(null)).is_empty());
        assert!(of(json!("path")).is_empty());
    }

    #[test]
    fn file_uris_are_the_paths_they_name() {
        assert_eq!(
            of(json!({"uri": "file:///repo/src/a%20b.ts"})),
            ["/repo/src/a b.ts"]
        );
        assert_eq!(of(json!({"uri": "file://localhost/r/x"})), ["/r/x"]);
        assert_eq!(of(json!({"uri": "file:///C:/r/x"})), ["C:/r/x"]);
        assert_eq!(of(json!({"uri": "file:///r/100%"})), ["/r/100%"]);
        assert_eq!(of(json!({"path": "src/x"})), ["src/x"]);
    }

    #[test]
    fn patch_text_names_its_files() {
        let codex = "*** Begin Patch\n*** Update File: src/a.ts\n*** Move to: src/b.ts\n@@\n-x\n+y\n*** Add File: c\n+z\n*** End Patch\n";
        assert_eq!(of(json!({"patch": codex})), ["src/a.ts", "src/b.ts", "c"]);
        let diff =
            "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-x\n+y\n--- /dev/null\n+++ b/new.ts\n";
        assert_eq!(of(json!({"diff": diff})), ["src/a.ts", "new.ts"]);
        let broken = "*** Begin Patch\n*** Update File: src/a.ts\nnot a chunk\n";
        assert_eq!(of(json!({"patch": broken})), ["src/a.ts"]);
        assert_eq!(
            of(json!({"args": {"patch_text": diff}})),
            ["src/a.ts", "new.ts"]
        );
    }

    #[test]
    fn too_deep_or_too_large_is_an_error_not_a_pass() {
        let mut v = json!({"path": "a"});
        for _ in 0..MAX_DEPTH + 1 {
            v = json!({ "x": v });
        }
        assert_eq!(paths(&v, &keys()), Err(Cut::Deep));
        let mut ok = json!({"path": "a"});
        for _ in 0..MAX_DEPTH - 1 {
            ok = json!({ "x": ok });
        }
        assert_eq!(paths(&ok, &keys()).unwrap(), ["a"]);
        let big = Value::Array(vec![json!(1); MAX_NODES + 1]);
        assert_eq!(paths(&big, &keys()), Err(Cut::Large));
    }
}
