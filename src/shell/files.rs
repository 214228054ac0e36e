//! Script files a command runs: `bash x.sh`, `sh ./x`, `./x.sh`, `source x`, `. x`, and
//! package scripts (`npm run X`, `pnpm X`, `yarn X` read `scripts.X` of package.json, with
//! its `preX`/`postX`). Their text is analysed like a `bash -c` string, recursively.
//!
//! The analysis reads no files itself: the caller hands in a [`Reader`] (the hook reads
//! inside the repository, bounded by size; tests fake it). At most [`MAX_FILES`] files are
//! read per command, each at most [`MAX_FILE_BYTES`]; nesting counts towards the lexer's
//! depth limit like any nested script.

use super::DirStep;
use super::pm::{PmCall, pm_call};
use super::programs;
use super::word::{Word, command_name};

/// Most files one analysis reads.
pub const MAX_FILES: usize = 16;
/// Largest file text analysed.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// Why a file a command runs gives the analysis no text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unread {
    /// Missing, outside the repository, too large, or not text: nothing of the repo's runs.
    Nothing,
    /// There, but not a regular file (a FIFO, a device, a socket): what it feeds the shell
    /// cannot be known before it runs, so the analysis records it
    /// ([`Analysis::unreadable`](super::Analysis::unreadable)) and the hook blocks.
    NotRegular,
}

/// Gives the analysis the text of a file a command runs.
pub trait Reader {
    /// The text of `path` as the command names it, read from the directory the `cd`
    /// steps `dirs` lead to, or why there is none.
    fn read(&self, path: &str, dirs: &[DirStep]) -> Result<String, Unread>;
}

/// Reads nothing: the analysis of the command text alone.
pub struct NoFiles;

impl Reader for NoFiles {
    fn read(&self, _path: &str, _dirs: &[DirStep]) -> Result<String, Unread> {
        Err(Unread::Nothing)
    }
}

/// What the files a segment runs gave: their scripts, and the names of those that are not
/// regular files.
#[derive(Default)]
pub(crate) struct Found {
    pub scripts: Vec<FileScript>,
    pub unreadable: Vec<String>,
}

impl Found {
    fn of(
        read: Result<String, Unread>,
        name: &str,
        keep: impl FnOnce(String) -> Vec<FileScript>,
    ) -> Found {
        match read {
            Ok(text) => Found {
                scripts: keep(text),
                unreadable: Vec::new(),
            },
            Err(Unread::NotRegular) => Found {
                scripts: Vec::new(),
                unreadable: vec![name.to_string()],
            },
            Err(Unread::Nothing) => Found::default(),
        }
    }
}

/// A file's text to analyse, with what ran it.
pub(crate) struct FileScript {
    pub text: String,
    pub via: &'static str,
}

/// The scripts a segment's peeled `argv` runs from files.
pub(crate) fn scripts(
    reader: &dyn Reader,
    argv: &[Word],
    wrappers: &[String],
    dirs: &[DirStep],
) -> Found {
    let Some(head) = argv.first() else {
        return Found::default();
    };
    if head.dynamic {
        return Found::default();
    }
    if let Some(PmCall::Script { name, .. }) = pm_call(argv) {
        return Found::of(reader.read("package.json", dirs), "package.json", |json| {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&json) else {
                return Vec::new();
            };
            let mut out = Vec::new();
            for key in [format!("pre{name}"), name.clone(), format!("post{name}")] {
                if let Some(text) = v
                    .get("scripts")
                    .and_then(|s| s.get(&key))
                    .and_then(|s| s.as_str())
                {
                    out.push(FileScript {
                        text: text.to_string(),
                        via: "package script",
                    });
                }
            }
            out
        });
    }
    let by_shell = wrappers
        .last()
        .and_then(|w| programs::get(w))
        .is_some_and(|p| p.shell_file);
    let path_like = head.text.contains('/');
    if !(by_shell || path_like) {
        return Found::default();
    }
    let name = command_name(&head.text);
    let script_name = name.ends_with(".sh") || name.ends_with(".bash") || !name.contains('.');
    if !(by_shell || script_name) {
        return Found::default();
    }
    Found::of(reader.read(&head.text, dirs), &head.text, |text| {
        if shell_text(&text) {
            vec![FileScript {
                text,
                via: "script file",
            }]
        } else {
            Vec::new()
        }
    })
}

