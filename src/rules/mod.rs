#![warn(missing_docs)]

//! Command rules: which shell commands and MCP calls the guard blocks, and why.
//! Pure: the rules read no files, spawn nothing and read no clock.
//!
//! A rule is a stable id ([`table`]), a scope ([`Scope`]) and a matcher over the argv
//! of one segment of the [`shell`](crate::shell) analysis. Matchers look at words, so a
//! "safe" segment never excuses a destructive one in the same chain, and text inside
//! quotes (commit messages, grep patterns, `echo` arguments, inert heredoc prose) never
//! matches. A bridge HTTP call to a plugin toggle/install/uninstall path is checked for the
//! protected plugin id wherever data reaches the request: its words (quote-joined,
//! percent- and JSON-unescaped), its heredocs and earlier pipeline stages, and assignments
//! or file writes earlier in the command or the scripts carrying it; text an `echo` only
//! prints, and comments, do not count. URLs are compared as the server routes them
//! (`/./`, `..`, `//` and percent escapes resolved, curl's `{a,b}` globs expanded).
//!
//! Segments inside a `docker run` whose mounts cannot reach the host (named volumes,
//! `:ro` binds) are exempt; everything else in the command is not. A container sharing
//! the host's network or pid namespace (`--network host`, `--pid=host`) stays exempt from
//! the file rules only: `app.restart` and `plugin.protected-toggle` still apply to it.
//!
//! Decisions (details in each matcher module):
//! - Only `git.head-change` and `hooks.self-disarm` are [`Scope::WhenShared`]; whether another live session works
//!   in the tree is the hook's question, not the rules'. `git -C <elsewhere>` is not
//!   told apart from this tree: the rule still fires.
//! - `git reset` fires for `--hard`/`--merge`/`--keep` or a lone commit-ish operand
//!   other than `HEAD`; path resets and plain `git reset` only touch the index.
//!   `git checkout -b <new>`/`git switch -c <new>` without a start point are allowed;
//!   `git worktree remove` is allowed (another tree); `git add -u` and `git commit -a`
//!   count as `git.add-all`; dry runs (`-n`) never fire.
//! - Deletion targets resolve lexically (see `fs.rs`): `$PWD`, `${PWD}` and `$(pwd)`
//!   stand for the known cwd; other dynamic prefixes fire when their literal tail names
//!   an output directory. `git clean -x|-X` and `rsync --delete` count as deletions.
//!   Plain `rm` of a file (no `-r`), `mv dist …` and package scripts that delete
//!   (`npm run clean`) are not seen.
//! - Build scripts fire whatever the cwd or `--prefix`: `npm run build` is blocked
//!   outright, as in the protocol's table, even for a plugin's own package.
//! - An `electron` head fires only with an operand (`electron .`); `--version` is fine.
//! - Programs in other languages (`node -e`, `python -c`, `python - <<EOF`) are read by
//!   the shell analysis's heuristic (`shell::interp`): their process, file and HTTP calls
//!   with literal arguments reach the rules as commands; anything built at run time does not.

mod app;
pub mod args;
mod config;
pub mod explain;
mod fs;
mod git;
mod hooks;
mod mcp;
pub use mcp::git_command as mcp_git_command;
pub use mcp::name_words as mcp_name_words;
pub mod table;

pub use config::{RulesConfig, RulesError, compile};
pub use explain::explain;
pub use table::{RuleId, RuleInfo, Scope};

use std::cell::OnceCell;

use crate::paths::lexical::{Anchor, Root, Rooted, anchor, is_absolute, join_as, normalize, parse};
use crate::shell::pm::{PmCall, pm_call};
use crate::shell::programs::{self, Program};
use crate::shell::word::{base_lowered, command_name};
use crate::shell::{Analysis, Dialect, DirStep, Segment, Word, analyze};

/// Longest segment text quoted in a hit.
const MAX_SEGMENT_TEXT: usize = 200;

/// The compiled rules (see [`compile`]).
#[derive(Clone, Debug)]
pub struct Rules {
    pub(crate) app_processes: Vec<String>,
    pub(crate) restart_scripts: Vec<String>,
    pub(crate) relaunch_paths: Vec<String>,
    pub(crate) emit_projects: Vec<String>,
    pub(crate) build_commands: Vec<Vec<String>>,
    pub(crate) build_scripts: Vec<String>,
    pub(crate) protected_plugins: Vec<String>,
    pub(crate) plugin_paths: Vec<String>,
    pub(crate) mcp_plugin_tools: Vec<String>,
    pub(crate) output_dirs: Vec<Vec<String>>,
    pub(crate) mcp_command_tools: Vec<String>,
    pub(crate) disabled: Vec<RuleId>,
}

