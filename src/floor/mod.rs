//! The kernel write floor under shell commands: while other streams are live, a Bash command
//! runs where the operating system itself refuses writes to what is not the caller's, whatever
//! the command's spelling. The guard's analysis reads a command; the floor does not need to.
//!
//! ```text
//! live locks, config, env ──► set::compute ──► DeniedSet (absolute paths, each with its owner)
//!                                                  │
//!             guard floor --deny OWNER=PATH … -- 'CMD'   (the wrapper, run::wrapper)
//!                                                  │
//!            mechanism::choose ──► bubblewrap (ro-binds) │ Landlock │ sandbox-exec (macOS)
//!                                                  │
//!                                  bash -c <inner script> bash 'CMD'
//! ```
//!
//! What is denied (writing, creating, deleting, renaming, linking into): every path another live
//! stream owns after the earlier-claim rule, the protected set, the app's output folders, and the
//! files other processes run later (git hooks and config, shell rc files and git's user config,
//! the client's shell snapshots and its agents/commands/skills/hooks, `.mcp.json`, the
//! instruction files at the repo root).
//!
//! The set is kept between calls while its inputs and the reads of the tree it rests on hold
//! ([`cache`]).
//!
//! How globs become paths (the mechanisms on Linux bind existing paths):
//! - `dir/**` denies `dir` whole (no walk); with `!` exceptions, or a part the caller keeps by
//!   the earlier-claim rule, below it, each existing child is denied but the exception,
//!   descending only where an exception may match.
//! - A literal file denies that file.
//! - Any other glob is expanded to its existing matches by a walk bounded by [`set::MAX_VISIT`]
//!   entries from its literal prefix (`.git` skipped); past the bound, or for matches created
//!   later, the floor says so and the guard's analysis is the line that stays.
//! - A path that does not exist yet is skipped (no placeholder is made in the tree): its creation
//!   is not refused by the floor, and `set::compute` notes it.
//!
//! Mechanisms (chosen at run time, [`mechanism`]): bubblewrap, a deny-list with none of
//! Landlock's limits, always hardened (`--cap-drop ALL --disable-userns --unshare-user`, never
//! `--unshare-pid`); Landlock where bubblewrap cannot run, limited to paths whose ancestors no
//! ordinary work creates entries in (see [`mechanism::landlock_keeps`]); macOS runs the command under
//! `sandbox-exec` with a generated profile ([`sbpl`]); Windows has none.

pub mod cache; // the denied set kept between calls while its inputs and reads hold
pub mod mechanism; // the platform's way to refuse writes, behind one trait
pub mod run; // `guard floor`: apply, run the command, take the cwd back; the wrapper text
pub mod sbpl; // macOS: a sandbox-exec deny profile from a DeniedSet
pub mod set; // live locks, config and env → the paths the floor denies

use std::path::{Path, PathBuf};

/// Whose a denied path is, as the refusal note names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    /// Another live stream.
    Stream(String),
    /// The protocol's own files: protected paths, settings, the suite's binaries, the state home.
    Protocol,
    /// The app's output folders (only `build-renderer` writes them).
    Output,
    /// Files that other processes run later (git hooks, shell rc files, client config).
    Planting,
}

/// As its label (`stream:api`), the form `--deny` takes.
impl serde::Serialize for Owner {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl Owner {
    /// The label on the command line: `stream:api`, `protocol`, `output`, `planting`.
    pub fn label(&self) -> String {
        match self {
            Owner::Stream(s) => format!("stream:{s}"),
            Owner::Protocol => "protocol".into(),
            Owner::Output => "output".into(),
            Owner::Planting => "planting".into(),
        }
    }

    pub fn parse(label: &str) -> Option<Owner> {
        match label {
            "protocol" => Some(Owner::Protocol),
            "output" => Some(Owner::Output),
            "planting" => Some(Owner::Planting),
            _ => label
                .strip_prefix("stream:")
                .filter(|s| crate::plans::valid_stream_name(s))
                .map(|s| Owner::Stream(s.to_string())),
        }
    }

    /// What owns it, for a sentence: `stream 'api'`, `the session-lock protocol`, ….
    pub fn describe(&self) -> String {
        match self {
            Owner::Stream(s) => format!("owned by stream '{s}'"),
            Owner::Protocol => "part of the session-lock protocol".into(),
            Owner::Output => "the app's output (only build-renderer writes it)".into(),
            Owner::Planting => {
                "run later by other processes (hooks, shell or client config)".into()
            }
        }
    }
}

/// One denied path: absolute, its symlinks resolved (the mechanisms bind what a write reaches).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Denied {
    pub path: PathBuf,
    pub owner: Owner,
}

/// A rule as a pattern, for mechanisms that match patterns themselves (macOS): nothing needs
/// to exist. `include` and `except` are absolute globs (`/r/src/api/**`, `/r/src/**/*.test.ts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternRule {
    pub owner: Owner,
    pub include: String,
    pub except: Vec<String>,
}

/// What the floor denies for one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeniedSet {
    /// Existing paths, sorted, none below another (what bubblewrap and Landlock bind).
    pub denied: Vec<Denied>,
    /// The same rules as patterns (what `sandbox-exec` matches).
    pub patterns: Vec<PatternRule>,
    /// What the floor cannot refuse here and why (shown by `guard explain`).
    pub notes: Vec<String>,
}