/// Text a POSIX shell would run: no NUL bytes, and a shebang (if any) naming a shell.
fn shell_text(text: &str) -> bool {
    if text.len() > MAX_FILE_BYTES || text.contains('\0') {
        return false;
    }
    match text.strip_prefix("#!") {
        Some(rest) => {
            let line = rest.lines().next().unwrap_or_default();
            line.split([' ', '/'])
                .filter_map(programs::get)
                .any(|p| p.shell == Some(super::Dialect::Posix))
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{Dialect, analyze_with};
    use std::cell::Cell;

    struct Fake {
        files: Vec<(&'static str, &'static str)>,
        reads: Cell<usize>,
    }

    impl Reader for Fake {
        fn read(&self, path: &str, dirs: &[DirStep]) -> Result<String, Unread> {
            self.reads.set(self.reads.get() + 1);
            let mut full = String::new();
            for d in dirs {
                if let DirStep::To(p) = d {
                    full.push_str(p);
                    full.push('/');
                }
            }
            full.push_str(path.trim_start_matches("./"));
            self.files
                .iter()
                .find(|(p, _)| *p == full)
                .map(|(_, t)| t.to_string())
                .ok_or(Unread::Nothing)
        }
    }

    fn fake(files: Vec<(&'static str, &'static str)>) -> Fake {
        Fake {
            files,
            reads: Cell::new(0),
        }
    }

    fn heads(cmd: &str, r: &Fake) -> Vec<String> {
        analyze_with(cmd, Dialect::Posix, r)
            .segments
            .iter()
            .filter(|s| !s.argv.is_empty())
            .map(|s| s.render())
            .collect()
    }

    #[test]
    fn scripts_run_by_the_command_are_analysed() {
        let r = fake(vec![
            ("x.sh", "#!/bin/bash\nrm -rf dist\n"),
            ("tools/y", "git stash\n"),
            ("web/z.sh", "bash ../x.sh\n"),
        ]);
        assert!(heads("bash x.sh", &r).contains(&"rm -rf dist".into()));
        assert!(heads("./x.sh", &r).contains(&"rm -rf dist".into()));
        assert!(heads("source tools/y", &r).contains(&"git stash".into()));
        assert!(heads(". tools/y", &r).contains(&"git stash".into()));
        assert!(heads("cd web && ./z.sh", &r).contains(&"bash ../x.sh".into()));
        // A program on PATH is not a file of the repo; a missing file is nothing.
        assert!(!heads("deploy", &r).iter().any(|h| h.contains("rm")));
        assert!(
            !heads("bash missing.sh", &r)
                .iter()
                .any(|h| h.contains("rm"))
        );
    }

    #[test]
    fn every_posix_shell_of_the_program_table_runs_script_files() {
        // `fish` was a shell to the heredoc and wrapper lists but not to this one, and a
        // `fish`, `mksh` or `ash` shebang did not make a file shell text.
        let r = fake(vec![
            ("clean", "rm -rf dist\n"),
            ("x", "#!/usr/bin/env fish\nrm -rf dist\n"),
            ("y", "#!/bin/mksh\ngit stash\n"),
        ]);
        assert!(heads("fish clean", &r).contains(&"rm -rf dist".into()));
        assert!(heads("mksh clean", &r).contains(&"rm -rf dist".into()));
        assert!(heads("./x", &r).contains(&"rm -rf dist".into()));
        assert!(heads("./y", &r).contains(&"git stash".into()));
        // A program that is not a shell does not run its operand as shell.
        assert!(!heads("cat clean", &r).contains(&"rm -rf dist".into()));
    }

    #[test]
    fn package_scripts_are_analysed_with_pre_and_post() {
        let r = fake(vec![(
            "package.json",
            r#"{"scripts": {"clean": "rm -rf dist", "prelint": "git stash", "lint": "eslint ."}}"#,
        )]);
        assert!(heads("npm run clean", &r).contains(&"rm -rf dist".into()));
        let lint = heads("pnpm lint", &r);
        assert!(lint.contains(&"git stash".into()), "{lint:?}");
        assert!(lint.contains(&"eslint .".into()), "{lint:?}");
    }

    #[test]
    fn reading_is_bounded_and_binary_files_are_skipped() {
        let r = fake(vec![("loop.sh", "bash loop.sh\n"), ("bin", "\0ELF")]);
        let an = analyze_with("bash loop.sh", Dialect::Posix, &r);
        assert!(r.reads.get() <= MAX_FILES, "{}", r.reads.get());
        assert!(an.segments.len() < 64);
        assert_eq!(heads("./bin", &r), ["./bin"]);
        let python = fake(vec![("t.py", "#!/usr/bin/env python3\nimport os\n")]);
        assert_eq!(heads("./t.py", &python), ["./t.py"]);
    }
}
