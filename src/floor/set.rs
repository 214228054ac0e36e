//! The paths the floor denies, from plain inputs: the repo root, the other live streams (with
//! the earlier-claim rule applied), the protected set, the output folders and the folders
//! outside the repo. Reads only the folders a rule with exceptions or a glob needs; the common
//! `dir/**` costs one `stat`.

use super::{Denied, DeniedSet, Owner, PatternRule};
use crate::globs::Owns;
use crate::state::Held;
use std::path::{Path, PathBuf};

/// The most directory entries one command's floor looks at (globs and exceptions together).
pub const MAX_VISIT: usize = 4096;

/// One rule: whose it is, its `owns`-style patterns (repo-relative, `!` exclusions allowed), and
/// the pattern lists the caller keeps inside it.
#[derive(Clone, Debug)]
pub struct Rule {
    pub owner: Owner,
    pub patterns: Vec<String>,
    pub keep: Vec<Vec<String>>,
}

/// Everything the set is computed from.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub root: PathBuf,
    /// Other live streams, protected paths, outputs: repo-relative rules.
    pub rules: Vec<Rule>,
    /// Absolute paths outside the rules (the suite's binaries, the state home, rc files, …),
    /// each with its owner.
    pub fixed: Vec<Denied>,
    pub case_insensitive: bool,
}

/// The rules for the streams other sessions hold: each live lock of another session denies
/// what its `owns` matches, except what the caller keeps by the earlier-claim rule (its own
/// live locks claimed before that one).
pub fn stream_rules(live: &[&Held], session_id: &str) -> Vec<Rule> {
    let mine: Vec<&Held> = live
        .iter()
        .copied()
        .filter(|h| h.record.session_id == session_id)
        .collect();
    let mut out: Vec<Rule> = Vec::new();
    for h in live.iter().filter(|h| h.record.session_id != session_id) {
        let keep = mine
            .iter()
            .filter(|m| m.claim_order() < h.claim_order())
            .map(|m| m.record.owns.clone())
            .collect();
        out.push(Rule {
            owner: Owner::Stream(h.record.stream.clone()),
            patterns: h.record.owns.clone(),
            keep,
        });
    }
    out
}

/// The protected set (`protectedPaths`) and the output folders as rules. The caller keeps the
/// protected files its own stream names explicitly (`.claude/**`, not a catch-all), as the
/// guard's check lets it.
pub fn protocol_rules(protected: &[String], outputs: &[String], own: &[&Held]) -> Vec<Rule> {
    let explicit: Vec<Vec<String>> = own
        .iter()
        .map(|h| {
            h.record
                .owns
                .iter()
                .filter(|p| p.trim().starts_with('!') || !literal_prefix(p).is_empty())
                .cloned()
                .collect::<Vec<String>>()
        })
        .filter(|v| v.iter().any(|p| !p.trim().starts_with('!')))
        .collect();
    let mut out = vec![Rule {
        owner: Owner::Protocol,
        patterns: protected.to_vec(),
        keep: explicit.clone(),
    }];
    if !outputs.is_empty() {
        out.push(Rule {
            owner: Owner::Output,
            patterns: outputs
                .iter()
                .map(|d| format!("{}/**", d.trim_end_matches('/')))
                .collect(),
            keep: Vec::new(),
        });
    }
    // The repo's files that other processes run later, kept by a stream that names them.
    out.push(Rule {
        owner: Owner::Planting,
        patterns: REPO_PLANTING.iter().map(|s| s.to_string()).collect(),
        keep: explicit,
    });
    out
}

/// In the repo: git's hooks and config, the client's folder (settings, agents, commands,
/// skills, hooks: all of it is the client's configuration, so the folder is denied whole and a
/// settings file that does not exist yet cannot be created), the MCP server list, and the
/// instruction files the clients read at the root (the guard's analysis refuses them at any
/// depth, and its tests check it refuses every path listed here; the floor denies the root's,
/// one `stat` each, where a deeper one would cost a walk of the whole repo).
pub(crate) const REPO_PLANTING: [&str; 8] = [
    ".git/hooks/**",
    ".git/config",
    ".claude/**",
    ".mcp.json",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "GEMINI.md",
];