/// Which tool ran the command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shell {
    /// The `Bash` tool.
    #[default]
    Bash,
    /// The `PowerShell` tool.
    PowerShell,
}

impl Shell {
    fn dialect(self) -> Dialect {
        match self {
            Shell::Bash => Dialect::Posix,
            Shell::PowerShell => Dialect::PowerShell,
        }
    }
}

/// Where a command runs: the payload's `cwd` and the repository root, both absolute
/// (POSIX or Windows forms).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandContext {
    /// The shell's working directory (the payload `cwd`).
    pub cwd: String,
    /// The repository root.
    pub repo_root: String,
    /// The tool that runs the command.
    pub shell: Shell,
}

impl CommandContext {
    /// A `Bash` command run in `cwd` of the repository at `repo_root`.
    pub fn new(cwd: impl Into<String>, repo_root: impl Into<String>) -> CommandContext {
        CommandContext {
            cwd: cwd.into(),
            repo_root: repo_root.into(),
            shell: Shell::Bash,
        }
    }

    /// The same context for another tool.
    pub fn with_shell(mut self, shell: Shell) -> CommandContext {
        self.shell = shell;
        self
    }
}

/// One rule matching one segment (or one MCP call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The rule id (`git.head-change`).
    pub rule: String,
    /// When it blocks.
    pub scope: Scope,
    /// The offending segment, re-rendered on one line (the tool name for MCP calls).
    pub segment: String,
    /// One line for the model: rule id, segment, why it is blocked, what to do instead.
    pub reason: String,
    /// What to do instead.
    pub instead: String,
}

/// What a matcher found: the detail of the reason (`runs the `dev` package script (npm)`), and,
/// for a form the rule's general texts do not fit, the harm and the alternative that do
/// (`npm run start` starts an app, it is no build).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub detail: String,
    pub why: Option<&'static str>,
    pub instead: Option<String>,
}

impl From<String> for Found {
    fn from(detail: String) -> Found {
        Found {
            detail,
            why: None,
            instead: None,
        }
    }
}

impl Found {
    /// The harm of this form, in place of the rule's.
    pub fn because(mut self, why: &'static str) -> Found {
        self.why = Some(why);
        self
    }

    /// The alternative to this form, in place of the rule's.
    pub fn instead(mut self, instead: impl Into<String>) -> Found {
        self.instead = Some(instead.into());
        self
    }
}

impl Hit {
    fn new(id: RuleId, segment: String, found: Found) -> Hit {
        let info = id.info();
        let why = found.why.unwrap_or(info.why);
        let instead = found.instead.unwrap_or_else(|| info.instead.to_string());
        let reason = format!(
            "{}: `{}` {}; {}. Instead: {}.",
            info.id, segment, found.detail, why, instead
        );
        Hit {
            rule: info.id.to_string(),
            scope: info.scope,
            segment,
            reason,
            instead,
        }
    }
}

/// The normalized root and cwd, and the Windows drive (or share) the cwd is on.
struct Paths {
    root: String,
    cwd: String,
    home: Option<Root<'static>>,
}

/// The context, normalized on first use (most commands never need a path).
pub(crate) struct Env<'c> {
    ctx: &'c CommandContext,
    paths: OnceCell<Paths>,
}

