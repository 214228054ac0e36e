//! The rule table: stable ids, scope, and the texts a blocked model reads.
//!
//! | id | scope | what it blocks |
//! |---|---|---|
//! | `app.restart` | always | killing/restarting/relaunching the running app |
//! | `app.emit-over-running` | always | `tsc -p tsconfig.node.json` without `--noEmit` |
//! | `build.outside-build-renderer` | always | `vite build`, `npm run build\|dev\|start\|headless` … |
//! | `plugin.protected-toggle` | always | toggling/installing/uninstalling `ai-chat` |
//! | `rm.app-output` | always | recursive deletion of `dist/`, `dist-electron/` |
//! | `git.add-all` | always | `git add .`/`-A`/`--all`/`-u`, `git commit -a`, whole-tree pathspecs |
//! | `git.head-change` | when shared | checkout, switch, reset, stash, rebase, merge, … |
//! | `mcp.arbitrary-command` | always | MCP tools that run commands or kill processes |
//! | `hooks.self-disarm` | when shared | `guard install`/`uninstall`, by any path or launcher |
//! | `hooks.start-unguarded` | always | `claude --bare`, `--settings` switching hooks off, `--setting-sources` without user and project |
//! | `hooks.outside-session` | when shared | commands handed to a running server (tmux, screen -X, at, systemd-run) |

/// When a hit blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Always: it breaks the running app or sweeps up other sessions' work.
    Always,
    /// Only when another live session works in this tree (the hook decides).
    WhenShared,
}

impl Scope {
    /// `always` / `when shared`.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Always => "always",
            Scope::WhenShared => "when shared",
        }
    }
}

/// A rule's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleId {
    /// `app.restart`
    AppRestart,
    /// `app.emit-over-running`
    EmitOverRunning,
    /// `build.outside-build-renderer`
    BuildOutsideRenderer,
    /// `plugin.protected-toggle`
    PluginProtectedToggle,
    /// `rm.app-output`
    RmAppOutput,
    /// `git.add-all`
    GitAddAll,
    /// `git.head-change`
    GitHeadChange,
    /// `mcp.arbitrary-command`
    McpArbitraryCommand,
    /// `hooks.self-disarm`
    HooksSelfDisarm,
    /// `hooks.start-unguarded`
    HooksStartUnguarded,
    /// `hooks.outside-session`
    HooksOutsideSession,
}

/// The fixed texts of a rule.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule these texts belong to (entries are looked up by it, not by position).
    pub rule: RuleId,
    /// Stable id, used in config (`disabled`), hits and the case corpus.
    pub id: &'static str,
    /// When it blocks.
    pub scope: Scope,
    /// What it matches, for documentation and `explain`.
    pub what: &'static str,
    /// Why that is harmful, as the second half of a hit's reason.
    pub why: &'static str,
    /// What to do instead.
    pub instead: &'static str,
}

