use super::*;

const ROOT: &str = "/home/dev/repo";

fn rules() -> Rules {
    compile(&RulesConfig::default()).expect("defaults compile")
}

fn ids_in(cmd: &str, ctx: &CommandContext) -> Vec<String> {
    rules()
        .check_command(cmd, ctx)
        .into_iter()
        .map(|h| h.rule)
        .collect()
}

fn ids(cmd: &str) -> Vec<String> {
    ids_in(cmd, &CommandContext::new(ROOT, ROOT))
}

#[test]
fn absolute_paths_resolve_against_the_root() {
    assert_eq!(
        ids("rm -rf /home/dev/repo/dist-electron"),
        ["rm.app-output"]
    );
    assert_eq!(ids("rm -rf /home/dev/repo/web/../dist"), ["rm.app-output"]);
    assert_eq!(ids("rm -rf /home/dev/repo"), ["rm.app-output"]);
    assert_eq!(ids("rm -rf /home/dev"), ["rm.app-output"]);
    assert!(ids("rm -rf /home/dev/repo2/dist").is_empty());
    assert!(ids("rm -rf /home/dev/repo/src").is_empty());
}

#[test]
fn cwd_and_cd_steps_are_followed() {
    let web = CommandContext::new(format!("{ROOT}/web"), ROOT);
    assert_eq!(ids_in("rm -rf ../dist", &web), ["rm.app-output"]);
    assert!(ids_in("rm -rf dist", &web).is_empty());
    assert_eq!(ids("cd web; cd ..; rm -rf dist"), ["rm.app-output"]);
    assert!(ids("cd web; rm -rf dist").is_empty());
    assert_eq!(ids("cd /home/dev/repo && rm -rf dist"), ["rm.app-output"]);
    assert_eq!(ids("bash -c 'cd web && rm -rf ../dist'"), ["rm.app-output"]);
    let relative_cwd = CommandContext::new("web", ROOT);
    assert_eq!(ids_in("rm -rf ../dist", &relative_cwd), ["rm.app-output"]);
}

#[test]
fn windows_roots_and_paths() {
    let ctx = CommandContext::new(r"C:\Users\dev\repo\web", r"C:\Users\dev\repo");
    assert_eq!(
        ids_in(r"rm -rf 'C:\Users\dev\repo\dist'", &ctx),
        ["rm.app-output"]
    );
    assert_eq!(
        ids_in("rm -rf C:/users/DEV/repo/Dist", &ctx),
        ["rm.app-output"]
    );
    assert_eq!(
        ids_in("rm -rf /c/Users/dev/repo/dist", &ctx),
        ["rm.app-output"]
    );
    assert_eq!(ids_in("rm -rf ../dist", &ctx), ["rm.app-output"]);
    assert!(ids_in("rm -rf D:/repo/dist", &ctx).is_empty());
    let ps = ctx.clone().with_shell(Shell::PowerShell);
    assert_eq!(
        ids_in(r"Remove-Item -Recurse C:\Users\dev\repo\dist-electron", &ps),
        ["rm.app-output"]
    );
    assert_eq!(
        ids_in(r"Remove-Item -Recurse ..\dist", &ps),
        ["rm.app-output"]
    );
    assert_eq!(
        ids_in(r"Remove-Item -Recurse $PWD\..\dist", &ps),
        ["rm.app-output"]
    );
}