impl<'c> Env<'c> {
    pub(crate) fn new(ctx: &'c CommandContext) -> Env<'c> {
        Env {
            ctx,
            paths: OnceCell::new(),
        }
    }

    fn paths(&self) -> &Paths {
        self.paths.get_or_init(|| {
            let root = normalize(&self.ctx.repo_root);
            // The cwd as the client names it: relative to the root, on its drive when it has none.
            let cwd = join_as(&root, &self.ctx.cwd, Rooted::CurrentDrive, None);
            let home = parse(&cwd).into_owned().root.filter(|r| *r != Root::Posix);
            Paths { root, cwd, home }
        })
    }

    /// The normalized repository root.
    pub fn root(&self) -> &str {
        &self.paths().root
    }

    /// How this command's own shell reads a path rooted without a drive.
    pub fn rooted(&self) -> Rooted {
        self.ctx.shell.dialect().rooted()
    }

    /// `p` read from the absolute, normalized `dir` as a shell that reads rooted paths `how`
    /// (see [`Rooted`]), normalized: the one way command paths become absolute.
    pub fn read(&self, dir: &str, p: &str, how: Rooted) -> String {
        join_as(dir, p, how, self.paths().home.as_ref())
    }

    /// `p` as an absolute, normalized path, read from `base` (an absolute `p` from the cwd when the
    /// base is not known); `None` for a relative `p` where the base is not known.
    pub fn absolute(&self, base: &Base, p: &str, how: Rooted) -> Option<String> {
        match base {
            Base::Known(dir) => Some(self.read(dir, p, how)),
            _ if is_absolute(p) => Some(self.read(&self.paths().cwd, p, how)),
            Base::Outside | Base::Unknown => None,
        }
    }

    /// The last component of the root, lowercased (`~/<name>/dist` names this repo).
    pub fn repo_name(&self) -> String {
        self.root()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    }

    /// The directory a segment runs in, following its lexical `cd` steps.
    pub fn base(&self, seg: &Segment) -> Base {
        self.base_as(&seg.dirs, seg.dialect.rooted())
    }

    /// Where a segment runs, and how it reads rooted paths.
    pub fn at(&self, seg: &Segment) -> At {
        At {
            base: self.base(seg),
            how: seg.dialect.rooted(),
        }
    }

    /// The directory the `cd` steps `dirs` lead to from the cwd, read by this command's shell.
    pub fn base_of(&self, dirs: &[DirStep]) -> Base {
        self.base_as(dirs, self.rooted())
    }

    fn base_as(&self, dirs: &[DirStep], how: Rooted) -> Base {
        let mut b = Base::Known(self.paths().cwd.clone());
        for step in dirs {
            b = match step {
                DirStep::To(p) => self.step_into(b, p, how),
                DirStep::Dynamic(p) => match anchor(p) {
                    Some((_, rest)) if rest.contains(['$', '`', '%']) => Base::Unknown,
                    Some((Anchor::Cwd, rest)) => self.step_into(b, &format!(".{rest}"), how),
                    Some((Anchor::Root, rest)) => Base::Known(self.read(
                        self.root(),
                        rest.trim_start_matches(['/', '\\']),
                        how,
                    )),
                    Some((Anchor::Temp, _)) => Base::Outside,
                    _ => Base::Unknown,
                },
                DirStep::Unknown => Base::Unknown,
            };
        }
        b
    }

    fn step_into(&self, b: Base, p: &str, how: Rooted) -> Base {
        match self.absolute(&b, p, how) {
            Some(dir) => Base::Known(dir),
            None => b,
        }
    }
}

/// Where a segment runs ([`Base`]) and how its shell reads a path rooted without a drive.
pub(crate) struct At {
    /// The directory.
    pub base: Base,
    /// Git Bash's MSYS reading, or the current drive.
    pub how: Rooted,
}

/// Where a segment runs, as far as the command text tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// This absolute, normalized directory.
    Known(String),
    /// Somewhere outside the repository (a temporary directory).
    Outside,
    /// Not known (`cd "$X"`, `cd -`).
    Unknown,
}

/// One segment as the matchers see it.
pub(crate) struct View<'a> {
    pub an: &'a Analysis,
    pub seg: &'a Segment,
    pub argv: &'a [Word],
    pub args: &'a [Word],
    /// [`command_name`] of the head (`git`, `taskkill`, `remove-item`).
    pub name: std::borrow::Cow<'a, str>,
    /// Lowercased basename of the head with its extension (`run.bat`).
    pub base: std::borrow::Cow<'a, str>,
    /// The segment is PowerShell.
    pub ps: bool,
    /// What a package-manager head runs.
    pub pm: Option<PmCall>,
    /// A git head's subcommand and its arguments.
    pub git: Option<(String, &'a [Word])>,
    /// The head's row of the program table.
    pub prog: Option<&'static Program>,
}

type Matcher = fn(&Rules, &View, &Env) -> Option<Found>;

/// The matchers; those whose rule's general texts fit every form they find give a bare detail.
const MATCHERS: [(RuleId, Matcher); 9] = [
    (RuleId::AppRestart, |r, v, e| {
        app::restart(r, v, e).map(Found::from)
    }),
    (RuleId::EmitOverRunning, app::emit),
    (RuleId::BuildOutsideRenderer, app::build),
    (RuleId::PluginProtectedToggle, |r, v, e| {
        app::plugin_toggle(r, v, e).map(Found::from)
    }),
    (RuleId::RmAppOutput, |r, v, e| {
        fs::rm_app_output(r, v, e).map(Found::from)
    }),
    (RuleId::GitAddAll, git::add_all),
    (RuleId::GitHeadChange, git::head_change),
    (RuleId::HooksSelfDisarm, hooks::self_disarm),
    (RuleId::HooksStartUnguarded, hooks::start_unguarded),
];

