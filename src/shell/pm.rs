//! Package managers: what `npm`, `pnpm`, `yarn`, `bun`, `npx` and friends will run.
//!
//! Two answers matter: a package.json script (`npm run build`, `yarn build`, `pnpm dev`,
//! `npm start`) and a package binary run through the manager (`npx tsc`, `pnpm exec vite`,
//! `yarn dlx`, `bunx`, `deno run npm:vite`), which the wrapper peeler strips like `env`.
//! A package spec with a version (`vite@5`, `@scope/cli@^2`, `npm:vite@5`) runs the
//! package's command: [`package_bin`].

use super::programs::{self, EXEC_OPTS, Grammar, Pm};
use super::word::{Word, command_name};

/// What a package-manager command line runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PmCall {
    /// A package.json script: `npm run <name>`, `yarn <name>`, `pnpm <name>`, `npm start`.
    Script {
        /// The manager (`npm`, `pnpm`, `yarn`, `bun`, `deno`).
        pm: String,
        /// The script name (`build:win`).
        name: String,
        /// Index in argv of the first argument after the name.
        args: usize,
    },
    /// Several script names or patterns (`npm-run-all build dev`, `run-s 'build:*'`).
    Scripts(Vec<String>),
    /// A package binary: argv[start..] is the command; `script` is a `-c` command string.
    Exec {
        /// Index in argv where the command starts.
        start: usize,
        /// `npx -c '<cmd>'` / `npm exec -c '<cmd>'`.
        script: Option<String>,
    },
}

/// `deno run`'s options that take a value.
const DENO_RUN: Grammar = Grammar {
    short: "c",
    long: &[
        "config",
        "import-map",
        "lock",
        "cert",
        "location",
        "seed",
        "env-file",
    ],
};
/// `deno task`'s and `bun`'s own options that take a value.
const CWD_CONFIG: Grammar = Grammar {
    short: "c",
    long: &["cwd", "config"],
};
/// `bun run`'s.
const BUN_RUN: Grammar = Grammar {
    short: "F",
    long: &["cwd", "filter"],
};
/// `yarn workspaces foreach`'s.
const YARN_FOREACH: Grammar = Grammar {
    short: "j",
    long: &["include", "exclude", "jobs", "from", "since"],
};

const YARN_BUILTIN: &[&str] = &[
    "add",
    "install",
    "remove",
    "upgrade",
    "up",
    "init",
    "info",
    "list",
    "why",
    "config",
    "cache",
    "global",
    "link",
    "unlink",
    "pack",
    "publish",
    "login",
    "logout",
    "outdated",
    "audit",
    "bin",
    "create",
    "import",
    "licenses",
    "owner",
    "tag",
    "team",
    "version",
    "versions",
    "autoclean",
    "check",
    "generate-lock-entry",
    "node",
    "policies",
    "set",
    "plugin",
    "constraints",
    "explain",
    "npm",
    "patch",
    "patch-commit",
    "rebuild",
    "search",
    "stage",
    "unplug",
    "dedupe",
    "help",
    "upgrade-interactive",
    "workspaces",
    "--version",
    "-v",
];
const PNPM_BUILTIN: &[&str] = &[
    "add",
    "install",
    "i",
    "update",
    "up",
    "upgrade",
    "remove",
    "rm",
    "uninstall",
    "un",
    "link",
    "ln",
    "unlink",
    "import",
    "rebuild",
    "rb",
    "prune",
    "fetch",
    "patch",
    "patch-commit",
    "audit",
    "list",
    "ls",
    "ll",
    "la",
    "outdated",
    "why",
    "licenses",
    "create",
    "publish",
    "pack",
    "store",
    "root",
    "bin",
    "setup",
    "init",
    "deploy",
    "env",
    "config",
    "c",
    "server",
    "doctor",
    "help",
    "install-test",
    "it",
    "dedupe",
    "cache",
    "self-update",
    "approve-builds",
    "-v",
    "--version",
];
const BUN_BUILTIN: &[&str] = &[
    "test",
    "repl",
    "init",
    "create",
    "c",
    "install",
    "i",
    "add",
    "a",
    "remove",
    "rm",
    "update",
    "link",
    "unlink",
    "pm",
    "build",
    "upgrade",
    "publish",
    "outdated",
    "patch",
    "why",
    "audit",
    "info",
    "help",
    "--version",
    "-v",
];

