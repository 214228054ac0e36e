//! Codex's patch envelope, the input of its `apply_patch` tool: which files a patch adds,
//! updates, deletes and moves, and what an updated file becomes.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: <path>            then `+line`s: the new file's text
//! *** Delete File: <path>
//! *** Update File: <path>
//! *** Move to: <path>             optional, right after Update: the file is renamed
//! @@ [context line]               then ` keep`, `-remove`, `+add` lines
//! *** End of File                 optional: the chunk above matches the file's end
//! *** End Patch
//! ```
//!
//! Paths are as written: relative ones are relative to the call's `cwd`. Markers may carry
//! surrounding blanks, as Codex reads them. A patch the reader cannot parse is an error the guard
//! refuses (an input the model shapes never lets a write through unread). [`apply`] computes an
//! updated file the way Codex matches chunks, but only exactly: where Codex would fall back to a
//! looser match, it says it cannot tell. [`in_command`] finds `apply_patch` run from a shell
//! command, its patch given as an argument or a heredoc.

use crate::shell::Analysis;

/// The most file operations read from one patch; more is an error (each must be checked).
pub const MAX_OPS: usize = 256;

/// One file operation of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A new file with this text.
    Add {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    /// The file changed by `chunks`, and renamed to `move_to` when given.
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

impl Op {
    /// The file the operation names first (a move's source).
    pub fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Delete { path } | Op::Update { path, .. } => path,
        }
    }
}

