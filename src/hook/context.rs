//! What one guard call knows besides its payload, built once: the repo, its config and paths,
//! the live-lock set, the protocol's frozen folders and who else works in the tree (the last
//! two made only when a check first asks). Every check reads this; none builds its own.

use super::Payload;
use super::decision::{Refusal, Rule};
use crate::config::Config;
use crate::paths::lexical::Rooted;
use crate::paths::{RepoPath, RepoPaths};
use crate::round_index::LockSet;
use crate::state::{Held, Layout, short_id};
use crate::time;
use crate::words::Tool;
use std::cell::OnceCell;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the guard knows about the call besides the payload.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// `CLAUDE_PROJECT_DIR`.
    pub project_dir: Option<String>,
    /// `CLAUDE_PID`: the client process.
    pub client_pid: Option<u32>,
    /// The per-user state folder (`SESSION_LOCK_HOME` or the platform's).
    pub state_home: Option<PathBuf>,
    /// The folder the guard binary runs from: frozen like the protocol files.
    pub binary_dir: Option<PathBuf>,
    /// Claude Code's user folders whose settings files are frozen (`$CLAUDE_CONFIG_DIR`, and
    /// `~/.claude`).
    pub user_settings_dirs: Vec<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            project_dir: std::env::var("CLAUDE_PROJECT_DIR")
                .ok()
                .filter(|s| !s.is_empty()),
            client_pid: std::env::var("CLAUDE_PID")
                .ok()
                .and_then(|p| p.trim().parse().ok()),
            state_home: crate::sessions::state_home(),
            binary_dir: std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf)),
            user_settings_dirs: crate::sessions::claude::config_dir()
                .into_iter()
                .chain(crate::sessions::home_dir().map(|h| h.join(".claude")))
                .collect(),
        }
    }
}

/// The folders outside the repo that are frozen like the protocol files (`env`'s), each as a
/// path map: making one resolves its folder's real path, a few system calls paid once a call
/// rather than once per write target of a command.
struct FrozenDirs {
    /// The guard binary's folder; `None` when it holds the repo (then it is not the suite's).
    binary: Option<RepoPaths>,
    user_settings: Vec<RepoPaths>,
    state_home: Option<RepoPaths>,
}

impl FrozenDirs {
    fn new(env: &Env, root: &Path, cwd: &str) -> FrozenDirs {
        let map = |d: &Path| RepoPaths::new(d, crate::paths::default_case_insensitive());
        let root = root.to_string_lossy();
        FrozenDirs {
            binary: env
                .binary_dir
                .as_deref()
                .map(map)
                .filter(|b| !under_dir(b, &root, cwd, Rooted::CurrentDrive)),
            user_settings: env.user_settings_dirs.iter().map(|d| map(d)).collect(),
            state_home: env.state_home.as_deref().map(map),
        }
    }
}

/// The settings files Claude Code reads from its user folder (`$CLAUDE_CONFIG_DIR`, `~/.claude`).
pub const USER_SETTINGS: [&str; 2] = ["settings.json", "settings.local.json"];

/// The repo, its config and paths, the live locks: resolved once per call.
pub struct Ctx {
    pub root: PathBuf,
    pub layout: Layout,
    pub config: Config,
    pub paths: RepoPaths,
    pub now: u64,
    /// What the user must be told once per session (a config that could not be loaded, …).
    pub notices: Vec<super::notices::Notice>,
    /// The locks of the round as this call sees them (the caller's heartbeats moved, the
    /// lease mirror's and corrupt locks' stand-ins added by the pipeline).
    pub locks: LockSet,
    /// The frozen folders outside the repo, made at the call's first write check.
    frozen: OnceCell<FrozenDirs>,
    /// Who else works in the tree, asked only when a shared-tree rule fires.
    presence: OnceCell<crate::sessions::Presence>,
    /// Decide without writing anything or starting anything (`guard explain`): no claim is
    /// recorded, no heartbeat moved, no notice marked shown, the lease mirror only read.
    pub dry: bool,
}