/// The most paths one command's floor binds; past it the rest is left to the analysis, said in
/// a note. (Each bind costs the mechanism a little, and the wrapper text grows.)
pub const MAX_DENIED: usize = 256;

impl DeniedSet {
    pub fn is_empty(&self) -> bool {
        self.denied.is_empty()
    }

    /// Sorts, resolves, and drops paths below another denied path; caps at [`MAX_DENIED`].
    pub fn finish(&mut self) {
        for d in &mut self.denied {
            if let Ok(real) = std::fs::canonicalize(&d.path) {
                d.path = real;
            }
        }
        self.denied.sort();
        let mut kept: Vec<Denied> = Vec::with_capacity(self.denied.len());
        for d in std::mem::take(&mut self.denied) {
            if kept.iter().any(|k| d.path.starts_with(&k.path)) {
                continue;
            }
            kept.push(d);
        }
        if kept.len() > MAX_DENIED {
            self.notes.push(format!(
                "{} paths to deny, more than the {MAX_DENIED} the floor binds; the rest is left to the guard's analysis",
                kept.len()
            ));
            kept.truncate(MAX_DENIED);
        }
        self.denied = kept;
    }

    /// The command-line form: `--deny OWNER=PATH` pairs (what `guard floor` reads back).
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.denied.len() * 2);
        for d in &self.denied {
            out.push("--deny".to_string());
            out.push(format!("{}={}", d.owner.label(), d.path.display()));
        }
        out
    }

    /// One `OWNER=PATH` value of `--deny`.
    pub fn parse_deny(value: &str) -> Result<Denied, String> {
        let (label, path) = value
            .split_once('=')
            .ok_or_else(|| format!("--deny '{value}': expected OWNER=PATH"))?;
        let owner = Owner::parse(label).ok_or_else(|| {
            format!(
                "--deny '{value}': '{label}' is not protocol, output, planting or stream:<name>"
            )
        })?;
        if !Path::new(path).is_absolute() {
            return Err(format!("--deny '{value}': the path must be absolute"));
        }
        Ok(Denied {
            path: PathBuf::from(path),
            owner,
        })
    }

    /// The one line a failed command's output gets: what the floor refused and whose it is.
    /// Paths inside `root` are shown relative to it.
    pub fn refusal_note(&self, root: Option<&Path>) -> String {
        let show = |p: &Path| shown(p, root);
        let mut groups: Vec<(&Owner, Vec<String>)> = Vec::new();
        for d in &self.denied {
            match groups.iter_mut().find(|(o, _)| *o == &d.owner) {
                Some((_, list)) => list.push(show(&d.path)),
                None => groups.push((&d.owner, vec![show(&d.path)])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(owner, list)| {
                let shown: Vec<&str> = list.iter().take(4).map(String::as_str).collect();
                let more = match list.len().saturating_sub(4) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                format!("{}{more} ({})", shown.join(", "), owner.describe())
            })
            .collect();
        format!(
            "session-lock: this command ran under the write floor; a 'Read-only file system' or 'Permission denied' on these is the floor refusing the write: {}. Write only your own stream's files",
            parts.join("; ")
        )
    }
}

/// `path` for a person: relative to `root` when inside it, else whole.
pub fn shown(path: &Path, root: Option<&Path>) -> String {
    match root.and_then(|r| path.strip_prefix(r).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_bad_ones_are_named() {
        for o in [
            Owner::Stream("api".into()),
            Owner::Protocol,
            Owner::Output,
            Owner::Planting,
        ] {
            assert_eq!(Owner::parse(&o.label()), Some(o));
        }
        assert_eq!(Owner::parse("stream:../x"), None);
        let e = DeniedSet::parse_deny("nobody=/x").unwrap_err();
        assert!(e.contains("'nobody'"), "{e}");
        let e = DeniedSet::parse_deny("protocol=rel/x").unwrap_err();
        assert!(e.contains("absolute"), "{e}");
        // Only the first `=` ends the label; the path keeps the rest.
        let abs = if cfg!(windows) { "C:/r/a=b" } else { "/r/a=b" };
        let d = DeniedSet::parse_deny(&format!("stream:api={abs}")).unwrap();
        assert_eq!(d.path, Path::new(abs));
    }

    #[test]
    fn finish_drops_paths_below_another_and_the_note_groups_owners() {
        let d = |p: &str, o: Owner| Denied {
            path: PathBuf::from(p),
            owner: o,
        };
        let mut set = DeniedSet {
            denied: vec![
                d("/nonexistent-r/src/api/x.ts", Owner::Stream("api".into())),
                d("/nonexistent-r/src/api", Owner::Stream("api".into())),
                d("/nonexistent-r/session-lock", Owner::Protocol),
            ],
            ..DeniedSet::default()
        };
        set.finish();
        assert_eq!(set.denied.len(), 2, "{:?}", set.denied);
        let args = set.to_args();
        assert_eq!(args[1], "protocol=/nonexistent-r/session-lock");
        let note = set.refusal_note(Some(Path::new("/nonexistent-r")));
        assert!(
            note.contains("src/api (owned by stream 'api')")
                && note.contains("session-lock (part of the session-lock protocol)"),
            "{note}"
        );
        assert!(!note.contains('\n'));
    }
}