/// Index of the first word of `args[from..]` that is not an option, skipping the values of
/// the options that take one by `g` (spelled whole: `-w x`, `--workspace x`).
fn skip_options(argv: &[Word], from: usize, g: Grammar) -> usize {
    let mut i = from;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') || t == "-" {
            return i;
        }
        if t == "--" {
            return i + 1;
        }
        i += if g.takes_value(t) { 2 } else { 1 };
    }
    argv.len()
}

fn script(pm: &str, name: &str, args: usize) -> Option<PmCall> {
    Some(PmCall::Script {
        pm: pm.to_string(),
        name: name.to_string(),
        args,
    })
}

/// `npx`-style options, then the command (or `-c '<cmd>'`).
fn exec_at(argv: &[Word], from: usize) -> Option<PmCall> {
    let mut i = from;
    let mut call = None;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(v) = t.strip_prefix("--call=") {
            call = Some(v.to_string());
            i += 1;
            continue;
        }
        if t == "-c" || t == "--call" {
            call = argv.get(i + 1).map(|w| w.text.clone());
            i += 2;
            continue;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += if EXEC_OPTS.takes_value(t) { 2 } else { 1 };
    }
    let start = i.min(argv.len());
    if call.is_none() && start >= argv.len() {
        return None;
    }
    Some(PmCall::Exec {
        start,
        script: call,
    })
}