/// One `@@` section of an update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    /// The `@@ <line>` the chunk is found after, when given.
    pub context: Option<String>,
    /// The lines it replaces (` ` and `-` lines) and their replacement (` ` and `+` lines).
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File` followed: the old lines are the file's last lines.
    pub end_of_file: bool,
}

/// A parsed patch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patch {
    pub ops: Vec<Op>,
}

impl Patch {
    /// Every path the patch writes, as written, in order: each operation's file and a move's
    /// destination (a move writes both its source, which goes away, and its destination).
    pub fn written_paths(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for op in &self.ops {
            out.push(op.path());
            if let Op::Update {
                move_to: Some(to), ..
            } = op
            {
                out.push(to.as_str());
            }
        }
        out
    }
}

/// Why a patch could not be read, for the model that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The first line is not `*** Begin Patch`.
    NoBegin,
    /// The last line is not `*** End Patch`.
    NoEnd,
    /// A line that is no marker, or a marker in the wrong place (1-based line number).
    Unexpected {
        line: usize,
        text: String,
    },
    /// A marker without its path.
    NoPath {
        line: usize,
    },
    /// An `Update File` with no change and no move.
    EmptyUpdate {
        path: String,
    },
    TooMany,
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchError::NoBegin => f.write_str("its first line is not '*** Begin Patch'"),
            PatchError::NoEnd => f.write_str("its last line is not '*** End Patch'"),
            PatchError::Unexpected { line, text } => {
                let mut shown: String = text.chars().take(80).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                write!(f, "line {line} ({shown:?}) is not part of a file operation")
            }
            PatchError::NoPath { line } => write!(f, "line {line} names no file"),
            PatchError::EmptyUpdate { path } => write!(f, "'Update File: {path}' changes nothing"),
            PatchError::TooMany => write!(f, "it has more than {MAX_OPS} file operations"),
        }
    }
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const EOF_MARK: &str = "*** End of File";

/// The path after a marker, or the error for an empty one.
fn path_after(line: &str, marker: &str, no: usize) -> Result<String, PatchError> {
    let path = line[marker.len()..].trim();
    if path.is_empty() {
        return Err(PatchError::NoPath { line: no });
    }
    Ok(path.to_string())
}

/// Reads a patch envelope.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(PatchError::NoBegin);
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(PatchError::NoEnd);
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let no = i + 2; // 1-based, after the Begin line
        let line = body[i].trim();
        i += 1;
        if line.is_empty() {
            continue;
        }
        if ops.len() >= MAX_OPS {
            return Err(PatchError::TooMany);
        }
        if line.starts_with(ADD) {
            let path = path_after(line, ADD, no)?;
            let mut content = String::new();
            while let Some(added) = body.get(i).and_then(|l| l.strip_prefix('+')) {
                content.push_str(added);
                content.push('\n');
                i += 1;
            }
            ops.push(Op::Add { path, content });
        } else if line.starts_with(DELETE) {
            ops.push(Op::Delete {
                path: path_after(line, DELETE, no)?,
            });
        } else if line.starts_with(UPDATE) {
            let path = path_after(line, UPDATE, no)?;
            let mut move_to = None;
            if let Some(next) = body.get(i).map(|l| l.trim())
                && next.starts_with(MOVE)
            {
                move_to = Some(path_after(next, MOVE, i + 2)?);
                i += 1;
            }
            let chunks = read_chunks(body, &mut i)?;
            if chunks.is_empty() && move_to.is_none() {
                return Err(PatchError::EmptyUpdate { path });
            }
            ops.push(Op::Update {
                path,
                move_to,
                chunks,
            });
        } else {
            return Err(PatchError::Unexpected {
                line: no,
                text: line.to_string(),
            });
        }
    }
    Ok(Patch { ops })
}

/// The chunks of an update, up to the next file marker; `i` is left on it.
fn read_chunks(body: &[&str], i: &mut usize) -> Result<Vec<Chunk>, PatchError> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut open = false;
    while let Some(raw) = body.get(*i) {
        let trimmed = raw.trim();
        if trimmed.starts_with("*** ") && trimmed != EOF_MARK {
            break;
        }
        *i += 1;
        if trimmed == EOF_MARK {
            match chunks.last_mut() {
                Some(c) => c.end_of_file = true,
                None => {
                    return Err(PatchError::Unexpected {
                        line: *i + 1,
                        text: trimmed.to_string(),
                    });
                }
            }
            open = false;
            continue;
        }
        if trimmed == "@@" || trimmed.starts_with("@@ ") {
            let context = trimmed.strip_prefix("@@").map(str::trim).unwrap_or("");
            chunks.push(Chunk {
                context: (!context.is_empty()).then(|| context.to_string()),
                ..Chunk::default()
            });
            open = true;
            continue;
        }
        // The first chunk of an update may start without its `@@`.
        if !open {
            chunks.push(Chunk::default());
            open = true;
        }
        let chunk = chunks.last_mut().expect("a chunk was just opened");
        match raw.chars().next() {
            Some('+') => chunk.new.push(raw[1..].to_string()),
            Some('-') => chunk.old.push(raw[1..].to_string()),
            Some(' ') => {
                chunk.old.push(raw[1..].to_string());
                chunk.new.push(raw[1..].to_string());
            }
            // An empty line stands for an empty context line.
            None => {
                chunk.old.push(String::new());
                chunk.new.push(String::new());
            }
            Some(_) => {
                return Err(PatchError::Unexpected {
                    line: *i + 1,
                    text: raw.to_string(),
                });
            }
        }
    }
    Ok(chunks)
}

/// The first index at or after `from` where `pattern` is `lines` exactly.
fn find(lines: &[String], pattern: &[String], from: usize) -> Option<usize> {
    if pattern.is_empty() {
        return Some(from);
    }
    (from..=lines.len().checked_sub(pattern.len())?).find(|&at| lines[at..].starts_with(pattern))
}

/// `before` (a file's text) with `chunks` applied as Codex applies them, or `None` when a chunk
/// does not match exactly (Codex may then match it loosely: the result cannot be told).
pub fn apply(before: &str, chunks: &[Chunk]) -> Option<String> {
    let mut lines: Vec<String> = before.split('\n').map(str::to_string).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let mut edits: Vec<(usize, usize, &[String])> = Vec::new();
    let mut cursor = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            cursor = find(&lines, std::slice::from_ref(context), cursor)? + 1;
        }
        if chunk.old.is_empty() {
            // Pure additions go at the end of the file.
            edits.push((lines.len(), 0, &chunk.new));
            continue;
        }
        let at = if chunk.end_of_file {
            let at = lines.len().checked_sub(chunk.old.len())?;
            (at >= cursor && lines[at..] == chunk.old[..]).then_some(at)?
        } else {
            find(&lines, &chunk.old, cursor)?
        };
        edits.push((at, chunk.old.len(), &chunk.new));
        cursor = at + chunk.old.len();
    }
    // Later edits first, so earlier indexes stay valid.
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (at, len, new) in edits {
        lines.splice(at..at + len, new.iter().cloned());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Some(text)
}

/// Where a shell command runs `apply_patch` (or `applypatch`), the patch it hands it (the first
/// argument, else a heredoc), by segment index: Codex runs such a command as a patch too.
pub fn in_command(analysis: &Analysis) -> Vec<(usize, Result<Patch, PatchError>)> {
    let mut out = Vec::new();
    for (i, seg) in analysis.segments.iter().enumerate() {
        let Some(head) = seg.argv.first() else {
            continue;
        };
        let name = crate::shell::word::command_name(&head.text);
        if name != "apply_patch" && name != "applypatch" {
            continue;
        }
        let text = match seg.argv.get(1) {
            Some(arg) => Some(arg.text.as_str()),
            None => seg.heredocs.first().map(|h| h.body.as_str()),
        };
        // With no patch at all the program reads nothing and writes nothing.
        if let Some(text) = text {
            out.push((i, parse(text)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_research_patch_is_one_update() {
        let p = parse(
            "*** Begin Patch\n*** Update File: target.txt\n@@\n-original\n+HIJACK\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            p.ops,
            vec![Op::Update {
                path: "target.txt".into(),
                move_to: None,
                chunks: vec![Chunk {
                    old: lines(&["original"]),
                    new: lines(&["HIJACK"]),
                    ..Chunk::default()
                }],
            }]
        );
        assert_eq!(p.written_paths(), ["target.txt"]);
        assert_eq!(
            apply(
                "original\n",
                match &p.ops[0] {
                    Op::Update { chunks, .. } => chunks,
                    _ => unreachable!(),
                }
            )
            .as_deref(),
            Some("HIJACK\n")
        );
    }

    #[test]
    fn add_delete_update_and_move_name_every_path() {
        let text = "  *** Begin Patch\n\
                    *** Add File: docs/new.md\n+# New\n+\n+text\n\
                    *** Delete File: old.txt\n\
                    *** Update File: src/a.rs\n*** Move to: src/b.rs\n@@ fn main() {\n-    old();\n+    new();\n\
                    *** Update File:   spaced name.txt  \n keep\n-x\n+y\n*** End of File\n\
                    *** End Patch  ";
        let p = parse(text).unwrap();
        assert_eq!(
            p.written_paths(),
            [
                "docs/new.md",
                "old.txt",
                "src/a.rs",
                "src/b.rs",
                "spaced name.txt"
            ]
        );
        assert_eq!(
            p.ops[0],
            Op::Add {
                path: "docs/new.md".into(),
                content: "# New\n\ntext\n".into()
            }
        );
        let Op::Update {
            chunks, move_to, ..
        } = &p.ops[2]
        else {
            panic!("{p:?}")
        };
        assert_eq!(move_to.as_deref(), Some("src/b.rs"));
        assert_eq!(chunks[0].context.as_deref(), Some("fn main() {"));
        let Op::Update { chunks, .. } = &p.ops[3] else {
            panic!("{p:?}")
        };
        assert!(chunks[0].end_of_file);
        assert_eq!(chunks[0].old, lines(&["keep", "x"]));
        // A move alone is an update too.
        let moved =
            parse("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch").unwrap();
        assert_eq!(moved.written_paths(), ["a", "b"]);
    }

    #[test]
    fn what_is_no_patch_is_an_error_naming_the_line() {
        assert_eq!(parse("echo hi"), Err(PatchError::NoBegin));
        assert_eq!(parse(""), Err(PatchError::NoBegin));
        assert_eq!(
            parse("*** Begin Patch\n*** Add File: a\n+x\n"),
            Err(PatchError::NoEnd)
        );
        assert_eq!(parse("*** Begin Patch"), Err(PatchError::NoEnd));
        assert_eq!(
            parse("*** Begin Patch\nrm -rf /\n*** End Patch"),
            Err(PatchError::Unexpected {
                line: 2,
                text: "rm -rf /".into()
            })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Add File:   \n*** End Patch"),
            Err(PatchError::NoPath { line: 2 })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n*** End Patch"),
            Err(PatchError::EmptyUpdate { path: "a".into() })
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n@@\n?what\n*** End Patch"),
            Err(PatchError::Unexpected {
                line: 4,
                text: "?what".into()
            })
        );
        let many = format!(
            "*** Begin Patch\n{}*** End Patch",
            "*** Delete File: x\n".repeat(MAX_OPS + 1)
        );
        assert_eq!(parse(&many), Err(PatchError::TooMany));
        assert!(PatchError::NoEnd.to_string().contains("*** End Patch"));
    }

    #[test]
    fn chunks_apply_exactly_in_order_or_not_at_all() {
        let plan = "---\nowns: [a/**]\n---\n- [ ] one\nowns: [a/**]\n";
        let body_only = Chunk {
            old: lines(&["- [ ] one"]),
            new: lines(&["- [x] one"]),
            ..Chunk::default()
        };
        assert_eq!(
            apply(plan, std::slice::from_ref(&body_only)).as_deref(),
            Some("---\nowns: [a/**]\n---\n- [x] one\nowns: [a/**]\n")
        );
        // The first exact match wins (the frontmatter's line), unless the chunk is pinned to the
        // end of the file.
        let widen = Chunk {
            old: lines(&["owns: [a/**]"]),
            new: lines(&["owns: ['**']"]),
            ..Chunk::default()
        };
        assert_eq!(
            apply(plan, std::slice::from_ref(&widen)).as_deref(),
            Some("---\nowns: ['**']\n---\n- [ ] one\nowns: [a/**]\n")
        );
        let at_end = Chunk {
            end_of_file: true,
            ..widen.clone()
        };
        assert_eq!(
            apply(plan, &[at_end]).as_deref(),
            Some("---\nowns: [a/**]\n---\n- [ ] one\nowns: ['**']\n")
        );
        // After a context line, matching starts below it.
        let after = Chunk {
            context: Some("---".into()),
            ..widen.clone()
        };
        assert_eq!(
            apply(plan, &[after]).as_deref(),
            Some("---\nowns: ['**']\n---\n- [ ] one\nowns: [a/**]\n"),
            "the first `---` is the context"
        );
        // Loose matches (trailing blanks) cannot be told.
        let loose = Chunk {
            old: lines(&["- [ ] one  "]),
            ..body_only.clone()
        };
        assert_eq!(apply(plan, &[loose]), None);
        let missing = Chunk {
            context: Some("## nowhere".into()),
            ..body_only
        };
        assert_eq!(apply(plan, &[missing]), None);
        // Pure additions go at the end; a file without a final newline gets one.
        let add = Chunk {
            new: lines(&["- [ ] two"]),
            ..Chunk::default()
        };
        assert_eq!(apply("a", &[add]).as_deref(), Some("a\n- [ ] two\n"));
    }

    #[test]
    fn apply_patch_in_a_shell_command_is_found_with_its_patch() {
        let cmd = "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.txt\n+hi\n*** End Patch\nEOF\necho done";
        let analysis = crate::shell::analyze(cmd, crate::shell::Dialect::Posix);
        let found = in_command(&analysis);
        assert_eq!(found.len(), 1, "{found:?}");
        let (seg, patch) = &found[0];
        assert_eq!(analysis.segments[*seg].argv[0].text, "apply_patch");
        assert_eq!(patch.as_ref().unwrap().written_paths(), ["x.txt"]);
        let arg = crate::shell::analyze(
            "applypatch '*** Begin Patch\n*** Delete File: y\n*** End Patch'",
            crate::shell::Dialect::Posix,
        );
        assert_eq!(
            in_command(&arg)[0].1.as_ref().unwrap().written_paths(),
            ["y"]
        );
        let bad = crate::shell::analyze("apply_patch 'oops'", crate::shell::Dialect::Posix);
        assert_eq!(in_command(&bad)[0].1, Err(PatchError::NoBegin));
        let none = crate::shell::analyze(
            "echo apply_patch; apply_patch",
            crate::shell::Dialect::Posix,
        );
        assert!(in_command(&none).is_empty());
    }
}