#[test]
fn issue_11_rooted_paths_without_a_drive_are_read_per_shell() {
    let bash = CommandContext::new(r"C:\Users\dev\repo\web", r"C:\Users\dev\repo");
    let ps = bash.clone().with_shell(Shell::PowerShell);
    let hit = ["rm.app-output"];
    // PowerShell and cmd: the current drive.
    for cmd in [
        r"Remove-Item -Recurse \Users\dev\repo\dist",
        "Remove-Item -Recurse /Users/dev/repo/dist",
        r"cd \Users\dev\repo; Remove-Item -Recurse dist",
        r"Remove-Item -Recurse C:..\dist",
        r"cmd /c rd /s /q \Users\dev\repo\dist",
    ] {
        assert_eq!(ids_in(cmd, &ps), hit, "{cmd}");
    }
    assert!(ids_in(r"cd D:\; Remove-Item -Recurse \Users\dev\repo\dist", &ps).is_empty());
    assert!(ids_in(r"Remove-Item -Recurse \Users\dev\other\dist", &ps).is_empty());
    // Git Bash: drive mounts, else the MSYS root; a quoted `\` is a Win32 path.
    for cmd in [
        "rm -rf /c/Users/dev/repo/dist",
        r"rm -rf '\Users\dev\repo\dist'",
        "cd /tmp && rm -rf /c/Users/dev/repo/dist",
        "powershell -Command 'Remove-Item -Recurse /Users/dev/repo/dist'",
    ] {
        assert_eq!(ids_in(cmd, &bash), hit, "{cmd}");
    }
    for cmd in [
        "rm -rf /Users/dev/repo/dist",
        "cd /Users/dev/repo && rm -rf dist",
        r"rm -rf \Users\dev\repo\dist",
    ] {
        assert!(ids_in(cmd, &bash).is_empty(), "{cmd}");
    }
    // PowerShell running bash: that segment is Git Bash's.
    assert_eq!(ids_in("bash -c 'rm -rf /c/Users/dev/repo/dist'", &ps), hit);
    assert!(ids_in("bash -c 'rm -rf /Users/dev/repo/dist'", &ps).is_empty());
    // On Linux a leading `/` is the root for both.
    let posix = CommandContext::new(ROOT, ROOT).with_shell(Shell::PowerShell);
    assert_eq!(
        ids_in("Remove-Item -Recurse /home/dev/repo/dist", &posix),
        hit
    );
    assert!(ids("rm -rf /c/home/dev/repo/dist").is_empty());
}