impl Ctx {
    /// The context of the repo at `root`, its locks loaded as they stand.
    pub fn new(root: PathBuf, config: Config) -> Ctx {
        let paths = RepoPaths::new(&root, config.case_insensitive());
        let layout = Layout::new(&root);
        Ctx {
            locks: LockSet::load(&layout),
            layout,
            root,
            config,
            paths,
            now: time::now_ms(),
            notices: Vec::new(),
            frozen: OnceCell::new(),
            presence: OnceCell::new(),
            dry: false,
        }
    }

    /// The same context at another instant (tests of throttles and staleness).
    pub fn at(mut self, now: u64) -> Ctx {
        self.now = now;
        self
    }

    pub fn stale_ms(&self) -> u64 {
        self.config.heartbeat_stale_ms()
    }

    /// True when any lock of the call's set is live (else no write is anyone's).
    pub fn any_live(&self) -> bool {
        self.locks.any_live(self.now, self.stale_ms())
    }

    /// What makes the write target part of the protocol, or `None`: a repo path under
    /// `protectedPaths`, the folder the guard binary runs from, a user-scope settings file or
    /// the state home. A folder that holds the whole repo (the guard copied to the repo root) is
    /// not the suite's, or every file would be frozen.
    pub fn protected(
        &self,
        env: &Env,
        cwd: &str,
        raw: &str,
        how: Rooted,
        rel: Option<&str>,
    ) -> Option<String> {
        if let Some(rel) = rel
            && self.config.is_protected(rel)
        {
            return Some(rel.to_string());
        }
        if let Some(rel) = rel
            && let Some(why) = instructions(rel, self.paths.case_insensitive())
        {
            return Some(format!("{rel} ({why})"));
        }
        let frozen = self
            .frozen
            .get_or_init(|| FrozenDirs::new(env, &self.root, cwd));
        if frozen
            .binary
            .as_ref()
            .is_some_and(|b| under_dir(b, raw, cwd, how))
        {
            return Some(rel.unwrap_or(raw).to_string());
        }
        // User-scope Claude Code settings: `disableAllHooks` there switches the guard off too.
        for paths in &frozen.user_settings {
            if let RepoPath::Inside(f) = paths.locate_as(cwd, raw, how)
                && USER_SETTINGS.iter().any(|s| f.eq_ignore_ascii_case(s))
            {
                return Some(format!("{raw} (user-scope Claude Code settings)"));
            }
        }
        // The per-user state home: the session registry that says who else works here.
        if let Some(home) = &frozen.state_home
            && under_dir(home, raw, cwd, how)
        {
            return Some(format!("{raw} (the session-lock state home)"));
        }
        None
    }

    /// Who else works in this tree, asked once per call.
    pub fn presence(&self, p: &Payload) -> &crate::sessions::Presence {
        self.presence.get_or_init(|| {
            let external = std::env::var_os("SESSION_LOCK_LIVE_FILE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    self.config
                        .live_sessions_file
                        .as_ref()
                        .map(|f| self.root.join(f))
                });
            crate::sessions::presence(
                &self.root,
                &p.session_id,
                external.as_deref(),
                self.config.case_insensitive(),
            )
        })
    }
}

fn under_dir(paths: &RepoPaths, raw: &str, cwd: &str, how: Rooted) -> bool {
    !matches!(paths.locate_as(cwd, raw, how), RepoPath::Outside)
}

/// A lock's holder as a refusal names it: its session (and host, for another machine's lease)
/// and heartbeat, or why the holder cannot be known.
pub fn describe(held: &Held, now: u64) -> String {
    if held.record.session_id.is_empty() {
        // A stand-in for a holder that cannot be known: it says why.
        return held.record.cwd.clone();
    }
    let mut s = format!("session {}", short_id(&held.record.session_id));
    if let Some(host) = crate::leases::mirror::host_of(held) {
        let _ = write!(s, " on host {host}");
    }
    let _ = write!(s, ", heartbeat {} ago", time::age(held.age_ms(now)));
    if held.orphaned() {
        s.push_str(", its client process is gone");
    }
    s
}