/// The command a package spec runs when it is more than a plain name: the version removed
/// (`vite@5` → `vite`, `@vue/cli@5` → `@vue/cli`, `electron@^28.1` → `electron`), a
/// `npm:` prefix dropped and a bin subpath taken (`npm:typescript@5/tsc` → `tsc`); `None`
/// for a plain name or a path.
pub fn package_bin(spec: &str) -> Option<String> {
    let (npm, s) = match spec.strip_prefix("npm:") {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    if s.starts_with(['.', '/', '~']) || s.contains('\\') {
        return None;
    }
    // A scope's `@` is not a version: the name ends after `@scope/`.
    let from = if s.starts_with('@') {
        s.find('/').map_or(s.len(), |k| k + 1)
    } else {
        0
    };
    let end = s[from..].find(['@', '/']).map_or(s.len(), |k| from + k);
    let (name, rest) = s.split_at(end);
    let (version, sub) = if let Some(r) = rest.strip_prefix('@') {
        match r.split_once('/') {
            Some((v, b)) => (Some(v), Some(b)),
            None => (Some(r), None),
        }
    } else {
        (None, rest.strip_prefix('/'))
    };
    if name.is_empty() || name.ends_with('@') || name.ends_with('/') || (version.is_none() && !npm)
    {
        return None;
    }
    let sub = sub.filter(|b| npm && !b.is_empty());
    Some(sub.unwrap_or(name).to_string())
}

/// What `argv` runs when its head is a package manager; `None` for anything else
/// (installs, listings, other tools).
pub fn pm_call(argv: &[Word]) -> Option<PmCall> {
    let prog = programs::get(&command_name(&argv.first()?.text))?;
    let g = prog.opts;
    match prog.pm? {
        Pm::Npx | Pm::Bunx => exec_at(argv, 1),
        Pm::Npm => npm(argv, g),
        Pm::Pnpm => pnpm(argv, 1, g),
        Pm::Yarn => yarn(argv, 1, g),
        Pm::Bun => bun(argv, g),
        Pm::Deno => {
            let i = skip_options(argv, 1, g);
            match argv.get(i).map(|w| w.text.as_str()) {
                Some("task") => {
                    let j = skip_options(argv, i + 1, CWD_CONFIG);
                    argv.get(j).and_then(|w| script("deno", &w.text, j + 1))
                }
                // `deno run -A npm:vite@5 build` runs the package's command.
                Some("run" | "x") => {
                    let j = skip_options(argv, i + 1, DENO_RUN);
                    argv.get(j)
                        .filter(|w| w.text.starts_with("npm:"))
                        .map(|_| PmCall::Exec {
                            start: j,
                            script: None,
                        })
                }
                _ => None,
            }
        }
        Pm::Monorepo => monorepo(argv, prog.name, g),
        Pm::RunAll => {
            let mut names = Vec::new();
            let mut i = 1;
            while let Some(w) = argv.get(i) {
                let t = w.text.as_str();
                if t == "--" {
                    break;
                }
                if t.starts_with('-') {
                    i += if g.takes_value(t) { 2 } else { 1 };
                    continue;
                }
                names.push(t.to_string());
                i += 1;
            }
            Some(PmCall::Scripts(names))
        }
    }
}

/// Task runners over workspace scripts: `turbo run build`, `lerna run build`,
/// `nx build app`, `nx run app:build`, `nx run-many -t build,lint`.
fn monorepo(argv: &[Word], head: &str, g: Grammar) -> Option<PmCall> {
    let mut names = Vec::new();
    let mut targets = Vec::new();
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(v) = t
            .strip_prefix("--target=")
            .or_else(|| t.strip_prefix("--targets="))
        {
            targets.extend(v.split(',').map(str::to_string));
        } else if matches!(t, "-t" | "--target" | "--targets") {
            if let Some(v) = argv.get(i + 1) {
                targets.extend(v.text.split(',').map(str::to_string));
            }
            i += 1;
        } else if t.starts_with('-') {
            if g.takes_value(t) {
                i += 1;
            }
        } else {
            names.push(t.to_string());
        }
        i += 1;
    }
    let tasks: Vec<String> = match (head, names.first().map(String::as_str)) {
        (_, Some("run")) if head == "nx" => names
            .get(1)
            .and_then(|n| n.split(':').nth(1))
            .map(|t| vec![t.to_string()])
            .unwrap_or_default(),
        (_, Some("run")) => names[1..].to_vec(),
        ("nx", Some("run-many" | "affected")) => targets,
        ("nx", Some(sub))
            if !matches!(
                sub,
                "graph"
                    | "show"
                    | "list"
                    | "init"
                    | "generate"
                    | "g"
                    | "migrate"
                    | "report"
                    | "reset"
                    | "daemon"
                    | "format"
                    | "format:write"
                    | "format:check"
                    | "sync"
                    | "release"
                    | "repair"
                    | "connect"
                    | "watch"
            ) =>
        {
            vec![sub.to_string()]
        }
        ("turbo", Some(sub))
            if !matches!(
                sub,
                "prune"
                    | "login"
                    | "logout"
                    | "link"
                    | "unlink"
                    | "gen"
                    | "generate"
                    | "daemon"
                    | "ls"
                    | "info"
                    | "telemetry"
                    | "query"
                    | "watch"
                    | "boundaries"
                    | "scan"
                    | "bin"
                    | "completion"
                    | "docs"
            ) =>
        {
            names.clone()
        }
        _ => Vec::new(),
    };
    if tasks.is_empty() {
        None
    } else {
        Some(PmCall::Scripts(tasks))
    }
}

fn npm(argv: &[Word], g: Grammar) -> Option<PmCall> {
    let i = skip_options(argv, 1, g);
    let sub = argv.get(i)?.text.as_str();
    match sub {
        "run" | "run-script" | "rum" | "urn" => {
            let j = skip_options(argv, i + 1, g);
            argv.get(j).and_then(|w| script("npm", &w.text, j + 1))
        }
        "start" | "restart" => script("npm", "start", i + 1),
        "test" | "t" | "tst" => script("npm", "test", i + 1),
        "stop" => script("npm", "stop", i + 1),
        "exec" | "x" => exec_at(argv, i + 1),
        _ => None,
    }
}