const INFO: [RuleInfo; 11] = [
    RuleInfo {
        rule: RuleId::AppRestart,
        id: "app.restart",
        scope: Scope::Always,
        what: "killing, restarting or relaunching the running app (taskkill/Stop-Process/kill of \
               the app process, run.bat, dev-rebuild, `electron .`, the bridge's /app/relaunch)",
        why: "every ai-chat session runs inside the app, so restarting it ends all of them",
        instead: "leave the app running: check renderer changes with `build-renderer` and a window \
                  reload, plugin backends with `reload-plugin <id>`, and \
                  put main-process checks on the plan's after-restart checklist",
    },
    RuleInfo {
        rule: RuleId::EmitOverRunning,
        id: "app.emit-over-running",
        scope: Scope::Always,
        what: "`tsc -p tsconfig.node.json` without `--noEmit`",
        why: "it rewrites dist-electron/, which the running app holds open, and breaks it under \
              every session",
        instead: "typecheck with `tsc -p tsconfig.node.json --noEmit`; main-process output is rebuilt \
                  by the restart at the end of the round",
    },
    RuleInfo {
        rule: RuleId::BuildOutsideRenderer,
        id: "build.outside-build-renderer",
        scope: Scope::Always,
        what: "builds outside build-renderer (`vite build`, `npm|pnpm|yarn|bun run \
               build|dev|start|headless` and their `:suffix` variants, `npm start`)",
        why: "two builds at once mix their output in dist/, which the running app serves",
        instead: "use `build-renderer` (or `build-renderer -- <command>`), which serializes builds \
                  through build.lock; packaging builds wait for the end of the round",
    },
    RuleInfo {
        rule: RuleId::PluginProtectedToggle,
        id: "plugin.protected-toggle",
        scope: Scope::Always,
        what: "toggling, installing or uninstalling the protected plugin (ai-chat) through the \
               bridge or `live_plugin_toggle`",
        why: "ai-chat's deactivate() disposes every Claude session, this one included",
        instead: "leave ai-chat loaded; its backend changes wait for the restart at the end of the \
                  round (other plugins reload with `reload-plugin <id>`)",
    },
    RuleInfo {
        rule: RuleId::RmAppOutput,
        id: "rm.app-output",
        scope: Scope::Always,
        what: "recursive deletion of the app output directories (dist, dist-electron)",
        why: "the running app reads its output directories, so deleting them breaks it under every \
              session",
        instead: "do not delete app output: rebuild the renderer with `build-renderer`, which \
                  replaces dist/ safely, and leave dist-electron/ to the end-of-round restart",
    },
    RuleInfo {
        rule: RuleId::GitAddAll,
        id: "git.add-all",
        scope: Scope::Always,
        what: "`git add .`, `git add -A|--all|-u`, `git commit -a`, and `git add`/`git commit` of \
               a pathspec that resolves to the whole tree (`src/..`, `\"$PWD\"`, `../<repo>`, `:/`)",
        why: "it stages other sessions' half-done edits together with yours",
        instead: "stage the paths you own explicitly: `git add <path>...`",
    },
    RuleInfo {
        rule: RuleId::GitHeadChange,
        id: "git.head-change",
        scope: Scope::WhenShared,
        what: "git commands that move HEAD or rewrite the working tree (checkout, switch, \
               `checkout -b`/`switch -c` included, reset --hard or to a commit, stash, rebase, \
               merge, pull, clean, restore, cherry-pick, revert, am, bisect, sparse-checkout, \
               update-ref HEAD, symbolic-ref HEAD, branch -m)",
        why: "another session works in this tree and would lose its uncommitted work",
        instead: "commit only your own files (`git add <path>` then `git commit`) and inspect other \
                  revisions read-only (`git show <rev>:<path>`, `git diff <rev>`); change branches \
                  once you are alone in the tree",
    },
    RuleInfo {
        rule: RuleId::McpArbitraryCommand,
        id: "mcp.arbitrary-command",
        scope: Scope::Always,
        what: "MCP tools that run arbitrary commands or kill processes (kill_process, \
               build_project, execute_command, terminal_execute, ...)",
        why: "they run commands the guard cannot inspect",
        instead: "run the command through the Bash tool, where the guard checks it",
    },
    RuleInfo {
        rule: RuleId::HooksSelfDisarm,
        id: "hooks.self-disarm",
        scope: Scope::WhenShared,
        what: "`guard install` and `guard uninstall`, whatever path or wrapper runs the guard \
               (`~/.local/bin/guard`, `env guard`, `sh -c 'guard …'`, the launcher \
               `session-lock/guard-hook`)",
        why: "another session works in this tree, and rewiring the hooks would leave its calls \
              failing or unguarded",
        instead: "leave the wiring as it is while others work; a person runs `guard install` or \
                  `guard uninstall` when no stream is active (`guard doctor` reports what is wrong)",
    },
    RuleInfo {
        rule: RuleId::HooksStartUnguarded,
        id: "hooks.start-unguarded",
        scope: Scope::Always,
        what: "starting Claude Code with its hooks off: `claude --bare`, `--settings` that sets \
               `disableAllHooks` (or that the guard cannot read), `--setting-sources` without \
               both `user` and `project`",
        why: "the session it starts runs without the guard and can overwrite other sessions' work",
        instead: "start nested sessions with the default settings sources (or through \
                  `run-agent`), so the guard's hooks run in them too",
    },
    RuleInfo {
        rule: RuleId::HooksOutsideSession,
        id: "hooks.outside-session",
        scope: Scope::WhenShared,
        what: "commands handed to a server that is already running and starts them itself: \
               tmux (any subcommand but the read-only ones: `ls`, `list-*`, `has-session`, \
               `show-*`, `capture-pane`, `display-message`), `screen -X`, `at`, `batch`, \
               `systemd-run` without `--scope`",
        why: "the server starts the command outside this session's process tree, where the \
              kernel write floor and the session's identity do not reach, so it could write \
              other sessions' files or release their streams",
        instead: "run the command directly in this shell; a background job (`cmd &`, `nohup cmd \
                  &`) stays in the session's tree and under its floor",
    },
];