/// Stand-ins for corrupt lock files ([`Held::stand_in`]), with the stream's plan's `owns`.
pub fn corrupt_stand_ins(ctx: &Ctx, bad: &[crate::state::BadLock]) -> Vec<Held> {
    if bad.is_empty() {
        return Vec::new();
    }
    let Ok((streams, _)) =
        crate::plan_cache::load_each(&ctx.root, &ctx.config.plan_glob, &ctx.layout)
    else {
        return Vec::new();
    };
    bad.iter()
        .filter_map(|b| {
            let name = b.stream();
            let plan = streams.iter().find(|s| s.name == name)?;
            Some(Held::stand_in(
                &name,
                plan.owns.clone(),
                &plan.plan,
                plan.milestone,
                ctx.now,
                b.why(),
            ))
        })
        .collect()
}

/// Stand-ins for the streams other machines might hold when the lease mirror cannot be read
/// (`why`, naming the file): every stream with a plan and no live lock here, with its plan's
/// `owns`. The guard cannot tell which of them another machine holds, so all stay protected
/// until a refresh from `remote` rewrites the mirror. Read only on that failure.
pub fn mirror_stand_ins(ctx: &Ctx, why: &str, remote: &str) -> Vec<Held> {
    let Ok((streams, _)) =
        crate::plan_cache::load_each(&ctx.root, &ctx.config.plan_glob, &ctx.layout)
    else {
        return Vec::new();
    };
    let stale = ctx.config.heartbeat_stale_ms();
    let here: Vec<String> = ctx
        .locks
        .entries()
        .into_iter()
        .filter(|e| !e.done && ctx.now.saturating_sub(e.heartbeat_ms) < stale)
        .map(|e| e.stream)
        .collect();
    streams
        .iter()
        .filter(|s| !here.contains(&s.name))
        .map(|s| {
            Held::stand_in(
                &s.name,
                s.owns.clone(),
                &s.plan,
                s.milestone,
                ctx.now,
                format!(
                    "{why}: the guard cannot tell whether another machine holds stream '{}', so it protects the stream's files until the mirror is refreshed from remote '{remote}' (status --refresh-leases)",
                    s.name
                ),
            )
        })
        .collect()
}

/// One tool call as the checks read it: the payload, the process's environment and, for a
/// Bash or PowerShell call, its command analysed once.
pub struct Call<'a> {
    pub p: &'a Payload,
    pub env: &'a Env,
    pub command: Option<Command>,
}

/// Files in the repo that other sessions, git or the release checks run, or that the clients
/// read as instructions: frozen like `protectedPaths` (kept by a stream whose plan names them),
/// whatever the config says, since writing one acts in every other session. What it is, for the
/// refusal.
pub fn instructions(rel: &str, ci: bool) -> Option<&'static str> {
    let lower;
    let rel = if ci {
        lower = rel.to_ascii_lowercase();
        lower.as_str()
    } else {
        rel
    };
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let under = |d: &str| rel.strip_prefix(d).is_some_and(|r| r.starts_with('/'));
    let name_is = |n: &str| name.eq_ignore_ascii_case(n) && (ci || name == n);
    if under(".git/hooks") || rel == ".git/config" || rel == ".git/info/attributes" {
        Some("git runs what it holds in every session's commands")
    } else if [
        ".claude/agents",
        ".claude/commands",
        ".claude/skills",
        ".claude/hooks",
        ".claude/output-styles",
        ".codex",
        ".gemini",
    ]
    .iter()
    .any(|d| under(d))
    {
        Some("the clients' agents, commands, skills, hooks and settings of every session")
    } else if ["CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md"]
        .iter()
        .any(|n| name_is(n))
    {
        Some("every session's client reads it as instructions")
    } else if dir == "node_modules/.bin" || dir.ends_with("/node_modules/.bin") {
        Some("package scripts and the release checks run what it holds")
    } else {
        None
    }
}

/// A shell tool's command: where it runs and what the analysis made of it.
pub struct Command {
    pub here: crate::rules::CommandContext,
    /// Not dropped: a guard call is one short process, and the analysis of a long script is
    /// thousands of small allocations that the exit hands back at once, where dropping them
    /// would free them one by one (about a tenth of such a call's instructions).
    pub analysis: std::mem::ManuallyDrop<crate::shell::Analysis>,
}