/// Shell startup files in the home folder, and git's user config, whose aliases, hooks path,
/// pager and editor run commands (existing ones are denied; a missing one could only be
/// refused by denying the home folder itself).
pub const RC_FILES: [&str; 14] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish",
    ".claude.json",
    ".gitconfig",
    ".config/git",
];

/// In each of the client's user folders: settings, shell snapshots (sourced before every
/// command), and the user-scope agents, commands, skills and hooks.
pub const USER_CLIENT_FILES: [&str; 7] = [
    "settings.json",
    "settings.local.json",
    "shell-snapshots",
    "agents",
    "commands",
    "skills",
    "hooks",
];

/// The fixed absolute paths: the suite's binaries folder (when it does not hold the repo), the
/// state home, the client's user folders' files and the shell rc files.
pub fn fixed_paths(
    root: &Path,
    binary_dir: Option<&Path>,
    state_home: Option<&Path>,
    user_dirs: &[PathBuf],
    home: Option<&Path>,
) -> Vec<Denied> {
    let mut out = Vec::new();
    let mut push = |path: PathBuf, owner: Owner| out.push(Denied { path, owner });
    if let Some(bin) = binary_dir.filter(|b| !root.starts_with(b)) {
        push(bin.to_path_buf(), Owner::Protocol);
    }
    if let Some(h) = state_home {
        push(h.to_path_buf(), Owner::Protocol);
    }
    for dir in user_dirs {
        for f in USER_CLIENT_FILES {
            let owner = if f.starts_with("settings") {
                Owner::Protocol
            } else {
                Owner::Planting
            };
            push(dir.join(f), owner);
        }
    }
    if let Some(home) = home {
        for f in RC_FILES {
            push(home.join(f), Owner::Planting);
        }
    }
    out
}

/// The git folder of `root` (`.git`, or the one a `.git` file names), its common folder (where
/// `config` and `hooks` live for a worktree), and a `core.hooksPath` its config sets.
pub fn git_paths(root: &Path) -> Vec<Denied> {
    let dot = root.join(".git");
    let Ok(meta) = std::fs::metadata(&dot) else {
        return Vec::new();
    };
    if meta.is_dir() {
        return hooks_path(root, &dot);
    }
    // A worktree: `.git` is a file `gitdir: <dir>`; that dir's `commondir` names the shared one.
    let Some(gitdir) = read_small(&dot)
        .and_then(|t| t.strip_prefix("gitdir:").map(|r| r.trim().to_string()))
        .map(|g| root.join(g))
    else {
        return Vec::new();
    };
    let common = read_small(&gitdir.join("commondir"))
        .map(|c| gitdir.join(c.trim()))
        .unwrap_or_else(|| gitdir.clone());
    let mut out = vec![
        Denied {
            path: common.join("hooks"),
            owner: Owner::Planting,
        },
        Denied {
            path: common.join("config"),
            owner: Owner::Planting,
        },
    ];
    out.extend(hooks_path(root, &common).into_iter().filter(|d| {
        !d.path.starts_with(&common) // the in-repo .git ones come through REPO_PLANTING
    }));
    out
}

/// `core.hooksPath` of the config in `git_dir`, as a denied folder (a plain text scan: the line
/// `hooksPath = X` in the `[core]` section).
fn hooks_path(root: &Path, git_dir: &Path) -> Vec<Denied> {
    let Some(text) = read_small(&git_dir.join("config")) else {
        return Vec::new();
    };
    let mut core = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            core = line.to_ascii_lowercase().starts_with("[core");
            continue;
        }
        if let Some((k, v)) = line.split_once('=')
            && core
            && k.trim().eq_ignore_ascii_case("hookspath")
        {
            let v = v.trim().trim_matches('"');
            let path = match v.strip_prefix("~/") {
                Some(rest) => crate::sessions::home_dir().map(|h| h.join(rest)),
                None => Some(root.join(v)),
            };
            return path
                .map(|path| Denied {
                    path,
                    owner: Owner::Planting,
                })
                .into_iter()
                .collect();
        }
    }
    Vec::new()
}

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    crate::atomic::open_regular(path)
        .ok()?
        .take(64 * 1024)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// The denied set of `inputs`.