fn pnpm(argv: &[Word], from: usize, g: Grammar) -> Option<PmCall> {
    let i = skip_options(argv, from, g);
    let sub = argv.get(i)?.text.as_str();
    match sub {
        "run" | "run-script" => {
            let j = skip_options(argv, i + 1, g);
            argv.get(j).and_then(|w| script("pnpm", &w.text, j + 1))
        }
        "exec" | "dlx" => exec_at(argv, i + 1),
        "start" => script("pnpm", "start", i + 1),
        "test" | "t" => script("pnpm", "test", i + 1),
        "recursive" | "multi" | "m" => pnpm(argv, i + 1, g),
        s if PNPM_BUILTIN.contains(&s) => None,
        s => script("pnpm", s, i + 1),
    }
}

fn yarn(argv: &[Word], from: usize, g: Grammar) -> Option<PmCall> {
    let i = skip_options(argv, from, g);
    let sub = argv.get(i)?.text.as_str();
    match sub {
        "run" => {
            let j = skip_options(argv, i + 1, g);
            argv.get(j).and_then(|w| script("yarn", &w.text, j + 1))
        }
        "exec" | "dlx" => exec_at(argv, i + 1),
        "workspace" => yarn(argv, i + 2, g),
        "workspaces" => {
            if argv.get(i + 1).is_some_and(|w| w.text == "foreach") {
                let j = skip_options(argv, i + 2, YARN_FOREACH);
                yarn_rest(argv, j)
            } else {
                None
            }
        }
        "start" => script("yarn", "start", i + 1),
        "test" => script("yarn", "test", i + 1),
        s if YARN_BUILTIN.contains(&s) => None,
        s => script("yarn", s, i + 1),
    }
}

/// `yarn workspaces foreach [run] <name>`.
fn yarn_rest(argv: &[Word], j: usize) -> Option<PmCall> {
    match argv.get(j).map(|w| w.text.as_str()) {
        Some("run") => argv.get(j + 1).and_then(|w| script("yarn", &w.text, j + 2)),
        Some(s) => script("yarn", s, j + 1),
        None => None,
    }
}

fn bun(argv: &[Word], g: Grammar) -> Option<PmCall> {
    let i = skip_options(argv, 1, g);
    let sub = argv.get(i)?.text.as_str();
    match sub {
        "run" => {
            let j = skip_options(argv, i + 1, BUN_RUN);
            let name = argv.get(j)?.text.as_str();
            if is_file_like(name) {
                return None;
            }
            script("bun", name, j + 1)
        }
        "x" => exec_at(argv, i + 1),
        s if BUN_BUILTIN.contains(&s) || is_file_like(s) => None,
        s => script("bun", s, i + 1),
    }
}