#[test]
fn dynamic_targets() {
    assert_eq!(ids(r#"rm -rf "$PWD/dist""#), ["rm.app-output"]);
    assert_eq!(ids(r#"rm -rf "$PWD/src""#), Vec::<String>::new());
    assert_eq!(ids(r#"rm -rf "$BUILD_DIR""#), Vec::<String>::new());
    assert_eq!(ids(r#"rm -rf "$X/dist-electron/main""#), ["rm.app-output"]);
    assert_eq!(ids("rm -rf ~/projects/repo/dist"), ["rm.app-output"]);
    assert_eq!(ids("rm -rf $HOME/projects/repo"), ["rm.app-output"]);
    assert_eq!(ids("rm -rf ~/tmp"), Vec::<String>::new());
    assert_eq!(ids("rm -rf ~/.cache/dist"), Vec::<String>::new());
    assert_eq!(ids(r#"rm -rf "$TMPDIR/dist""#), Vec::<String>::new());
    assert_eq!(ids("rm -rf $(mktemp -d)/dist"), Vec::<String>::new());
    assert_eq!(ids("cd $(mktemp -d) && rm -rf dist"), Vec::<String>::new());
    assert_eq!(
        ids(r#"rm -rf "$CLAUDE_PROJECT_DIR/dist""#),
        ["rm.app-output"]
    );
    assert_eq!(
        ids(r#"rm -rf "$CLAUDE_PROJECT_DIR/src""#),
        Vec::<String>::new()
    );
    assert_eq!(
        ids("rm -rf \"$(git rev-parse --show-toplevel)/dist-electron\""),
        ["rm.app-output"]
    );
    assert_eq!(
        ids("cd \"$(git rev-parse --show-toplevel)\" && rm -rf dist"),
        ["rm.app-output"]
    );
    assert_eq!(
        ids("cd \"$CLAUDE_PROJECT_DIR/web\" && rm -rf dist"),
        Vec::<String>::new()
    );
    assert_eq!(ids("cd \"$SOMEWHERE\" && rm -rf dist"), ["rm.app-output"]);
    let ps = CommandContext::new(ROOT, ROOT).with_shell(Shell::PowerShell);
    assert!(ids_in(r"Remove-Item -Recurse $env:TEMP\dist", &ps).is_empty());
}

#[test]
fn reasons_name_rule_segment_and_instead() {
    let hits = rules().check_command(
        "git status && taskkill /IM electron.exe /F",
        &CommandContext::new(ROOT, ROOT),
    );
    assert_eq!(hits.len(), 1);
    let h = &hits[0];
    assert_eq!(h.rule, "app.restart");
    assert_eq!(h.scope, Scope::Always);
    assert_eq!(h.segment, "taskkill /IM electron.exe /F");
    assert!(
        h.reason.starts_with("app.restart: `taskkill /IM electron.exe /F` kills the app process `electron`; every ai-chat session"),
        "{}",
        h.reason
    );
    assert!(h.reason.contains("Instead: leave the app running"));
    assert!(!h.reason.contains('\n'));
    assert_eq!(h.instead, RuleId::AppRestart.info().instead);
}

#[test]
fn hits_are_deduplicated_but_each_segment_counts() {
    let hits = rules().check_command(
        "git stash; git stash; git checkout main",
        &CommandContext::new(ROOT, ROOT),
    );
    let segs: Vec<&str> = hits.iter().map(|h| h.segment.as_str()).collect();
    assert_eq!(segs, ["git stash", "git checkout main"]);
    assert!(hits.iter().all(|h| h.scope == Scope::WhenShared));
}

#[test]
fn long_segments_are_clipped() {
    let cmd = format!("git checkout {}", "x".repeat(500));
    let hits = rules().check_command(&cmd, &CommandContext::new(ROOT, ROOT));
    assert!(hits[0].segment.chars().count() <= MAX_SEGMENT_TEXT + 1);
    assert!(hits[0].segment.ends_with('…'));
}

#[test]
fn disabled_rules_do_not_fire() {
    let cfg = RulesConfig {
        disabled: vec!["git.add-all".into(), "mcp.arbitrary-command".into()],
        ..RulesConfig::default()
    };
    let r = compile(&cfg).unwrap();
    let ctx = CommandContext::new(ROOT, ROOT);
    assert!(r.check_command("git add -A", &ctx).is_empty());
    assert!(!r.enabled(RuleId::GitAddAll));
    assert!(
        r.check_mcp("mcp__a__kill_process", &serde_json::json!({}))
            .is_empty()
    );
    assert_eq!(r.check_command("git add -A && git stash", &ctx).len(), 1);
}

#[test]
fn app_specifics_come_from_config() {
    let cfg = RulesConfig {
        app_processes: vec!["Kazuo.exe".into()],
        restart_scripts: vec!["relaunch.cmd".into()],
        output_dirs: vec!["out/renderer/".into()],
        build_scripts: vec!["package".into()],
        protected_plugins: vec!["core-chat".into()],
        ..RulesConfig::default()
    };
    let r = compile(&cfg).unwrap();
    let ctx = CommandContext::new(ROOT, ROOT);
    let ids = |c: &str| -> Vec<String> {
        r.check_command(c, &ctx)
            .into_iter()
            .map(|h| h.rule)
            .collect()
    };
    assert_eq!(ids("taskkill /im kazuo.exe /f"), ["app.restart"]);
    assert!(ids("taskkill /im electron.exe /f").is_empty());
    assert_eq!(ids("relaunch.cmd"), ["app.restart"]);
    assert!(ids("run.bat").is_empty());
    assert_eq!(ids("rm -rf out/renderer"), ["rm.app-output"]);
    assert_eq!(ids("rm -rf out"), ["rm.app-output"]);
    assert!(ids("rm -rf out/main").is_empty());
    assert!(ids("rm -rf dist").is_empty());
    assert_eq!(ids("npm run package:win"), ["build.outside-build-renderer"]);
    assert!(ids("npm run build").is_empty());
    assert_eq!(
        ids(r#"curl -d '{"id":"core-chat"}' http://x/plugins/toggle"#),
        ["plugin.protected-toggle"]
    );
}

#[test]
fn sandboxed_segments_are_skipped_but_reported() {
    let r = rules();
    let ctx = CommandContext::new(ROOT, ROOT);
    let an = analyze(
        "docker run -v vol:/p img sh -c 'vite build' && vite build",
        Dialect::Posix,
    );
    let hits = r.check_analysis(&an, &ctx);
    assert_eq!(hits.len(), 1);
    let (i, h) = &hits[0];
    assert!(!an.segments[*i].sandboxed);
    assert_eq!(h.segment, "vite build");
    assert!(
        an.segments
            .iter()
            .any(|s| s.sandboxed && s.head() == "vite")
    );
}

#[test]
fn explain_shows_segments_wrappers_heredocs_and_verdict() {
    let r = rules();
    let ctx = CommandContext::new(ROOT, ROOT);
    let text = explain(
        &r,
        "sudo git checkout -b x && git reset --hard\ncat > f <<'EOF'\nvite build\nEOF",
        &ctx,
    );
    assert!(
        text.contains("segment 1 (command): sudo git checkout -b x"),
        "{text}"
    );
    assert!(text.contains("argv: [git] [checkout] [-b] [x]"), "{text}");
    assert!(text.contains("peeled: sudo"), "{text}");
    assert!(text.contains("  → allow"), "{text}");
    assert!(
        text.contains("→ block git.head-change (when shared)"),
        "{text}"
    );
    assert!(
        text.contains("heredoc <<'EOF', 1 lines, read by `cat`: inert data"),
        "{text}"
    );
    assert!(
        text.contains(
            "rules: block only while another session works in this tree (git.head-change)"
        ),
        "{text}"
    );
    let text = explain(&r, "bash <<'EOF'\nnpm run build\nEOF", &ctx);
    assert!(
        text.contains("script (analyzed as commands) (read by a shell)"),
        "{text}"
    );
    assert!(
        text.contains("(heredoc script via bash, depth 1): npm run build"),
        "{text}"
    );
    assert!(
        text.contains("rules: block (build.outside-build-renderer)"),
        "{text}"
    );
    let text = explain(&r, "git status", &ctx);
    assert!(text.ends_with("rules: allow\n"), "{text}");
    let text = explain(&r, "", &ctx);
    assert!(text.contains("no commands"), "{text}");
}

#[test]
fn explain_marks_powershell_and_truncation() {
    let r = rules();
    let ctx = CommandContext::new(ROOT, ROOT).with_shell(Shell::PowerShell);
    let text = explain(&r, "Stop-Process -Name electron", &ctx);
    assert!(text.contains("shell: powershell"), "{text}");
    assert!(text.contains("→ block app.restart (always)"), "{text}");
    let big = "ls;".repeat(crate::shell::segment::MAX_SEGMENTS + 1);
    let text = explain(&r, &big, &CommandContext::new(ROOT, ROOT));
    assert!(text.contains("note: the command exceeded an analysis limit"));
}

#[test]
fn empty_and_odd_contexts_do_not_panic() {
    let r = rules();
    for ctx in [
        CommandContext::default(),
        CommandContext::new("", "/"),
        CommandContext::new("relative/only", ""),
        CommandContext::new(r"\\?\C:\x", r"\\server\share"),
    ] {
        let _ = r.check_command("rm -rf dist ../dist /dist; cd ..; rm -rf *", &ctx);
    }
}

#[test]
fn issue_12_explain_names_what_programs_and_powershell_resolve() {
    let r = rules();
    let ctx = CommandContext::new(ROOT, ROOT);
    let text = explain(
        &r,
        "python3 -c \"import shutil; shutil.rmtree('dist')\"",
        &ctx,
    );
    assert!(
        text.contains("segment 2 (derived via python -c, depth 1): rm -rf -- dist"),
        "{text}"
    );
    assert!(text.contains("→ block rm.app-output"), "{text}");
    let ps = CommandContext::new(ROOT, ROOT).with_shell(Shell::PowerShell);
    let text = explain(&r, "$x = 'np' + 'm'; & $x run build", &ps);
    assert!(text.contains("resolved: $x = npm"), "{text}");
    assert!(text.contains("resolved: $x → npm"), "{text}");
    assert!(
        text.contains("→ block build.outside-build-renderer"),
        "{text}"
    );
    let text = explain(
        &r,
        "docker run --pid=host -v vol:/d alpine pkill electron",
        &ctx,
    );
    assert!(text.contains("only the app rules apply"), "{text}");
    assert!(text.contains("→ block app.restart"), "{text}");
}

/// Issue 30: `npm run start` was blocked as a build ("two builds … use build-renderer"). Every
/// rule's message names the harm and the alternative of the form it caught: one row per form,
/// through the same compiled rules the guard uses.
#[test]
fn each_message_names_the_right_alternative() {
    // (command, rule, words the reason must have, words it must not)
    let table: &[(&str, &str, &[&str], &[&str])] = &[
        (
            "npm run start",
            "build.outside-build-renderer",
            &[
                "starts a second copy of the app",
                "the app is already running",
                "reload-plugin <id>",
            ],
            &[
                "two builds",
                "mix their output",
                "build-renderer -- npm run start",
            ],
        ),
        (
            "pnpm dev",
            "build.outside-build-renderer",
            &["starts a second copy", "waits for the end of the round"],
            &["two builds"],
        ),
        (
            "npm start",
            "build.outside-build-renderer",
            &["starts a second copy"],
            &["two builds"],
        ),
        (
            "yarn run headless:ci",
            "build.outside-build-renderer",
            &["starts a second copy"],
            &["two builds"],
        ),
        (
            "npm run build:web",
            "build.outside-build-renderer",
            &[
                "two builds at once",
                "`build-renderer -- npm run build:web`",
            ],
            &["starts a second copy"],
        ),
        (
            "vite build",
            "build.outside-build-renderer",
            &["two builds at once", "`build-renderer -- vite build`"],
            &[],
        ),
        (
            "npx electron-builder --win",
            "build.outside-build-renderer",
            &[
                "packages the app",
                "leave packaging to the end of the round",
            ],
            &["build-renderer -- electron-builder"],
        ),
        (
            "tsc -p tsconfig.node.json",
            "app.emit-over-running",
            &["`tsc --noEmit -p tsconfig.node.json`"],
            &[],
        ),
        (
            "npx tsc --build tsconfig.node.json",
            "app.emit-over-running",
            &[
                "`tsc --noEmit -p tsconfig.node.json`",
                "restart at the end of the round",
            ],
            &[],
        ),
        (
            "git commit -am wip",
            "git.add-all",
            &["`git commit` without -a"],
            &[],
        ),
        (
            "git add -A",
            "git.add-all",
            &["`git add <path>...`"],
            &["without -a"],
        ),
        (
            "git checkout -b feature",
            "git.head-change",
            &["`git branch <name>`"],
            &[],
        ),
        (
            "git switch -c feature",
            "git.head-change",
            &["`git branch <name>`"],
            &[],
        ),
        (
            "git stash",
            "git.head-change",
            &["instead of stashing", "`git stash list`"],
            &[],
        ),
        (
            "git pull --rebase",
            "git.head-change",
            &["`git fetch` is fine"],
            &[],
        ),
        (
            "git restore src/a.ts",
            "git.head-change",
            &["`git show HEAD:<path> > <path>`"],
            &[],
        ),
        (
            "git reset --hard",
            "git.head-change",
            &["`git show HEAD:<path> > <path>`"],
            &[],
        ),
        (
            "git clean -fd",
            "git.head-change",
            &["`rm <path>`", "`git clean -n`"],
            &[],
        ),
        (
            "git checkout main",
            "git.head-change",
            &["change branches once you are alone"],
            &[],
        ),
        (
            "taskkill /IM electron.exe /F",
            "app.restart",
            &["leave the app running"],
            &[],
        ),
        (
            "rm -rf dist",
            "rm.app-output",
            &["`build-renderer`, which replaces dist/"],
            &[],
        ),
        (
            "curl -X POST http://127.0.0.1:3917/plugins/toggle -d '{\"id\":\"ai-chat\"}'",
            "plugin.protected-toggle",
            &["leave ai-chat loaded"],
            &[],
        ),
    ];
    let mut wrong = Vec::new();
    for (cmd, rule, want, not) in table {
        let hits = rules().check_command(cmd, &CommandContext::new(ROOT, ROOT));
        let Some(h) = hits.iter().find(|h| h.rule == *rule) else {
            wrong.push(format!("{cmd}: no {rule} hit ({hits:?})"));
            continue;
        };
        for w in *want {
            if !h.reason.contains(w) {
                wrong.push(format!("{cmd}: lacks {w:?}: {}", h.reason));
            }
        }
        for n in *not {
            if h.reason.contains(n) {
                wrong.push(format!("{cmd}: says {n:?}: {}", h.reason));
            }
        }
        assert!(
            h.reason.contains(&format!("Instead: {}.", h.instead)),
            "{}",
            h.reason
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let mcp = rules().check_mcp("mcp__x__execute_command", &serde_json::json!({}));
    assert!(
        mcp[0].reason.contains("through the Bash tool"),
        "{}",
        mcp[0].reason
    );
}

#[test]
fn every_interpreter_of_the_program_table_runs_its_launcher() {
    // The rules knew fewer interpreters than the heredoc classifier (no `pypy3`, `php`,
    // `python2`) and one it did not (`cscript`): both read one table now.
    for cmd in [
        "pypy3 dev-rebuild.py",
        "python2 dev-rebuild.py",
        "php dev-rebuild.php",
        "cscript dev-rebuild.vbs",
        "python3.12 dev-rebuild.py",
    ] {
        assert_eq!(ids(cmd), ["app.restart"], "{cmd}");
    }
    assert!(ids("php artisan migrate").is_empty());
}

#[test]
fn rimraf_and_friends_delete_the_output_through_the_table() {
    for cmd in ["rimraf dist", "del-cli dist-electron", "trash dist"] {
        assert_eq!(ids(cmd), ["rm.app-output"], "{cmd}");
    }
    assert!(ids("rimraf coverage").is_empty());
}

#[test]
fn issue_27_the_guard_wiring_cannot_be_rewritten_by_any_spelling() {
    for cmd in [
        "guard uninstall",
        "guard install",
        "guard install --guard /bin/true",
        "~/.local/bin/guard uninstall",
        "./target/release/guard uninstall --json",
        "/usr/local/bin/GUARD.exe uninstall",
        "env guard uninstall",
        "env -i PATH=/usr/bin guard install",
        "sh -c 'guard uninstall'",
        "bash -c \"cd /tmp && exec guard uninstall\"",
        "session-lock/guard-hook uninstall",
        "sh session-lock/guard-hook uninstall",
        "sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\" install",
        "nohup guard uninstall &",
        "echo x; guard uninstall",
        "$(echo guard) uninstall",
    ] {
        assert_eq!(ids(cmd), ["hooks.self-disarm"], "{cmd}");
    }
    // Reading commands, and words that only mention it, are not the wiring.
    for cmd in [
        "guard doctor",
        "guard explain 'guard uninstall'",
        "guard log --since 1h",
        "guard --help",
        "guard uninstall --help",
        "echo guard uninstall",
        "git commit -m 'guard uninstall'",
        "session-lock/guard-hook --tool status",
        "sh session-lock/guard-hook --tool send-message mcp",
        "grep -rn 'guard install' README.md",
        "guard",
    ] {
        assert!(ids(cmd).is_empty(), "{cmd}: {:?}", ids(cmd));
    }
}

#[test]
fn issue_27_a_nested_client_cannot_start_with_its_hooks_off() {
    for cmd in [
        "claude --bare -p hi",
        r#"claude -p hi --settings '{"disableAllHooks":true}'"#,
        r#"claude -p hi --settings='{"disableAllHooks": 1}'"#,
        "claude -p hi --settings off.json",
        "claude -p hi --settings \"$S\"",
        "claude -p hi --setting-sources project",
        "claude -p hi --setting-sources user,local",
        "claude -p hi --setting-sources ''",
        "claude -p hi --setting-sources=local",
        "env CLAUDE_X=1 ~/.local/bin/claude --bare",
        "sh -c 'claude --setting-sources \"\" -p hi'",
    ] {
        assert_eq!(ids(cmd), ["hooks.start-unguarded"], "{cmd}");
    }
    for cmd in [
        "claude -p hi",
        "claude --version",
        "claude -p hi --setting-sources user,project,local",
        r#"claude -p hi --settings '{"model":"x"}'"#,
        r#"claude -p hi --settings '{"disableAllHooks":false}'"#,
        "claude -p 'use --bare and disableAllHooks'",
        "echo claude --bare",
    ] {
        assert!(ids(cmd).is_empty(), "{cmd}: {:?}", ids(cmd));
    }
}