pub fn compute(inputs: &Inputs) -> DeniedSet {
    compute_tracked(inputs).0
}

/// [`compute`], with what the answer read of the tree ([`super::cache`] keeps it while those
/// reads would read the same); `None` when the walk stopped at its bound (not cached).
pub fn compute_tracked(inputs: &Inputs) -> (DeniedSet, Option<Vec<Dep>>) {
    let mut set = DeniedSet::default();
    let mut walk = Walk {
        root: &inputs.root,
        visited: 0,
        capped: false,
        out: Vec::new(),
        notes: Vec::new(),
        deps: Vec::new(),
    };
    for rule in &inputs.rules {
        walk.rule(rule, inputs.case_insensitive, &mut set.patterns);
    }
    if walk.capped {
        walk.notes.push(format!(
            "the floor looked at {MAX_VISIT} folder entries for glob owners and exceptions and stopped; matches past that are left to the guard's analysis"
        ));
    }
    let capped = walk.capped;
    set.denied = walk.out;
    set.notes = walk.notes;
    let mut deps = walk.deps;
    for d in &inputs.fixed {
        deps.push(Dep::seen(&d.path, true, false));
        deps.push(Dep::seen(&d.path, false, false));
        set.patterns.push(PatternRule {
            owner: d.owner.clone(),
            include: if d.path.is_dir() {
                format!("{}/**", d.path.display())
            } else {
                d.path.display().to_string()
            },
            except: Vec::new(),
        });
        if std::fs::symlink_metadata(&d.path).is_ok() {
            set.denied.push(d.clone());
        }
    }
    set.finish();
    (set, (!capped).then_some(deps))
}

/// One read of the tree an answer rests on: what a path was (absent, its kind and inode), and
/// for a folder that was listed, its modification time (an entry added or removed moves it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dep {
    pub path: PathBuf,
    /// Read through a symlink at the end (`stat`) rather than of the entry itself (`lstat`).
    pub follow: bool,
    pub seen: Seen,
}

/// What a [`Dep`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Absent,
    Entry {
        /// 0 file, 1 folder, 2 symlink, 3 other.
        kind: u8,
        ino: u64,
        /// A listed folder's modification time in ns (0 otherwise).
        listed_ns: u64,
    },
}

impl Dep {
    /// The path as it is now.
    pub fn seen(path: &Path, follow: bool, listed: bool) -> Dep {
        let meta = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        Dep {
            path: path.to_path_buf(),
            follow,
            seen: meta.map_or(Seen::Absent, |m| Seen::of(&m, listed)),
        }
    }

    /// Would the same read find the same now?
    pub fn holds(&self) -> bool {
        let listed = matches!(self.seen, Seen::Entry { listed_ns, .. } if listed_ns != 0);
        Dep::seen(&self.path, self.follow, listed).seen == self.seen
    }
}

impl Seen {
    fn of(m: &std::fs::Metadata, listed: bool) -> Seen {
        let t = m.file_type();
        let kind = if t.is_symlink() {
            2
        } else if t.is_dir() {
            1
        } else if t.is_file() {
            0
        } else {
            3
        };
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(m);
        #[cfg(not(unix))]
        let ino = 0;
        let listed_ns = if listed {
            m.modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(1, |d| (d.as_nanos() as u64).max(1))
        } else {
            0
        };
        Seen::Entry {
            kind,
            ino,
            listed_ns,
        }
    }
}

/// One rule compiled: what it owns and what the caller keeps inside it.
struct Compiled {
    owns: Owns,
    keep: Vec<Owns>,
    /// Literal prefixes of every pattern that makes an exception (the rule's `!` patterns and the
    /// kept patterns), lowercased when `ci`.
    except_prefixes: Vec<String>,
    ci: bool,
}

impl Compiled {
    fn denied(&self, rel: &str) -> bool {
        self.owns.is_match(rel) && !self.keep.iter().any(|k| k.is_match(rel))
    }