fn is_file_like(name: &str) -> bool {
    name.contains('/')
        || [".ts", ".js", ".mjs", ".cjs", ".tsx", ".jsx"]
            .iter()
            .any(|e| name.ends_with(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(s: &str) -> Option<PmCall> {
        let w: Vec<Word> = s.split_whitespace().map(Word::plain).collect();
        pm_call(&w)
    }

    fn name(s: &str) -> Option<String> {
        match call(s) {
            Some(PmCall::Script { name, .. }) => Some(name),
            _ => None,
        }
    }

    #[test]
    fn scripts() {
        assert_eq!(name("npm run build").as_deref(), Some("build"));
        assert_eq!(
            name("npm run-script build:win").as_deref(),
            Some("build:win")
        );
        assert_eq!(name("npm --prefix web run dev").as_deref(), Some("dev"));
        assert_eq!(name("npm -w app run build").as_deref(), Some("build"));
        assert_eq!(name("npm start").as_deref(), Some("start"));
        assert_eq!(name("npm restart").as_deref(), Some("start"));
        assert_eq!(name("npm test").as_deref(), Some("test"));
        assert_eq!(name("yarn build").as_deref(), Some("build"));
        assert_eq!(name("yarn run headless").as_deref(), Some("headless"));
        assert_eq!(name("yarn workspace web build").as_deref(), Some("build"));
        assert_eq!(name("pnpm dev").as_deref(), Some("dev"));
        assert_eq!(name("pnpm --filter web build").as_deref(), Some("build"));
        assert_eq!(name("pnpm -r run build").as_deref(), Some("build"));
        assert_eq!(name("bun run build").as_deref(), Some("build"));
        assert_eq!(name("deno task build").as_deref(), Some("build"));
        assert_eq!(name("npm run"), None);
        assert_eq!(name("npm install"), None);
        assert_eq!(name("yarn add vite"), None);
        assert_eq!(name("pnpm install"), None);
        assert_eq!(name("bun build ./x.ts"), None);
        assert_eq!(name("bun run ./x.ts"), None);
    }

    #[test]
    fn package_specs() {
        let bin = |s: &str| package_bin(s);
        assert_eq!(bin("vite@5").as_deref(), Some("vite"));
        assert_eq!(bin("electron@^28.1.0").as_deref(), Some("electron"));
        assert_eq!(bin("tsc@latest").as_deref(), Some("tsc"));
        assert_eq!(bin("@vue/cli@5").as_deref(), Some("@vue/cli"));
        assert_eq!(bin("npm:vite@5").as_deref(), Some("vite"));
        assert_eq!(bin("npm:vite").as_deref(), Some("vite"));
        assert_eq!(bin("npm:typescript@5/tsc").as_deref(), Some("tsc"));
        assert_eq!(bin("npm:typescript/tsc").as_deref(), Some("tsc"));
        assert_eq!(bin("npm:@scope/pkg@1").as_deref(), Some("@scope/pkg"));
        assert_eq!(bin("npm:@scope/pkg/bin").as_deref(), Some("bin"));
        assert_eq!(bin("vite"), None);
        assert_eq!(bin("@vue/cli"), None);
        assert_eq!(bin("./x@1"), None);
        assert_eq!(bin("@"), None);
    }

    #[test]
    fn execs() {
        assert_eq!(
            call("npx tsc -p x"),
            Some(PmCall::Exec {
                start: 1,
                script: None
            })
        );
        assert_eq!(
            call("npx -y -p typescript tsc"),
            Some(PmCall::Exec {
                start: 4,
                script: None
            })
        );
        assert_eq!(
            call("npm exec -- vite build"),
            Some(PmCall::Exec {
                start: 3,
                script: None
            })
        );
        assert_eq!(
            call("pnpm dlx vite build"),
            Some(PmCall::Exec {
                start: 2,
                script: None
            })
        );
        assert_eq!(
            call("yarn dlx -p vite vite"),
            Some(PmCall::Exec {
                start: 4,
                script: None
            })
        );
        assert_eq!(
            call("npx -c x"),
            Some(PmCall::Exec {
                start: 3,
                script: Some("x".into())
            })
        );
        assert_eq!(call("npx"), None);
        assert_eq!(
            call("deno run -A npm:vite@5 build"),
            Some(PmCall::Exec {
                start: 3,
                script: None
            })
        );
        assert_eq!(call("deno run -A main.ts"), None);
        assert_eq!(
            call("run-s build dev"),
            Some(PmCall::Scripts(vec!["build".into(), "dev".into()]))
        );
        let tasks = |s: &str| match call(s) {
            Some(PmCall::Scripts(v)) => v,
            _ => Vec::new(),
        };
        assert_eq!(tasks("turbo run build --filter app"), ["build"]);
        assert_eq!(tasks("turbo build"), ["build"]);
        assert_eq!(tasks("lerna run build --scope app"), ["build"]);
        assert_eq!(tasks("nx build app"), ["build"]);
        assert_eq!(tasks("nx run app:build:production"), ["build"]);
        assert_eq!(tasks("nx run app:build"), ["build"]);
        assert_eq!(tasks("nx run-many -t build,lint"), ["build", "lint"]);
        assert!(tasks("nx graph").is_empty());
        assert!(tasks("turbo prune app").is_empty());
    }
}