/// Rules about the running app itself (its processes, its bridge), which a container
/// sharing the host's network or pid namespace reaches whatever it mounts.
fn reaches_app(id: RuleId) -> bool {
    matches!(id, RuleId::AppRestart | RuleId::PluginProtectedToggle)
}

/// A flag that makes the program print and exit (`--help`, `--version`, `tsc --showConfig`),
/// before any `--` (after it the words go to a script).
fn inert_flags(args: &[Word]) -> bool {
    args.iter().take_while(|w| w.text != "--").any(|w| {
        !w.quoted
            && matches!(
                w.text.as_str(),
                "--help" | "--version" | "--showConfig" | "--listFilesOnly"
            )
    })
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` where it was cut.
fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

impl Rules {
    /// Whether `rule` is switched on.
    pub fn enabled(&self, rule: RuleId) -> bool {
        !self.disabled.contains(&rule)
    }

    /// Every hit of `command` run as `ctx` describes, deduplicated.
    pub fn check_command(&self, command: &str, ctx: &CommandContext) -> Vec<Hit> {
        let an = analyze(command, ctx.shell.dialect());
        let mut out: Vec<Hit> = Vec::new();
        for (_, h) in self.check_analysis(&an, ctx) {
            if !out
                .iter()
                .any(|o| o.rule == h.rule && o.segment == h.segment)
            {
                out.push(h);
            }
        }
        out
    }

    /// Hits per segment index of an existing analysis.
    pub fn check_analysis(&self, an: &Analysis, ctx: &CommandContext) -> Vec<(usize, Hit)> {
        let env = Env::new(ctx);
        let mut out = Vec::new();
        // Handing a command to a server comes after what the command itself does, which
        // says more (a `git checkout` sent to tmux is a HEAD change first).
        let mut servers = Vec::new();
        for (i, seg) in an.segments.iter().enumerate() {
            // A sandboxed container keeps the host's files; with the host's network or pid
            // namespace it still reaches the running app.
            let app_only = seg.sandboxed && seg.host_app;
            if !seg.sandboxed
                && self.enabled(RuleId::HooksOutsideSession)
                && let Some(found) = hooks::outside_session(seg)
            {
                servers.push((
                    i,
                    Hit::new(
                        RuleId::HooksOutsideSession,
                        clip(seg.render(), MAX_SEGMENT_TEXT),
                        found,
                    ),
                ));
            }
            if (seg.sandboxed && !app_only) || seg.argv.is_empty() || inert_flags(&seg.argv[1..]) {
                continue;
            }
            let head = &seg.argv[0].text;
            let name = command_name(head);
            let view = View {
                an,
                seg,
                argv: &seg.argv,
                args: &seg.argv[1..],
                base: base_lowered(head),
                ps: seg.dialect == Dialect::PowerShell,
                pm: pm_call(&seg.argv),
                git: if name == "git" {
                    git::git_sub(&seg.argv)
                } else {
                    None
                },
                prog: programs::get(&name),
                name,
            };
            for (id, matcher) in MATCHERS {
                if !self.enabled(id) || (app_only && !reaches_app(id)) {
                    continue;
                }
                if let Some(found) = matcher(self, &view, &env) {
                    out.push((i, Hit::new(id, clip(seg.render(), MAX_SEGMENT_TEXT), found)));
                }
            }
        }
        out.extend(servers);
        out
    }

    /// Hits of an MCP tool call (`mcp__<server>__<tool>`; the tool part is matched).
    pub fn check_mcp(&self, tool_name: &str, input: &serde_json::Value) -> Vec<Hit> {
        mcp::check(self, tool_name, input, false)
    }

    /// Like [`Rules::check_mcp`]; `lookalike_ok` when the config allows the tool's name (see
    /// `mcpLookalikeAllow`): only the fixed lists block it then.
    pub fn check_mcp_allowing(
        &self,
        tool_name: &str,
        input: &serde_json::Value,
        lookalike_ok: bool,
    ) -> Vec<Hit> {
        mcp::check(self, tool_name, input, lookalike_ok)
    }
}

#[cfg(test)]
mod tests;