    /// Could an exception match `rel` or something below it?
    fn may_except(&self, rel: &str) -> bool {
        let rel = if self.ci {
            rel.to_lowercase()
        } else {
            rel.to_string()
        };
        let below = format!("{rel}/");
        self.except_prefixes
            .iter()
            .any(|p| p.starts_with(&below) || rel.starts_with(p.as_str()) || *p == below)
    }

    /// Is everything below the folder `rel` denied? (Tested on names no literal, class or `?`
    /// pattern matches: a `**` or `*` owner covers them, so the folder is owned whole.)
    fn owns_below(&self, rel: &str) -> bool {
        const PROBE: &str = "\u{1}\u{1}\u{1}";
        let one = format!("{rel}/{PROBE}");
        self.denied(&one) && self.denied(&format!("{one}/{PROBE}"))
    }
}

struct Walk<'a> {
    root: &'a Path,
    visited: usize,
    capped: bool,
    out: Vec<Denied>,
    notes: Vec<String>,
    deps: Vec<Dep>,
}

impl Walk<'_> {
    fn rule(&mut self, rule: &Rule, ci: bool, patterns: &mut Vec<PatternRule>) {
        let Ok(owns) = Owns::new(&rule.patterns, ci) else {
            self.notes.push(format!(
                "{} has a pattern that does not compile; the floor leaves it to the guard's analysis",
                rule.owner.label()
            ));
            return;
        };
        let keep: Vec<Owns> = rule
            .keep
            .iter()
            .filter_map(|k| Owns::new(k, ci).ok())
            .collect();
        let negated = rule
            .patterns
            .iter()
            .filter_map(|p| p.trim().strip_prefix('!').map(str::to_string));
        let kept = rule
            .keep
            .iter()
            .flatten()
            .filter(|p| !p.trim().starts_with('!'))
            .cloned();
        let except: Vec<String> = negated.chain(kept).collect();
        let except_prefixes = except
            .iter()
            .map(|p| {
                let p = literal_prefix(p);
                if ci { p.to_lowercase() } else { p }
            })
            .collect();
        let c = Compiled {
            owns,
            keep,
            except_prefixes,
            ci,
        };
        let abs = |p: &str| format!("{}/{}", self.root.display(), normalized(p));
        for include in rule.patterns.iter().filter(|p| !p.trim().starts_with('!')) {
            patterns.push(PatternRule {
                owner: rule.owner.clone(),
                include: abs(include),
                except: except.iter().map(|e| abs(e)).collect(),
            });
            let p = normalized(include);
            match shape(&p) {
                Shape::Folder(dir) => self.visit(&c, &rule.owner, dir, true),
                Shape::File(file) => self.visit(&c, &rule.owner, file, false),
                Shape::Glob(start) => self.glob(&c, &rule.owner, &start),
            }
        }
    }

    fn push(&mut self, rel: &str, owner: &Owner) {
        self.out.push(Denied {
            path: self.root.join(rel),
            owner: owner.clone(),
        });
    }

    /// A path every part of which the include owns (`folder`: a `dir/**` folder), minus the
    /// exceptions: denied whole unless an exception may reach inside, then child by child.
    fn visit(&mut self, c: &Compiled, owner: &Owner, rel: &str, folder: bool) {
        let path = self.root.join(rel);
        let meta = std::fs::symlink_metadata(&path);
        self.deps.push(Dep {
            path: path.clone(),
            follow: false,
            seen: meta.as_ref().map_or(Seen::Absent, |m| Seen::of(m, false)),
        });
        let Ok(meta) = meta else {
            if matches!(owner, Owner::Stream(_)) {
                self.notes.push(format!(
                    "{rel} does not exist yet; the floor cannot refuse creating it ({}), the guard's analysis still does",
                    owner.describe()
                ));
            }
            return;
        };
        let is_dir = meta.is_dir();
        if !folder && is_dir {
            // A literal owner names the entry, not what is below it.
            return;
        }
        if !c.may_except(rel) {
            if c.denied(rel) || (folder && is_dir) {
                self.push(rel, owner);
            }
            return;
        }
        if !is_dir {
            if c.denied(rel) {
                self.push(rel, owner);
            }
            return;
        }
        for child in self.children(&path) {
            self.visit(c, owner, &format!("{rel}/{child}"), folder);
        }
    }

    /// A glob's existing matches, from its literal folder down.
    fn glob(&mut self, c: &Compiled, owner: &Owner, start: &str) {
        let path = if start.is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(start)
        };
        if start.is_empty() {
            // The repo root: its own identity is the key's, and it is always a folder.
        } else {
            let dep = Dep::seen(&path, true, false);
            let is_dir = matches!(dep.seen, Seen::Entry { kind: 1, .. });
            self.deps.push(dep);
            if !is_dir {
                return;
            }
        }
        if !path.is_dir() {
            return;
        }
        for child in self.children(&path) {
            let rel = if start.is_empty() {
                child
            } else {
                format!("{start}/{child}")
            };
            if rel == ".git" {
                continue;
            }
            let full = self.root.join(&rel);
            let dep = Dep::seen(&full, false, false);
            let is_dir = matches!(dep.seen, Seen::Entry { kind: 1, .. });
            self.deps.push(dep);
            // Denied whole: a match with no exception below it, or a folder all of whose
            // matches are below it and no exception may be.
            let whole = (c.denied(&rel) && (!is_dir || !c.may_except(&rel)))
                || (is_dir && c.owns_below(&rel) && !c.may_except(&rel));
            if whole {
                self.push(&rel, owner);
            } else if is_dir {
                self.glob(c, owner, &rel);
            }
        }
    }

    fn children(&mut self, dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        // The folder's time is read before its listing: an entry made during it moves the time.
        self.deps.push(Dep::seen(dir, true, true));
        let Ok(entries) = std::fs::read_dir(dir) else {
            return out;
        };
        for e in entries.flatten() {
            if self.visited >= MAX_VISIT {
                self.capped = true;
                break;
            }
            self.visited += 1;
            if let Some(name) = e.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        out.sort();
        out
    }
}