impl RuleId {
    /// Every rule, in table order.
    pub const ALL: [RuleId; 11] = [
        RuleId::AppRestart,
        RuleId::EmitOverRunning,
        RuleId::BuildOutsideRenderer,
        RuleId::PluginProtectedToggle,
        RuleId::RmAppOutput,
        RuleId::GitAddAll,
        RuleId::GitHeadChange,
        RuleId::McpArbitraryCommand,
        RuleId::HooksSelfDisarm,
        RuleId::HooksStartUnguarded,
        RuleId::HooksOutsideSession,
    ];

    /// The rule's texts.
    pub fn info(self) -> &'static RuleInfo {
        INFO.iter()
            .find(|i| i.rule == self)
            .expect("every rule has a table entry (checked by a test)")
    }

    /// The stable id.
    pub fn id(self) -> &'static str {
        self.info().id
    }

    /// Look a rule up by its id.
    pub fn from_id(id: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|r| r.id() == id)
    }
}

/// The whole table, for documentation and `explain`.
pub fn table() -> &'static [RuleInfo] {
    &INFO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        for r in RuleId::ALL {
            assert_eq!(RuleId::from_id(r.id()), Some(r));
        }
        assert_eq!(RuleId::from_id("nope"), None);
        let only_shared: Vec<_> = table()
            .iter()
            .filter(|i| i.scope == Scope::WhenShared)
            .map(|i| i.id)
            .collect();
        assert_eq!(
            only_shared,
            [
                "git.head-change",
                "hooks.self-disarm",
                "hooks.outside-session"
            ]
        );
    }

    #[test]
    fn entries_are_looked_up_by_rule_not_by_position() {
        // Written out by hand: two swapped table entries (or variants) fail here.
        let want = [
            (RuleId::AppRestart, "app.restart"),
            (RuleId::EmitOverRunning, "app.emit-over-running"),
            (RuleId::BuildOutsideRenderer, "build.outside-build-renderer"),
            (RuleId::PluginProtectedToggle, "plugin.protected-toggle"),
            (RuleId::RmAppOutput, "rm.app-output"),
            (RuleId::GitAddAll, "git.add-all"),
            (RuleId::GitHeadChange, "git.head-change"),
            (RuleId::McpArbitraryCommand, "mcp.arbitrary-command"),
            (RuleId::HooksSelfDisarm, "hooks.self-disarm"),
            (RuleId::HooksStartUnguarded, "hooks.start-unguarded"),
            (RuleId::HooksOutsideSession, "hooks.outside-session"),
        ];
        assert_eq!(want.len(), RuleId::ALL.len());
        for (rule, id) in want {
            assert_eq!(rule.info().rule, rule);
            assert_eq!(rule.id(), id, "{rule:?}");
            assert!(
                rule.info().what.len() > 10 && !rule.info().instead.is_empty(),
                "{rule:?}"
            );
        }
        assert_eq!(INFO.len(), RuleId::ALL.len(), "one entry per rule");
    }
}
