use super::windows::decode_encoded;
use super::*;
use crate::shell::lexer::{Arena, Tok, lex};

fn words(src: &str, d: Dialect) -> Vec<Word> {
    let mut arena = Arena::new(1 << 20);
    lex(src, d, 0, &mut arena)
        .into_iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect()
}

fn pl(src: &str) -> Peel {
    peel(&words(src, Dialect::Posix), Dialect::Posix)
}

fn argv(p: &Peel) -> String {
    p.argv
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn scripts(p: &Peel) -> Vec<(String, Dialect, &'static str)> {
    p.scripts
        .iter()
        .map(|s| (s.text.clone(), s.dialect, s.via))
        .collect()
}

#[test]
fn assignments_env_sudo_and_friends() {
    let p = pl("FOO=1 BAR=2 env -i -u X A=b sudo -u root -E nice -n 5 nohup time -p npm run build");
    assert_eq!(argv(&p), "npm run build");
    assert_eq!(
        p.wrappers,
        ["FOO=", "BAR=", "env", "A=", "sudo", "nice", "nohup", "time"]
    );
    assert_eq!(argv(&pl("timeout -s KILL 30s git pull")), "git pull");
    assert_eq!(
        argv(&pl("timeout --preserve-status 5 vite build")),
        "vite build"
    );
    assert_eq!(argv(&pl("command git checkout x")), "git checkout x");
    assert_eq!(argv(&pl("command -v git")), "");
    assert_eq!(argv(&pl("builtin cd x")), "cd x");
    assert_eq!(argv(&pl("exec -a name vite build")), "vite build");
    assert_eq!(argv(&pl("stdbuf -oL -e 0 npm start")), "npm start");
    assert_eq!(argv(&pl("ionice -c 3 git gc")), "git gc");
    assert_eq!(argv(&pl("ionice -p 123")), "");
    assert_eq!(argv(&pl("sudo -e file")), "");
    assert_eq!(argv(&pl("doas -u x rm -rf dist")), "rm -rf dist");
    assert_eq!(argv(&pl("X=1")), "");
    assert_eq!(
        argv(&pl("cross-env NODE_ENV=production vite build")),
        "vite build"
    );
    assert_eq!(argv(&pl("winpty node x.js")), "node x.js");
}

#[test]
fn backslash_and_rtk() {
    let p = pl(r"\rm -rf dist");
    assert_eq!(argv(&p), "rm -rf dist");
    assert_eq!(p.wrappers, ["\\"]);
    assert_eq!(argv(&pl("rtk git checkout main")), "git checkout main");
    assert_eq!(argv(&pl("rtk -v proxy npm run build")), "npm run build");
    assert_eq!(
        argv(&pl("rtk tsc -p tsconfig.node.json")),
        "tsc -p tsconfig.node.json"
    );
}

#[test]
fn package_runners() {
    assert_eq!(argv(&pl("npx --yes tsc -p x")), "tsc -p x");
    assert_eq!(argv(&pl("npm exec -- vite build")), "vite build");
    assert_eq!(argv(&pl("npm x vite build")), "vite build");
    assert_eq!(argv(&pl("pnpm exec vite build")), "vite build");
    assert_eq!(argv(&pl("pnpm dlx vite build")), "vite build");
    assert_eq!(argv(&pl("yarn dlx vite build")), "vite build");
    assert_eq!(argv(&pl("bunx vite build")), "vite build");
    assert_eq!(argv(&pl("bun x vite build")), "vite build");
    assert_eq!(argv(&pl("npm run build")), "npm run build");
    let p = pl("npx -c 'npm run build'");
    assert_eq!(
        scripts(&p),
        [("npm run build".into(), Dialect::Posix, "npx")]
    );
}

#[test]
fn shells_with_scripts() {
    let p = pl("bash -c 'git checkout main && npm run build'");
    assert_eq!(argv(&p), "");
    assert_eq!(
        scripts(&p),
        [(
            "git checkout main && npm run build".into(),
            Dialect::Posix,
            "bash -c"
        )]
    );
    assert_eq!(scripts(&pl("bash -lc 'x'"))[0].0, "x");
    assert_eq!(scripts(&pl("sh -ec 'x' name arg"))[0].0, "x");
    assert_eq!(scripts(&pl("zsh -o pipefail -c 'x'"))[0].0, "x");
    assert_eq!(scripts(&pl("/bin/bash --norc -xc 'x'"))[0].0, "x");
    assert_eq!(argv(&pl("bash run.sh arg")), "run.sh arg");
    assert_eq!(argv(&pl("sh -s")), "sh -s");
    assert_eq!(argv(&pl("bash")), "bash");
    assert_eq!(argv(&pl("busybox sh -c 'y'")), "");
    assert_eq!(argv(&pl("toybox rm -rf dist")), "rm -rf dist");
    assert_eq!(
        argv(&pl("coreutils --coreutils-prog=rm -rf dist")),
        "rm -rf dist"
    );
    assert_eq!(argv(&pl("coreutils --coreutils-prog rm x")), "rm x");
    assert_eq!(argv(&pl("coreutils rm x")), "rm x");
    assert_eq!(
        scripts(&pl("eval git  pull '&&' ls"))[0].0,
        "git pull && ls"
    );
    assert_eq!(argv(&pl("source ./dev-rebuild.sh")), "./dev-rebuild.sh");
    assert_eq!(argv(&pl(". /dev/stdin")), ". /dev/stdin");
}

#[test]
fn windows_wrappers() {
    let p = pl(r#"cmd /c "taskkill /im electron.exe /f""#);
    assert_eq!(
        scripts(&p),
        [(
            "taskkill /im electron.exe /f".into(),
            Dialect::Cmd,
            "cmd /c"
        )]
    );
    let p = pl(r#"cmd.exe /S /C run.bat W"#);
    assert_eq!(scripts(&p)[0].0, "run.bat W");
    let p = pl(
        r#"powershell -NoProfile -ExecutionPolicy Bypass -Command "Stop-Process -Name electron""#,
    );
    assert_eq!(
        scripts(&p),
        [(
            "Stop-Process -Name electron".into(),
            Dialect::PowerShell,
            "powershell -Command"
        )]
    );
    let p = pl("pwsh -c Get-Process");
    assert_eq!(scripts(&p)[0].0, "Get-Process");
    let p = pl("powershell.exe -File .\\dev-rebuild.ps1 -x");
    assert_eq!(argv(&p), ".dev-rebuild.ps1 -x");
    let p = pl("powershell \"npm run build\"");
    assert_eq!(scripts(&p)[0].0, "npm run build");
    // "npm run build" as UTF-16LE base64.
    let p = pl("pwsh -NoLogo -enc bgBwAG0AIAByAHUAbgAgAGIAdQBpAGwAZAA=");
    assert_eq!(
        scripts(&p),
        [(
            "npm run build".into(),
            Dialect::PowerShell,
            "powershell -EncodedCommand"
        )]
    );
    assert!(scripts(&pl("pwsh -enc !!notbase64")).is_empty());
    let p = pl(r#"start "" /b run.bat"#);
    assert_eq!(argv(&p), "run.bat");
    let p = pl("start /wait /d C:\\x electron .");
    assert_eq!(argv(&p), "electron .");
    let p = pl("call run.bat");
    assert_eq!(argv(&p), "run.bat");
}

#[test]
fn powershell_start_process() {
    let ps = |s: &str| peel(&words(s, Dialect::PowerShell), Dialect::PowerShell);
    let p = ps("Start-Process electron -ArgumentList '.'");
    assert_eq!(
        scripts(&p),
        [("electron .".into(), Dialect::Cmd, "Start-Process")]
    );
    let p = ps("Start-Process -FilePath cmd -ArgumentList '/c','run.bat' -Wait");
    assert_eq!(scripts(&p)[0].0, "cmd /c run.bat");
    let p = ps("start npm 'run build'");
    assert_eq!(scripts(&p)[0].0, "npm run build");
    let p = ps("iex 'git checkout main'");
    assert_eq!(
        scripts(&p),
        [(
            "git checkout main".into(),
            Dialect::PowerShell,
            "Invoke-Expression"
        )]
    );
}

#[test]
fn tmux_watch_wsl_concurrently() {
    let p = pl("tmux new-session -d -s dev 'npm run dev'");
    assert_eq!(scripts(&p)[0].0, "npm run dev");
    let p = pl("tmux new -d npm run dev");
    assert_eq!(scripts(&p)[0].0, "npm run dev");
    let p = pl("tmux send-keys -t dev 'npm run build' Enter");
    assert_eq!(scripts(&p)[0].0, "npm run build");
    assert!(scripts(&pl("tmux ls")).is_empty());
    let p = pl("watch -n 5 git pull");
    assert_eq!(scripts(&p)[0].0, "git pull");
    assert_eq!(argv(&pl("watch -x git status")), "git status");
    let p = pl("wsl -d Ubuntu npm run build");
    assert_eq!(scripts(&p)[0].0, "npm run build");
    assert_eq!(argv(&pl("wsl -e git pull")), "git pull");
    let p = pl("concurrently -k 'vite build' npm:dev");
    assert_eq!(
        scripts(&p).iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["vite build", "npm run dev"]
    );
    let p = pl("env -S 'npm run build'");
    assert_eq!(scripts(&p)[0].0, "npm run build");
}

#[test]
fn xargs_and_find() {
    let p = pl("xargs -0 -n1 -P4 rm -rf");
    assert_eq!(argv(&p), "rm -rf");
    assert_eq!(p.xargs, Some(None));
    let p = pl("xargs -I{} git checkout {}");
    assert_eq!(argv(&p), "git checkout {}");
    assert_eq!(p.xargs, Some(Some("{}".into())));
    let p = pl("xargs -I % rm -rf %");
    assert_eq!(p.xargs, Some(Some("%".into())));
    assert_eq!(argv(&pl("xargs")), "echo");
    let p = pl(r"find . -name '*.js' -exec rm -rf {} \; -execdir git checkout {} +");
    assert_eq!(
        argv(&p),
        r"find . -name *.js -exec rm -rf {} ; -execdir git checkout {} +"
    );
    let d: Vec<String> = p
        .derived
        .iter()
        .map(|c| {
            c.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(d, ["rm -rf {}", "git checkout {}"]);
}

#[test]
fn docker_payloads() {
    let p = pl("docker run --rm -v kazuo-linux:/p img npm run build");
    assert_eq!(argv(&p), "npm run build");
    assert_eq!(p.sandbox, Some(true));
    let p = pl("docker run --rm -v $(pwd):/p img sh -c 'npm run build'");
    assert_eq!(p.sandbox, Some(false));
    assert_eq!(scripts(&p)[0].0, "npm run build");
    let p = pl("sudo docker exec box npm run build");
    assert_eq!(argv(&p), "npm run build");
    assert_eq!(p.sandbox, Some(false));
    assert_eq!(p.wrappers, ["sudo", "docker exec"]);
}

#[test]
fn git_aliases() {
    let p = pl("git -c alias.co=checkout co main");
    assert_eq!(argv(&p), "git -c alias.co=checkout checkout main");
    let p = pl("git -c 'alias.x=!git reset --hard' x");
    assert_eq!(scripts(&p)[0].0, "git reset --hard");
    let p = pl("git -c alias.x=x x");
    assert_eq!(argv(&p), "git -c alias.x=x x");
    assert_eq!(argv(&pl("git checkout main")), "git checkout main");
}

#[test]
fn peeling_is_bounded() {
    let many = "nohup ".repeat(200) + "ls";
    let p = pl(&many);
    assert!(p.wrappers.len() <= MAX_STEPS);
}

#[test]
fn cmd_at_prefix() {
    let p = peel(
        &words("@taskkill /im electron.exe", Dialect::Cmd),
        Dialect::Cmd,
    );
    assert_eq!(argv(&p), "taskkill /im electron.exe");
}

#[test]
fn decoding() {
    assert_eq!(decode_encoded("bABzAA==").as_deref(), Some("ls"));
    assert_eq!(decode_encoded("").as_deref(), Some(""));
    assert!(decode_encoded("%%%").is_none());
}

#[test]
fn every_handled_wrapper_is_peeled() {
    for name in [
        ".",
        "ash",
        "bash",
        "builtin",
        "bunx",
        "busybox",
        "caffeinate",
        "coreutils",
        "call",
        "cmd",
        "command",
        "concurrently",
        "cross-env",
        "cross-env-shell",
        "dash",
        "doas",
        "docker",
        "docker-compose",
        "env",
        "eval",
        "exec",
        "find",
        "fish",
        "iex",
        "invoke-expression",
        "ionice",
        "ksh",
        "mksh",
        "nerdctl",
        "nice",
        "nohup",
        "npx",
        "pnpx",
        "podman",
        "podman-compose",
        "powershell",
        "pwsh",
        "rtk",
        "saps",
        "setsid",
        "sh",
        "source",
        "start",
        "start-process",
        "stdbuf",
        "sudo",
        "time",
        "timeout",
        "tmux",
        "toybox",
        "unbuffer",
        "watch",
        "winpty",
        "wsl",
        "xargs",
        "zsh",
    ] {
        let w = [Word::plain(name), Word::plain("x")];
        assert!(may_peel(&w, Dialect::Posix), "{name}");
    }
    assert!(!may_peel(&[Word::plain("ls")], Dialect::Posix));
    assert!(!may_peel(
        &[Word::plain("git"), Word::plain("status")],
        Dialect::Posix
    ));
    assert!(may_peel(
        &words("git -c alias.x=y x", Dialect::Posix),
        Dialect::Posix
    ));
    assert!(!may_peel(
        &words("npm run build", Dialect::Posix),
        Dialect::Posix
    ));
    assert!(may_peel(
        &words("npm exec vite", Dialect::Posix),
        Dialect::Posix
    ));
    assert!(may_peel(&words("A=1 ls", Dialect::Posix), Dialect::Posix));
    assert!(may_peel(&words("\\ls", Dialect::Posix), Dialect::Posix));
    assert!(may_peel(&words("@echo off", Dialect::Cmd), Dialect::Cmd));
}

#[test]
fn package_runners_with_versions_and_paths() {
    for (src, want) in [
        ("npx -y vite@5 build", "vite build"),
        ("pnpm dlx @vue/cli@5 create x", "@vue/cli create x"),
        ("bunx electron@28 .", "electron ."),
        ("deno run -A npm:vite@5 build", "vite build"),
        ("corepack pnpm@8 run build", "pnpm run build"),
        ("corepack yarnpkg build", "yarn build"),
        ("node node_modules/typescript/bin/tsc -b", "tsc -b"),
        (
            "node -r dotenv/config ./node_modules/electron/cli.js .",
            "electron .",
        ),
        ("node node_modules/@scope/tool/dist/index.js x", "tool x"),
        ("node node_modules/.bin/vite build", "vite build"),
    ] {
        assert_eq!(argv(&pl(src)), want, "{src}");
    }
    // Not package commands: kept as written.
    for src in [
        "corepack enable",
        "node scripts/build.js",
        "node node_modules",
        "npx vite build",
    ] {
        let p = pl(src);
        assert!(
            argv(&p) == src || p.wrappers == ["npx"],
            "{src}: {}",
            argv(&p)
        );
    }
}