enum Shape<'a> {
    /// `dir/**`: the folder with everything below it.
    Folder(&'a str),
    /// A literal path.
    File(&'a str),
    /// A glob, with the literal folder it starts in (`""`: the repo root).
    Glob(String),
}

fn shape(p: &str) -> Shape<'_> {
    let wild = |t: &str| t.contains(['*', '?', '[', '{']);
    if let Some(dir) = p.strip_suffix("/**")
        && !wild(dir)
        && !dir.is_empty()
    {
        return Shape::Folder(dir);
    }
    if !wild(p) {
        return Shape::File(p);
    }
    let head = literal_prefix(p);
    Shape::Glob(head.rfind('/').map_or("", |i| &head[..i]).to_string())
}

/// A pattern as the matcher reads it, its `!` dropped.
fn normalized(p: &str) -> String {
    crate::globs::normalized(p.trim().trim_start_matches('!'))
}

fn literal_prefix(p: &str) -> String {
    crate::globs::literal_prefix(p.trim().trim_start_matches('!'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        dir
    }

    fn rule(owner: &str, patterns: &[&str], keep: &[&[&str]]) -> Rule {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Rule {
            owner: Owner::Stream(owner.into()),
            patterns: v(patterns),
            keep: keep.iter().map(|k| v(k)).collect(),
        }
    }

    /// `d`'s path below `real`, with `/` between names on every platform.
    fn rel(real: &Path, d: &Denied) -> String {
        d.path
            .strip_prefix(real)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    }

    fn denied(dir: &Path, rules: Vec<Rule>) -> (Vec<String>, Vec<String>) {
        let set = compute(&Inputs {
            root: dir.to_path_buf(),
            rules,
            ..Inputs::default()
        });
        let real = dir.canonicalize().unwrap();
        let rel = set.denied.iter().map(|d| rel(&real, d)).collect();
        (rel, set.notes)
    }

    #[test]
    fn a_folder_owner_is_denied_whole_and_exceptions_stay_writable() {
        let dir = tree(&[
            "src/api/a.ts",
            "src/api/gen/types.ts",
            "src/api/gen/more.ts",
            "src/api/sub/b.ts",
            "src/web/c.ts",
        ]);
        let (d, _) = denied(dir.path(), vec![rule("api", &["src/api/**"], &[])]);
        assert_eq!(d, ["src/api"]);
        let (d, _) = denied(
            dir.path(),
            vec![rule("api", &["src/api/**", "!src/api/gen/types.ts"], &[])],
        );
        assert_eq!(d, ["src/api/a.ts", "src/api/gen/more.ts", "src/api/sub"]);
        let (d, _) = denied(
            dir.path(),
            vec![rule("api", &["src/api/**", "!src/api/gen/**"], &[])],
        );
        assert_eq!(d, ["src/api/a.ts", "src/api/sub"]);
    }

    #[test]
    fn what_the_caller_claimed_earlier_stays_writable() {
        let dir = tree(&["src/api/a.ts", "src/api/shared/s.ts"]);
        let (d, _) = denied(
            dir.path(),
            vec![rule("api", &["src/api/**"], &[&["src/api/shared/**"]])],
        );
        assert_eq!(d, ["src/api/a.ts"]);
    }

    #[test]
    fn globs_deny_their_existing_matches_and_missing_owners_are_noted() {
        let dir = tree(&[
            "src/a.test.ts",
            "src/a.ts",
            "src/deep/b.test.ts",
            "src/deep/b.ts",
            "docs/x.md",
        ]);
        let (d, notes) = denied(
            dir.path(),
            vec![
                rule("tests", &["src/**/*.test.ts"], &[]),
                rule("gone", &["lib/**"], &[]),
            ],
        );
        assert_eq!(d, ["src/a.test.ts", "src/deep/b.test.ts"]);
        assert!(
            notes.iter().any(|n| n.starts_with("lib does not exist")),
            "{notes:?}"
        );
        let (d, _) = denied(dir.path(), vec![rule("docs", &["*/*.md"], &[])]);
        assert_eq!(d, ["docs/x.md"]);
        let (d, _) = denied(dir.path(), vec![rule("deep", &["src/*/**"], &[])]);
        assert_eq!(d, ["src/deep"], "a folder a ** glob owns whole is one path");
    }

    #[test]
    fn a_glob_walk_is_bounded_and_says_so() {
        let files: Vec<String> = (0..MAX_VISIT + 10).map(|i| format!("d/f{i}.md")).collect();
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let dir = tree(&refs);
        let (d, notes) = denied(dir.path(), vec![rule("docs", &["**/*.md"], &[])]);
        assert!(d.len() < MAX_VISIT, "{}", d.len());
        assert!(notes.iter().any(|n| n.contains("stopped")), "{notes:?}");
    }

    #[test]
    fn stream_rules_apply_the_earlier_claim_rule() {
        let held = |stream: &str, session: &str, claimed: u64, owns: &[&str]| Held {
            record: crate::state::LockRecord {
                stream: stream.into(),
                session_id: session.into(),
                owns: owns.iter().map(|s| s.to_string()).collect(),
                claimed_at: crate::time::iso(claimed),
                ..crate::state::tests::record(stream, claimed)
            },
            done: false,
            heartbeat_ms: claimed,
        };
        let early_mine = held("mine", "me", 1_000, &["src/**"]);
        let theirs = held("api", "them", 2_000, &["src/api/**"]);
        let late_mine = held("late", "me", 3_000, &["docs/**"]);
        let live = [&early_mine, &theirs, &late_mine];
        let rules = stream_rules(&live, "me");
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].owner, Owner::Stream("api".into()));
        assert_eq!(rules[0].keep, vec![vec!["src/**".to_string()]]);
        let rules = stream_rules(&live, "them");
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].keep, Vec::<Vec<String>>::new());
        assert_eq!(
            rules[1].keep,
            vec![vec!["src/api/**".to_string()]],
            "api was claimed before 'late'"
        );
    }

    #[test]
    fn protocol_rules_deny_the_client_folder_and_git_hooks_unless_named() {
        let dir = tree(&[
            ".claude/settings.json",
            ".git/hooks/pre-commit",
            ".git/config",
            ".git/HEAD",
            "session-lock/config.json",
            "dist/app.js",
        ]);
        let protected = vec!["session-lock/**".to_string()];
        let outputs = vec!["dist".to_string(), "dist-electron".to_string()];
        let set = compute(&Inputs {
            root: dir.path().to_path_buf(),
            rules: protocol_rules(&protected, &outputs, &[]),
            ..Inputs::default()
        });
        let real = dir.path().canonicalize().unwrap();
        let rel: Vec<(String, Owner)> = set
            .denied
            .iter()
            .map(|d| (rel(&real, d), d.owner.clone()))
            .collect();
        assert_eq!(
            rel,
            [
                (".claude".to_string(), Owner::Planting),
                (".git/config".into(), Owner::Planting),
                (".git/hooks".into(), Owner::Planting),
                ("dist".into(), Owner::Output),
                ("session-lock".into(), Owner::Protocol),
            ]
        );
        assert!(set.notes.is_empty(), "missing protocol files are not news");
        let mine = Held {
            record: crate::state::LockRecord {
                owns: vec![".claude/**".into()],
                ..crate::state::tests::record("cfg", 1)
            },
            done: false,
            heartbeat_ms: 1,
        };
        let set = compute(&Inputs {
            root: dir.path().to_path_buf(),
            rules: protocol_rules(&protected, &[], &[&mine]),
            ..Inputs::default()
        });
        assert!(
            set.denied.iter().all(|d| !d.path.ends_with(".claude")),
            "{:?}",
            set.denied
        );
    }

    #[test]
    fn the_root_s_instruction_files_are_denied_as_the_analysis_refuses_them() {
        let names = ["CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md"];
        let mut files: Vec<&str> = names.to_vec();
        files.extend(["README.md", "docs/CLAUDE.md"]);
        let dir = tree(&files);
        let set = compute(&Inputs {
            root: dir.path().to_path_buf(),
            rules: protocol_rules(&[], &[], &[]),
            ..Inputs::default()
        });
        let real = dir.path().canonicalize().unwrap();
        let denied: Vec<String> = set.denied.iter().map(|d| rel(&real, d)).collect();
        let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        want.sort();
        assert_eq!(
            denied, want,
            "README.md and deeper ones are left to the analysis"
        );
    }

    #[test]
    fn git_s_user_config_is_denied_with_the_rc_files() {
        let home = tree(&[".gitconfig", ".config/git/config", ".gitignore_global"]);
        let set = compute(&Inputs {
            root: home.path().join("repo"),
            fixed: fixed_paths(
                &home.path().join("repo"),
                None,
                None,
                &[],
                Some(home.path()),
            ),
            ..Inputs::default()
        });
        let real = home.path().canonicalize().unwrap();
        let denied: Vec<PathBuf> = set.denied.iter().map(|d| d.path.clone()).collect();
        assert_eq!(denied, [real.join(".config/git"), real.join(".gitconfig")]);
    }

    #[test]
    fn a_worktree_s_git_folder_and_a_hooks_path_are_found() {
        let dir = tree(&["main/.git/config", "main/.git/worktrees/w/commondir"]);
        let main = dir.path().join("main");
        std::fs::write(
            main.join(".git/config"),
            "[core]\n\thooksPath = .husky\n[user]\n\tname = x\n",
        )
        .unwrap();
        std::fs::write(main.join(".git/worktrees/w/commondir"), "../..\n").unwrap();
        let wt = dir.path().join("w");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/w").display()),
        )
        .unwrap();
        let paths: Vec<PathBuf> = git_paths(&wt).into_iter().map(|d| d.path).collect();
        let common = main.join(".git/worktrees/w/../..");
        assert_eq!(
            paths,
            [
                common.join("hooks"),
                common.join("config"),
                wt.join(".husky")
            ]
        );
        let paths: Vec<PathBuf> = git_paths(&main).into_iter().map(|d| d.path).collect();
        assert_eq!(paths, [main.join(".husky")]);
    }
}