impl<'a> Call<'a> {
    /// The call, its command (if it is a shell tool's) analysed; a command longer or deeper
    /// than the analysis can take whole is refused.
    pub fn new(ctx: &Ctx, p: &'a Payload, env: &'a Env) -> Result<Call<'a>, Refusal> {
        let command = match dialect_of(&p.tool_name) {
            Some(shell) => Some(Command::analyse(
                ctx,
                &p.cwd,
                p.input_str("command").unwrap_or_default(),
                shell,
            )?),
            // A git MCP tool is judged as the git command it runs.
            None => match p
                .mcp_tool()
                .and_then(|_| crate::rules::mcp_git_command(p.tool_name.as_str(), &p.tool_input))
            {
                Some((text, dir)) => {
                    let cwd = match dir {
                        Some(d) if crate::paths::lexical::is_absolute(&d) => d,
                        Some(d) => Path::new(&p.cwd).join(d).to_string_lossy().into_owned(),
                        None => p.cwd.clone(),
                    };
                    Some(Command::analyse(
                        ctx,
                        &cwd,
                        &text,
                        crate::rules::Shell::Bash,
                    )?)
                }
                None => None,
            },
        };
        Ok(Call { p, env, command })
    }
}

impl Command {
    /// `text` as `shell` runs it in `cwd` of the repo.
    pub fn analyse(
        ctx: &Ctx,
        cwd: &str,
        text: &str,
        shell: crate::rules::Shell,
    ) -> Result<Command, Refusal> {
        let dialect = match shell {
            crate::rules::Shell::Bash => crate::shell::Dialect::Posix,
            crate::rules::Shell::PowerShell => crate::shell::Dialect::PowerShell,
        };
        let here = crate::rules::CommandContext::new(cwd, ctx.root.display().to_string())
            .with_shell(shell);
        let analysis = (text.len() <= crate::shell::MAX_INPUT_BYTES).then(|| {
            crate::shell::analyze_with(text, dialect, &super::script_files::RepoFiles::new(&here))
        });
        let Some(analysis) = analysis.filter(|a| !a.truncated) else {
            return Err(Refusal::new(
                Rule::TooLarge,
                format!(
                    "session-lock: this command is longer or more deeply nested than the guard can check ({} KiB of text at most); split it into several smaller commands",
                    crate::shell::MAX_INPUT_BYTES >> 10
                ),
            ));
        };
        if let Some(name) = analysis.unreadable.first() {
            return Err(Refusal::new(
                Rule::Unreadable,
                format!(
                    "session-lock: this command runs `{name}`, which is not a regular file (a FIFO, a device or a socket): what it feeds the shell cannot be checked before it runs. Run a script from a regular file"
                ),
            )
            .with_path(name.clone()));
        }
        Ok(Command {
            here,
            analysis: std::mem::ManuallyDrop::new(analysis),
        })
    }
}

/// The shell a command tool runs its command in.
fn dialect_of(tool: &Tool) -> Option<crate::rules::Shell> {
    match tool {
        Tool::Bash => Some(crate::rules::Shell::Bash),
        Tool::PowerShell => Some(crate::rules::Shell::PowerShell),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::instructions;

    #[test]
    fn the_analysis_refuses_every_file_the_floor_plants_a_deny_on() {
        let protected = crate::config::Config::default().protected_paths;
        for path in crate::floor::set::REPO_PLANTING {
            if protected.iter().any(|p| p == path) {
                continue; // refused as a protected path, by the default config
            }
            let path = path.trim_end_matches("/**");
            let probe = if path.starts_with(".claude") {
                ".claude/agents/x.md".to_string()
            } else if path.ends_with("hooks") {
                format!("{path}/pre-commit")
            } else {
                path.to_string()
            };
            assert!(
                instructions(&probe, false).is_some(),
                "the analysis lets {probe} through though the floor denies it"
            );
        }
        assert!(instructions("README.md", false).is_none());
        assert!(instructions("docs/CLAUDE.md", false).is_some());
    }
}
