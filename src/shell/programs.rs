//! The program table: what the analysis knows about a program, by its name, in one place.
//!
//! Each row of [`PROGRAMS`] says what one program is (a shell, an interpreter, a wrapper, a
//! writer, a package runner, a container engine, a multicall binary, an HTTP client, a
//! process killer), how it reads its options ([`Grammar`]: which options take a value) and
//! how it treats its stdin. Every module that asks "what is this program" reads this table:
//! the heredoc classifier, the wrapper peeler, the interpreter reader, the script-file
//! reader, the write targets, the package-manager and container readers and the rules.
//! Adding a program is one row; a row names its handler when the program has a syntax of
//! its own (PowerShell's abbreviated parameters, `find -exec`, `tmux` subcommands).
//!
//! Decisions:
//! - A row holds the program's own (global) options. A subcommand's options live with the
//!   code that reads that subcommand (`docker run`'s flags in `docker.rs`, `git reset`'s in
//!   `gitopts.rs`, `yarn`'s built-in commands in `pm.rs`).
//! - Names are [`command_name`](super::word::command_name)s: lowercase, without a Windows
//!   extension. POSIX programs, PowerShell cmdlets and their aliases share one namespace, as
//!   they share the command position; a dialect-specific meaning says so in its field.
//! - A versioned interpreter name (`python3.12`, `pypy3.10`, `perl5.36`, `php8.2`) is the
//!   interpreter's row.
//! - The table is sorted by name (a compile-time check) and searched by bisection: no map is
//!   built, at start or per call.

use super::Dialect;

/// Which options of a program take a value; every other option is a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grammar {
    /// Short option letters that take a value (`-u root`, `-uroot`).
    pub short: &'static str,
    /// Long option names, without `--`, that take a value (`--user root`).
    pub long: &'static [&'static str],
}

impl Grammar {
    /// A program whose options are all flags.
    pub const NONE: Grammar = Grammar {
        short: "",
        long: &[],
    };

    /// Whether the option word `t`, spelled whole (`-w`, `--workspace`), takes the next
    /// word as its value. A bundle (`-xw`) or an inline value (`--workspace=a`) does not.
    pub fn takes_value(&self, t: &str) -> bool {
        if let Some(long) = t.strip_prefix("--") {
            return self.long.contains(&long);
        }
        let b = t.as_bytes();
        b.len() == 2 && b[0] == b'-' && self.short.as_bytes().contains(&b[1])
    }
}

const fn g(short: &'static str, long: &'static [&'static str]) -> Grammar {
    Grammar { short, long }
}

/// How a program treats what it reads on stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// Nothing known about it.
    Unknown,
    /// Reads data only.
    Inert,
    /// Runs the commands it reads (`bash`, `ssh host`, `su`), in [`Program::stdin_dialect`].
    Shell,
    /// An interpreter of another language: reads its program from stdin unless it was
    /// given code (`-c`, `-e`) or a script file.
    Program,
}

/// The languages whose programs the analysis reads (see `interp.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// `python`, `python3`, `py`, `pypy3`.
    Python,
    /// `node`, `deno`, `bun`.
    Js,
    /// `perl`.
    Perl,
    /// `ruby`.
    Ruby,
    /// `php`.
    Php,
    /// `awk`, `gawk`, `mawk`, `nawk`.
    Awk,
}

/// How a language's interpreters take inline code: the options whose value is the code,
/// the options that take another value, and the one-letter switches that may be bundled in
/// front of the code option (`perl -lne`, `python -Ic`).
#[derive(Clone, Copy, Debug)]
pub struct CodeFlags {
    /// How explanations name the program's source (`python -c`).
    pub via: &'static str,
    /// Options whose value is the program.
    pub code: &'static [&'static str],
    /// Other options that take a value.
    pub value: &'static [&'static str],
    /// Switches that may come before the code option in one word.
    pub bundle: &'static str,
}

impl Lang {
    /// How this language's interpreters take inline code (awk's program is its first
    /// operand: `interp.rs` reads it).
    pub fn code_flags(self) -> CodeFlags {
        match self {
            Lang::Python => CodeFlags {
                via: "python -c",
                code: &["-c"],
                value: &["-m", "-W", "-X", "-Q"],
                bundle: "IbBdEhiOqsSuvx",
            },
            Lang::Js => CodeFlags {
                via: "node -e",
                code: &["-e", "--eval", "-p", "--print", "-pe"],
                value: &[
                    "-r",
                    "--require",
                    "--import",
                    "--loader",
                    "--env-file",
                    "--title",
                ],
                bundle: "",
            },
            Lang::Perl => CodeFlags {
                via: "perl -e",
                code: &["-e", "-E"],
                value: &["-I", "-M", "-m", "-x"],
                bundle: "lnpaswWtTcU0i",
            },
            Lang::Ruby => CodeFlags {
                via: "ruby -e",
                code: &["-e"],
                value: &["-r", "-I", "-C", "-E", "-F"],
                bundle: "nplawsvdU",
            },
            Lang::Php => CodeFlags {
                via: "php -r",
                code: &["-r"],
                value: &["-d", "-c", "-z"],
                bundle: "nqH",
            },
            // awk's program is its first operand or its `-e`/`--source` texts (`interp.rs`).
            Lang::Awk => CodeFlags {
                via: "awk",
                code: &[],
                value: &[],
                bundle: "",
            },
        }
    }
}

/// A wrapper whose grammar is "options, N operands, then the command", or "an option
/// carries a command string": `nice`, `timeout`, `flock`, `su -c`, `taskset`, ... Its
/// value-taking options are the row's [`Program::opts`].
#[derive(Clone, Copy, Debug)]
pub struct Prefix {
    /// Operands before the command (`flock FILE`, `taskset MASK`, `timeout DURATION`).
    pub skip: usize,
    /// Short options whose value is a command string.
    pub script_short: &'static str,
    /// Long options whose value is a command string.
    pub script_long: &'static [&'static str],
    /// Options may follow operands (`su - root -c 'cmd'`): the script option is looked for
    /// in every argument.
    pub permute: bool,
    /// Nothing runs without the script option (`su USER` is an interactive shell).
    pub needs_script: bool,
    /// Options that make it act on something else and run nothing (`ionice -p PID`).
    pub inert: &'static [&'static str],
    /// How explanations name a command string it carries (`flock -c`).
    pub via: &'static str,
}

const PREFIX: Prefix = Prefix {
    skip: 0,
    script_short: "",
    script_long: &[],
    permute: false,
    needs_script: false,
    inert: &[],
    via: "wrapper -c",
};

/// How the wrapper peeler (`wrappers/`) finds the command a wrapper runs.
#[derive(Clone, Copy, Debug)]
pub enum Wrap {
    /// Data: options by [`Program::opts`], operands, a script option ([`Prefix`]).
    Prefix(&'static Prefix),
    /// The head only is dropped (`nohup CMD`, `cross-env A=1 CMD`).
    Drop,
    /// `env [-i] [-u N] [NAME=V]… CMD`, `env -S 'CMD'`.
    Env,
    /// `sudo [opts] CMD`, `sudo -e`, a bare `sudo -s`.
    Sudo,
    /// `command [-p] CMD`; `command -v` runs nothing.
    Command,
    /// `watch [opts] 'CMD'` (a string unless `-x`).
    Watch,
    /// `rtk [opts] [proxy|test|…] CMD`.
    Rtk,
    /// A package runner (`npx`, `npm exec`, `pnpm dlx`, …): explanations name it so.
    Runner(&'static str),
    /// `corepack <manager> …`.
    Corepack,
    /// `node node_modules/<pkg>/bin/<cmd>`: the package's command.
    NodeBin,
    /// A POSIX shell: `-c 'CMD'` (named so in explanations), a script file, or stdin.
    Shell(&'static str),
    /// A multicall binary: its first operand is the program it acts as (`busybox rm`).
    Multicall,
    /// `eval WORDS`: the words are a command string.
    Eval,
    /// `Invoke-Expression`: its words are a PowerShell command string.
    Iex,
    /// `source FILE` / `. FILE`.
    Source,
    /// `cmd /c|/k`.
    Cmd,
    /// `powershell|pwsh -Command|-EncodedCommand|-File`.
    PowerShell,
    /// cmd's `start` (PowerShell's `Start-Process` in PowerShell).
    Start,
    /// PowerShell's `Start-Process`.
    StartProcess,
    /// `tmux new-session|send-keys|…`.
    Tmux,
    /// `xargs [opts] CMD`.
    Xargs,
    /// `find … -exec CMD ;`.
    Find,
    /// A container engine's `run`/`exec` (see [`Program::container`]).
    Container,
    /// `wsl [opts] CMD`.
    Wsl,
    /// `concurrently 'CMD' 'npm:script'…`.
    Concurrently,
    /// `cross-env-shell 'CMD'`.
    CrossEnvShell,
    /// `git -c alias.x=… x`.
    GitAlias,
    /// `parallel CMD ::: ARGS`.
    Parallel,
    /// `trap 'CMD' SIGNAL…`: the command runs when the signal comes (or at exit).
    Trap,
}

/// Which operands a writer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Every operand.
    All,
    /// Every operand; a tree when a recursive flag is given.
    Delete,
    /// Every operand, always a whole tree (`rimraf`, `trash`).
    DeleteTree,
    /// The last operand (or `-t DIR`) receives the others.
    Dest,
    /// Like [`Writes::Dest`], and the sources are removed.
    Move,
    /// Files edited in place when `-i` is given; the first operand is the script unless
    /// `-e`/`-f` gave one.
    InPlace,
    /// `dd of=FILE`.
    Dd,
    /// `patch [-o OUT] [FILE [PATCH]]`: the first operand.
    Patch,
    /// The value of `-o`/`--output` (`sort -o FILE`).
    Output,
    /// The second operand (`uniq IN OUT`).
    Second,
    /// A compressor: each operand is replaced by its packed (or unpacked) form.
    Compress(&'static Compress),
    /// awk: its file operands, with `-i inplace` (gawk's in-place extension).
    AwkInPlace,
    /// `curl -o FILE`, `-O` (the URL's last path part), `--output-dir`, `-D`, `-c`.
    Curl,
    /// `wget URL` (the URL's last path part), `-O FILE`, `-P DIR`, `-r` (a tree).
    Wget,
    /// `tar -x` (the `-C` folder, or members inside it), `tar -c -f OUT` (the archive).
    Tar,
    /// `unzip ARCHIVE [MEMBER…] [-d DIR]`.
    Unzip,
    /// `find START… -delete`, `-exec WRITER {}`: the start folders, whole.
    Find,
}

/// How a compressor names what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compress {
    /// The suffix of its packed files (`.gz`).
    pub ext: &'static str,
    /// It unpacks unless told to pack (`gunzip`, `unxz`).
    pub unpacks: bool,
    /// It keeps the file it read unless told to remove it (`zstd`).
    pub keeps: bool,
}

const fn compress(ext: &'static str, unpacks: bool, keeps: bool) -> Compress {
    Compress {
        ext,
        unpacks,
        keeps,
    }
}
const GZ: Compress = compress(".gz", false, false);
const GUNZIP: Compress = compress(".gz", true, false);
const BZ2: Compress = compress(".bz2", false, false);
const BUNZIP2: Compress = compress(".bz2", true, false);
const XZ: Compress = compress(".xz", false, false);
const UNXZ: Compress = compress(".xz", true, false);
const ZST: Compress = compress(".zst", false, true);
const UNZSTD: Compress = compress(".zst", true, true);
const GZIP_OPTS: Grammar = g("S", &["suffix"]);
const XZ_OPTS: Grammar = g(
    "STFCM",
    &["suffix", "threads", "format", "check", "memlimit"],
);
const ZSTD_OPTS: Grammar = g("oDT", &["output", "dict", "threads"]);
const AWK_OPTS: Grammar = g(
    "fvFiel",
    &[
        "file",
        "assign",
        "field-separator",
        "include",
        "source",
        "load",
    ],
);

/// What a package manager or task runner is, for `pm.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pm {
    /// A package runner shim of npm or pnpm (`npx`, `pnpx`): runs a package's command.
    Npx,
    /// `bunx`: runs a package's command.
    Bunx,
    /// `npm`.
    Npm,
    /// `pnpm`.
    Pnpm,
    /// `yarn`.
    Yarn,
    /// `bun`.
    Bun,
    /// `deno`.
    Deno,
    /// A workspace task runner (`turbo`, `lerna`, `nx`).
    Monorepo,
    /// Runs several package scripts (`npm-run-all`, `run-s`, `run-p`).
    RunAll,
}

/// What a container program is, for `docker.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// An engine (`docker`, `podman`): `run`, `exec`, `container run`, `compose …`.
    Engine,
    /// A compose front end (`docker-compose`): `run`, `exec`.
    Compose,
}

/// A program that can switch the guard's hooks off (issue 27: no door from inside a session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hooks {
    /// The guard itself: `install` and `uninstall` rewrite the hook wiring every session runs.
    Wiring,
    /// The launcher the hook entries run (`session-lock/guard-hook`): runs the guard with its
    /// arguments (`guard-hook uninstall` is `guard uninstall`), unless `--tool` names another.
    Launcher,
    /// The Claude Code client: `--bare`, `--settings` with `disableAllHooks` and
    /// `--setting-sources` without the user's and the project's settings start a session the
    /// hooks do not reach.
    Client,
}

/// What the analysis knows about one program.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// Its [`command_name`](super::word::command_name).
    pub name: &'static str,
    /// Which of its own options take a value.
    pub opts: Grammar,
    /// A shell: the language its `-c` strings, script files and stdin are in.
    pub shell: Option<Dialect>,
    /// How it treats its stdin.
    pub stdin: Stdin,
    /// The language whose inline programs it runs (`python -c`, an awk program).
    pub lang: Option<Lang>,
    /// An interpreter: its first operand is a script file it runs (`node x.js`,
    /// `cscript x.vbs`).
    pub runs_file: bool,
    /// A POSIX shell or `source`: the script file it runs is read as shell.
    pub shell_file: bool,
    /// How the wrapper peeler unwraps it.
    pub wrap: Option<Wrap>,
    /// Which of its operands it writes.
    pub writes: Option<Writes>,
    /// A package manager or task runner.
    pub pm: Option<Pm>,
    /// A container program.
    pub container: Option<Container>,
    /// An HTTP client (its URLs are checked like `curl`'s).
    pub http: bool,
    /// Ends processes named on its command line.
    pub kills: bool,
    /// Can switch the guard's hooks off.
    pub hooks: Option<Hooks>,
}

impl Program {
    /// The dialect of the commands it reads on stdin (when [`Stdin::Shell`]).
    pub fn stdin_dialect(&self) -> Dialect {
        self.shell.unwrap_or(Dialect::Posix)
    }
}

const BASE: Program = Program {
    name: "",
    opts: Grammar::NONE,
    shell: None,
    stdin: Stdin::Unknown,
    lang: None,
    runs_file: false,
    shell_file: false,
    wrap: None,
    writes: None,
    pm: None,
    container: None,
    http: false,
    kills: false,
    hooks: None,
};

const fn row(name: &'static str) -> Program {
    Program { name, ..BASE }
}

/// A multicall binary (`busybox`, `toybox`, `coreutils`): acts as the program its first
/// operand (or `--coreutils-prog=NAME`) names; `busybox sh` reads a script on stdin.
const fn multicall(name: &'static str) -> Program {
    Program {
        stdin: Stdin::Shell,
        wrap: Some(Wrap::Multicall),
        ..row(name)
    }
}

/// Reads data on stdin.
const fn inert(name: &'static str) -> Program {
    Program {
        stdin: Stdin::Inert,
        ..row(name)
    }
}

/// A POSIX shell: `-c` strings, script files and stdin are shell.
const fn posix_shell(name: &'static str, via: &'static str) -> Program {
    Program {
        opts: g("oO", &["rcfile", "init-file"]),
        shell: Some(Dialect::Posix),
        stdin: Stdin::Shell,
        shell_file: true,
        wrap: Some(Wrap::Shell(via)),
        ..row(name)
    }
}

/// An interpreter that runs a script file or reads its program from stdin.
const fn interpreter(name: &'static str, lang: Option<Lang>) -> Program {
    Program {
        stdin: Stdin::Program,
        lang,
        runs_file: true,
        ..row(name)
    }
}

/// awk: its program is its first operand, or stdin with `-f -`; an operand after the
/// program is a data file, not a script it runs.
const fn awk(name: &'static str) -> Program {
    Program {
        stdin: Stdin::Program,
        lang: Some(Lang::Awk),
        opts: AWK_OPTS,
        writes: Some(Writes::AwkInPlace),
        ..row(name)
    }
}

const fn wrapper(name: &'static str, wrap: Wrap, opts: Grammar) -> Program {
    Program {
        opts,
        wrap: Some(wrap),
        ..row(name)
    }
}

/// A wrapper read by its grammar alone.
const fn prefix(name: &'static str, p: &'static Prefix, opts: Grammar) -> Program {
    wrapper(name, Wrap::Prefix(p), opts)
}

const fn writer(name: &'static str, writes: Writes, opts: Grammar) -> Program {
    Program {
        opts,
        writes: Some(writes),
        ..row(name)
    }
}

/// A compressor: reads data on stdin, replaces its file operands.
const fn packer(name: &'static str, c: &'static Compress, opts: Grammar) -> Program {
    Program {
        stdin: Stdin::Inert,
        ..writer(name, Writes::Compress(c), opts)
    }
}

const fn pm(name: &'static str, pm: Pm, wrap: Option<Wrap>, opts: Grammar) -> Program {
    Program {
        opts,
        pm: Some(pm),
        wrap,
        ..row(name)
    }
}

const fn http(name: &'static str) -> Program {
    Program {
        http: true,
        ..row(name)
    }
}

const fn killer(name: &'static str) -> Program {
    Program {
        kills: true,
        ..row(name)
    }
}

const fn container(name: &'static str, c: Container) -> Program {
    Program {
        opts: match c {
            Container::Engine => ENGINE_OPTS,
            Container::Compose => COMPOSE_OPTS,
        },
        wrap: Some(Wrap::Container),
        container: Some(c),
        ..row(name)
    }
}

const SUDO_LONG: &[&str] = &[
    "user",
    "group",
    "host",
    "prompt",
    "chdir",
    "chroot",
    "role",
    "type",
    "command-timeout",
    "other-user",
    "close-from",
];
const ENGINE_OPTS: Grammar = g(
    "Hcl",
    &[
        "host",
        "context",
        "config",
        "log-level",
        "tlscacert",
        "tlscert",
        "tlskey",
        "url",
        "connection",
    ],
);
/// Also `docker compose`'s options.
pub const COMPOSE_OPTS: Grammar = g(
    "fp",
    &[
        "file",
        "project-name",
        "env-file",
        "profile",
        "project-directory",
        "ansi",
        "progress",
        "parallel",
    ],
);
const GIT_OPTS: Grammar = g(
    "Cc",
    &[
        "git-dir",
        "work-tree",
        "namespace",
        "config-env",
        "super-prefix",
        "exec-path",
    ],
);
const MONOREPO_OPTS: Grammar = g(
    "Fpc",
    &[
        "filter",
        "concurrency",
        "cache-dir",
        "output-logs",
        "log-order",
        "scope",
        "ignore",
        "cwd",
        "env-mode",
        "log-prefix",
        "projects",
        "exclude",
        "configuration",
        "base",
        "head",
    ],
);
const YARN_OPTS: Grammar = g("", &["cwd", "mutex", "modules-folder", "cache-folder"]);
/// The options of a package runner (`npx`, `npm exec`, `pnpm dlx`, `yarn dlx`).
pub const EXEC_OPTS: Grammar = g("pc", &["package", "call", "node-options"]);
const RUN_ALL_OPTS: Grammar = g("", &["npm-path", "max-parallel", "print-label"]);
const NODE_OPTS: Grammar = g(
    "r",
    &[
        "require",
        "import",
        "loader",
        "experimental-loader",
        "env-file",
        "title",
    ],
);
const DELETE_OPTS: Grammar = g("n", &["iterations", "random-source", "size"]);
const ALL_OPTS: Grammar = g("sdrtAB", &["size", "reference", "date", "output-error"]);
const COPY_OPTS: Grammar = g("tS", &["target-directory", "suffix", "backup"]);
const SED_OPTS: Grammar = g("efl", &["expression", "file", "line-length"]);
const STRACE_OPTS: Grammar = g("oepsuaEIXSbPn", &["output", "signal", "trace", "expr"]);
const SU_OPTS: Grammar = g(
    "gGsw",
    &["group", "supp-group", "shell", "whitelist-environment"],
);
const SU: Prefix = Prefix {
    script_short: "c",
    script_long: &["command", "session-command"],
    permute: true,
    needs_script: true,
    via: "su -c",
    ..PREFIX
};
const SKIP1: Prefix = Prefix { skip: 1, ..PREFIX };
const CURL_OPTS: Grammar = g(
    "odHXuAebcFTwxKrmYyzECDQ",
    &[
        "output",
        "output-dir",
        "data",
        "data-raw",
        "data-binary",
        "data-urlencode",
        "data-ascii",
        "header",
        "request",
        "user",
        "user-agent",
        "referer",
        "cookie",
        "cookie-jar",
        "form",
        "form-string",
        "upload-file",
        "write-out",
        "proxy",
        "config",
        "range",
        "max-time",
        "connect-timeout",
        "cert",
        "key",
        "cacert",
        "retry",
        "url",
        "dump-header",
        "trace",
        "trace-ascii",
        "stderr",
        "resolve",
        "json",
        "quote",
        "limit-rate",
        "max-filesize",
        "time-cond",
        "variable",
        "etag-save",
        "etag-compare",
        "hsts",
        "alt-svc",
    ],
);
const WGET_OPTS: Grammar = g(
    "OoaPiDeUTtwQlAR",
    &[
        "output-document",
        "output-file",
        "append-output",
        "directory-prefix",
        "input-file",
        "user-agent",
        "header",
        "tries",
        "timeout",
        "wait",
        "quota",
        "level",
        "accept",
        "reject",
        "domains",
        "user",
        "password",
        "post-data",
        "post-file",
        "execute",
        "referer",
        "load-cookies",
        "save-cookies",
        "base",
        "config",
        "method",
        "body-data",
    ],
);
const TAR_OPTS: Grammar = g(
    "fCTXbHKNVgLFI",
    &[
        "file",
        "directory",
        "files-from",
        "exclude-from",
        "exclude",
        "blocking-factor",
        "format",
        "label",
        "use-compress-program",
        "owner",
        "group",
        "mode",
        "mtime",
        "newer",
        "newer-mtime",
        "transform",
        "xform",
        "strip-components",
        "to-command",
        "checkpoint-action",
        "index-file",
        "listed-incremental",
        "suffix",
        "volno-file",
        "info-script",
        "new-volume-script",
        "rsh-command",
        "record-size",
        "tape-length",
    ],
);

/// The table, sorted by name.
pub static PROGRAMS: &[Program] = &[
    Program {
        wrap: Some(Wrap::Source),
        shell_file: true,
        ..row(".")
    },
    inert(":"),
    inert("ack"),
    inert("ag"),
    Program {
        stdin: Stdin::Inert,
        ..http("aria2c")
    },
    posix_shell("ash", "sh -c"),
    awk("awk"),
    inert("b2sum"),
    inert("base32"),
    inert("base64"),
    posix_shell("bash", "bash -c"),
    inert("bashate"),
    wrapper("builtin", Wrap::Drop, Grammar::NONE),
    Program {
        opts: g("c", &["cwd", "config"]),
        pm: Some(Pm::Bun),
        wrap: Some(Wrap::Runner("bun x")),
        ..interpreter("bun", Some(Lang::Js))
    },
    pm("bunx", Pm::Bunx, Some(Wrap::Runner("bunx")), EXEC_OPTS),
    packer("bunzip2", &BUNZIP2, GZIP_OPTS),
    multicall("busybox"),
    packer("bzip2", &BZ2, GZIP_OPTS),
    prefix("caffeinate", &PREFIX, g("tw", &[])),
    wrapper("call", Wrap::Drop, Grammar::NONE),
    inert("cat"),
    prefix("catchsegv", &PREFIX, Grammar::NONE),
    prefix("cgexec", &PREFIX, g("g", &[])),
    inert("checkbashisms"),
    prefix("chronic", &PREFIX, Grammar::NONE),
    prefix("chrt", &SKIP1, Grammar::NONE),
    inert("cksum"),
    Program {
        opts: g(
            "",
            &[
                "settings",
                "setting-sources",
                "model",
                "permission-mode",
                "mcp-config",
                "output-format",
                "input-format",
                "resume",
                "session-id",
                "append-system-prompt",
                "system-prompt",
                "fallback-model",
                "max-turns",
            ],
        ),
        hooks: Some(Hooks::Client),
        ..row("claude")
    },
    inert("clip"),
    Program {
        shell: Some(Dialect::Cmd),
        stdin: Stdin::Shell,
        wrap: Some(Wrap::Cmd),
        ..row("cmd")
    },
    inert("cmp"),
    inert("column"),
    inert("comm"),
    wrapper("command", Wrap::Command, Grammar::NONE),
    wrapper(
        "concurrently",
        Wrap::Concurrently,
        g(
            "ncpsmlt",
            &[
                "names",
                "prefix-colors",
                "prefix",
                "success",
                "max-processes",
                "prefix-length",
                "timestamp-format",
                "restart-tries",
                "restart-after",
                "names-separator",
                "default-input-target",
            ],
        ),
    ),
    prefix("coproc", &PREFIX, Grammar::NONE),
    wrapper("corepack", Wrap::Corepack, Grammar::NONE),
    multicall("coreutils"),
    writer("cp", Writes::Dest, COPY_OPTS),
    wrapper("cross-env", Wrap::Drop, Grammar::NONE),
    wrapper("cross-env-shell", Wrap::CrossEnvShell, Grammar::NONE),
    Program {
        runs_file: true,
        ..row("cscript")
    },
    inert("csplit"),
    Program {
        stdin: Stdin::Inert,
        http: true,
        ..writer("curl", Writes::Curl, CURL_OPTS)
    },
    inert("cut"),
    posix_shell("dash", "dash -c"),
    prefix("dbus-launch", &PREFIX, Grammar::NONE),
    Program {
        stdin: Stdin::Inert,
        writes: Some(Writes::Dd),
        ..row("dd")
    },
    writer("del-cli", Writes::DeleteTree, Grammar::NONE),
    Program {
        pm: Some(Pm::Deno),
        wrap: Some(Wrap::Runner("deno run npm:")),
        ..interpreter("deno", Some(Lang::Js))
    },
    inert("diff"),
    wrapper("doas", Wrap::Sudo, g("uC", SUDO_LONG)),
    container("docker", Container::Engine),
    container("docker-compose", Container::Compose),
    inert("dos2unix"),
    inert("echo"),
    inert("egrep"),
    prefix("entr", &SKIP1, Grammar::NONE),
    wrapper("env", Wrap::Env, g("uC", &["unset", "chdir"])),
    inert("envsubst"),
    wrapper("eval", Wrap::Eval, Grammar::NONE),
    prefix("exec", &PREFIX, g("a", &[])),
    inert("expand"),
    prefix("faketime", &SKIP1, g("f", &[])),
    inert("false"),
    inert("fgrep"),
    inert("file"),
    Program {
        writes: Some(Writes::Find),
        ..wrapper("find", Wrap::Find, g("D", &[]))
    },
    prefix("firejail", &PREFIX, Grammar::NONE),
    posix_shell("fish", "fish -c"),
    prefix(
        "flock",
        &Prefix {
            skip: 1,
            script_short: "c",
            script_long: &["command"],
            via: "flock -c",
            ..PREFIX
        },
        g("wE", &["timeout", "conflict-exit-code"]),
    ),
    inert("fmt"),
    inert("fold"),
    awk("gawk"),
    inert("gh"),
    Program {
        stdin: Stdin::Inert,
        opts: GIT_OPTS,
        wrap: Some(Wrap::GitAlias),
        ..row("git")
    },
    inert("glab"),
    inert("gpg"),
    inert("grep"),
    Program {
        stdin: Stdin::Inert,
        ..writer("gsed", Writes::InPlace, SED_OPTS)
    },
    Program {
        hooks: Some(Hooks::Wiring),
        ..row("guard")
    },
    Program {
        hooks: Some(Hooks::Launcher),
        ..row("guard-hook")
    },
    packer("gunzip", &GUNZIP, GZIP_OPTS),
    packer("gzip", &GZ, GZIP_OPTS),
    inert("head"),
    inert("hexdump"),
    Program {
        stdin: Stdin::Inert,
        http: true,
        ..row("http")
    },
    Program {
        stdin: Stdin::Inert,
        ..http("httpie")
    },
    Program {
        stdin: Stdin::Inert,
        http: true,
        ..row("https")
    },
    inert("hub"),
    inert("iconv"),
    wrapper("iex", Wrap::Iex, Grammar::NONE),
    writer(
        "install",
        Writes::Dest,
        g(
            "tSgmo",
            &["target-directory", "suffix", "group", "mode", "owner"],
        ),
    ),
    wrapper("invoke-expression", Wrap::Iex, Grammar::NONE),
    http("invoke-restmethod"),
    http("invoke-webrequest"),
    prefix(
        "ionice",
        &Prefix {
            inert: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
            ..PREFIX
        },
        g("cnt", &["class", "classdata"]),
    ),
    http("irm"),
    http("iwr"),
    inert("join"),
    inert("jq"),
    interpreter("julia", None),
    killer("kill"),
    killer("killall"),
    posix_shell("ksh", "sh -c"),
    pm("lerna", Pm::Monorepo, None, MONOREPO_OPTS),
    inert("less"),
    writer("ln", Writes::Dest, COPY_OPTS),
    prefix("ltrace", &PREFIX, STRACE_OPTS),
    interpreter("lua", None),
    interpreter("luajit", None),
    inert("mail"),
    inert("mailx"),
    inert("mapfile"),
    inert("mariadb"),
    awk("mawk"),
    inert("md5sum"),
    posix_shell("mksh", "sh -c"),
    inert("more"),
    writer("mv", Writes::Move, g("tS", &["target-directory", "suffix"])),
    inert("mysql"),
    awk("nawk"),
    container("nerdctl", Container::Engine),
    prefix("nice", &PREFIX, g("n", &["adjustment"])),
    prefix(
        "nix-shell",
        &Prefix {
            script_long: &["run", "command"],
            via: "nix-shell --run",
            ..PREFIX
        },
        g("pIA", &[]),
    ),
    inert("nl"),
    Program {
        opts: NODE_OPTS,
        wrap: Some(Wrap::NodeBin),
        ..interpreter("node", Some(Lang::Js))
    },
    Program {
        opts: NODE_OPTS,
        wrap: Some(Wrap::NodeBin),
        ..interpreter("nodejs", Some(Lang::Js))
    },
    wrapper("nohup", Wrap::Drop, Grammar::NONE),
    pm(
        "npm",
        Pm::Npm,
        Some(Wrap::Runner("npm exec")),
        g(
            "w",
            &[
                "prefix",
                "workspace",
                "loglevel",
                "registry",
                "cache",
                "userconfig",
                "globalconfig",
                "script-shell",
            ],
        ),
    ),
    pm("npm-run-all", Pm::RunAll, None, RUN_ALL_OPTS),
    pm("npm-run-all2", Pm::RunAll, None, RUN_ALL_OPTS),
    pm("npx", Pm::Npx, Some(Wrap::Runner("npx")), EXEC_OPTS),
    prefix("nsenter", &PREFIX, g("tSGw", &[])),
    prefix(
        "numactl",
        &PREFIX,
        g(
            "NmCip",
            &[
                "cpunodebind",
                "membind",
                "physcpubind",
                "interleave",
                "preferred",
            ],
        ),
    ),
    pm("nx", Pm::Monorepo, None, MONOREPO_OPTS),
    inert("od"),
    inert("openssl"),
    interpreter("osascript", None),
    inert("pandoc"),
    wrapper(
        "parallel",
        Wrap::Parallel,
        g(
            "jSn",
            &["jobs", "sshlogin", "max-args", "delay", "joblog", "results"],
        ),
    ),
    inert("paste"),
    Program {
        stdin: Stdin::Inert,
        ..writer(
            "patch",
            Writes::Patch,
            g(
                "iopdrDFBVYzg",
                &[
                    "input",
                    "output",
                    "strip",
                    "directory",
                    "reject-file",
                    "ifdef",
                    "fuzz",
                    "prefix",
                    "suffix",
                ],
            ),
        )
    },
    inert("pbcopy"),
    Program {
        writes: Some(Writes::InPlace),
        opts: SED_OPTS,
        ..interpreter("perl", Some(Lang::Perl))
    },
    interpreter("php", Some(Lang::Php)),
    prefix("pkexec", &PREFIX, Grammar::NONE),
    killer("pkill"),
    pm(
        "pnpm",
        Pm::Pnpm,
        Some(Wrap::Runner("pnpm exec")),
        g(
            "CF",
            &[
                "dir",
                "filter",
                "reporter",
                "workspace-concurrency",
                "changed-files-ignore-pattern",
                "test-pattern",
            ],
        ),
    ),
    pm("pnpx", Pm::Npx, Some(Wrap::Runner("npx")), EXEC_OPTS),
    container("podman", Container::Engine),
    container("podman-compose", Container::Compose),
    Program {
        shell: Some(Dialect::PowerShell),
        stdin: Stdin::Shell,
        wrap: Some(Wrap::PowerShell),
        ..row("powershell")
    },
    inert("pr"),
    inert("printf"),
    prefix("proxychains", &PREFIX, Grammar::NONE),
    inert("psql"),
    inert("pv"),
    Program {
        shell: Some(Dialect::PowerShell),
        stdin: Stdin::Shell,
        wrap: Some(Wrap::PowerShell),
        ..row("pwsh")
    },
    interpreter("py", Some(Lang::Python)),
    interpreter("pypy", Some(Lang::Python)),
    interpreter("pypy3", Some(Lang::Python)),
    interpreter("python", Some(Lang::Python)),
    interpreter("python2", Some(Lang::Python)),
    interpreter("python3", Some(Lang::Python)),
    inert("read"),
    inert("readarray"),
    inert("rev"),
    inert("rg"),
    writer("rimraf", Writes::DeleteTree, Grammar::NONE),
    writer("rm", Writes::Delete, DELETE_OPTS),
    writer("rmdir", Writes::Delete, DELETE_OPTS),
    interpreter("rscript", None),
    writer(
        "rsync",
        Writes::Dest,
        g(
            "eTfB",
            &[
                "rsh",
                "temp-dir",
                "filter",
                "exclude",
                "include",
                "backup-dir",
                "files-from",
                "exclude-from",
                "block-size",
            ],
        ),
    ),
    wrapper("rtk", Wrap::Rtk, Grammar::NONE),
    interpreter("ruby", Some(Lang::Ruby)),
    pm("run-p", Pm::RunAll, None, RUN_ALL_OPTS),
    pm("run-s", Pm::RunAll, None, RUN_ALL_OPTS),
    prefix(
        "runuser",
        &Prefix {
            script_short: "c",
            script_long: &["command", "session-command"],
            via: "runuser -c",
            ..PREFIX
        },
        g("ugGs", &["user", "group", "supp-group", "shell"]),
    ),
    wrapper("saps", Wrap::StartProcess, Grammar::NONE),
    writer("scp", Writes::Dest, g("PiocFlSJ", &[])),
    prefix(
        "script",
        &Prefix {
            script_short: "c",
            script_long: &["command"],
            needs_script: true,
            via: "script -c",
            ..PREFIX
        },
        g(
            "ETIOBm",
            &[
                "timing",
                "log-in",
                "log-out",
                "log-io",
                "log-timing",
                "echo",
            ],
        ),
    ),
    Program {
        stdin: Stdin::Inert,
        ..writer("sed", Writes::InPlace, SED_OPTS)
    },
    prefix("sem", &PREFIX, Grammar::NONE),
    inert("sendmail"),
    prefix("setsid", &PREFIX, Grammar::NONE),
    prefix("sg", &SU, SU_OPTS),
    posix_shell("sh", "sh -c"),
    inert("sha1sum"),
    inert("sha256sum"),
    inert("sha512sum"),
    inert("shellcheck"),
    inert("shfmt"),
    writer("shred", Writes::Delete, DELETE_OPTS),
    inert("shuf"),
    killer("skill"),
    Program {
        stdin: Stdin::Inert,
        ..writer(
            "sort",
            Writes::Output,
            g(
                "kotST",
                &[
                    "key",
                    "output",
                    "field-separator",
                    "buffer-size",
                    "temporary-directory",
                    "parallel",
                    "batch-size",
                    "files0-from",
                    "compress-program",
                    "random-source",
                    "sort",
                ],
            ),
        )
    },
    Program {
        wrap: Some(Wrap::Source),
        shell_file: true,
        ..row("source")
    },
    inert("split"),
    inert("sponge"),
    killer("spps"),
    inert("sqlite3"),
    writer("srm", Writes::Delete, DELETE_OPTS),
    Program {
        stdin: Stdin::Shell,
        ..row("ssh")
    },
    wrapper("start", Wrap::Start, Grammar::NONE),
    wrapper("start-process", Wrap::StartProcess, Grammar::NONE),
    prefix("stdbuf", &PREFIX, g("ioe", &["input", "output", "error"])),
    killer("stop-process"),
    prefix("strace", &PREFIX, STRACE_OPTS),
    inert("strings"),
    Program {
        stdin: Stdin::Shell,
        ..prefix("su", &SU, SU_OPTS)
    },
    wrapper("sudo", Wrap::Sudo, g("CDgprRtTUu", SUDO_LONG)),
    prefix(
        "systemd-run",
        &PREFIX,
        g(
            "pEMH",
            &[
                "unit",
                "property",
                "description",
                "slice",
                "uid",
                "gid",
                "nice",
                "working-directory",
                "setenv",
                "on-active",
                "on-calendar",
                "machine",
                "host",
                "timer-property",
                "path-property",
                "socket-property",
            ],
        ),
    ),
    inert("tac"),
    inert("tail"),
    Program {
        stdin: Stdin::Inert,
        ..writer("tar", Writes::Tar, TAR_OPTS)
    },
    prefix("taskset", &SKIP1, Grammar::NONE),
    interpreter("tclsh", None),
    Program {
        stdin: Stdin::Inert,
        ..writer("tee", Writes::All, ALL_OPTS)
    },
    prefix("time", &PREFIX, g("fo", &["format", "output"])),
    prefix("timeout", &SKIP1, g("sk", &["signal", "kill-after"])),
    wrapper("tmux", Wrap::Tmux, g("LSfT", &[])),
    prefix("torsocks", &PREFIX, Grammar::NONE),
    writer("touch", Writes::All, ALL_OPTS),
    multicall("toybox"),
    inert("tr"),
    wrapper("trap", Wrap::Trap, Grammar::NONE),
    writer("trash", Writes::DeleteTree, Grammar::NONE),
    inert("true"),
    writer("truncate", Writes::All, ALL_OPTS),
    inert("ts"),
    interpreter("ts-node", None),
    killer("tskill"),
    prefix("tsocks", &PREFIX, Grammar::NONE),
    inert("tsort"),
    interpreter("tsx", None),
    pm("turbo", Pm::Monorepo, None, MONOREPO_OPTS),
    prefix("unbuffer", &PREFIX, Grammar::NONE),
    inert("unexpand"),
    Program {
        stdin: Stdin::Inert,
        ..writer(
            "uniq",
            Writes::Second,
            g("fsw", &["skip-fields", "skip-chars", "check-chars"]),
        )
    },
    inert("unix2dos"),
    writer("unlink", Writes::Delete, DELETE_OPTS),
    prefix("unshare", &PREFIX, g("tSGw", &[])),
    packer("unxz", &UNXZ, XZ_OPTS),
    writer("unzip", Writes::Unzip, g("dPx", &[])),
    packer("unzstd", &UNZSTD, ZSTD_OPTS),
    prefix("valgrind", &PREFIX, Grammar::NONE),
    wrapper("watch", Wrap::Watch, g("nq", &["interval", "equexit"])),
    inert("wc"),
    Program {
        stdin: Stdin::Inert,
        http: true,
        ..writer("wget", Writes::Wget, WGET_OPTS)
    },
    prefix("winpty", &PREFIX, Grammar::NONE),
    inert("wl-copy"),
    Program {
        runs_file: true,
        ..row("wscript")
    },
    Program {
        stdin: Stdin::Shell,
        wrap: Some(Wrap::Wsl),
        ..row("wsl")
    },
    wrapper(
        "xargs",
        Wrap::Xargs,
        g(
            "adELnPs",
            &[
                "arg-file",
                "delimiter",
                "max-lines",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
        ),
    ),
    inert("xclip"),
    Program {
        stdin: Stdin::Inert,
        http: true,
        ..row("xh")
    },
    Program {
        stdin: Stdin::Inert,
        ..http("xhs")
    },
    inert("xmllint"),
    inert("xsel"),
    prefix("xvfb-run", &PREFIX, g("nsfpe", &[])),
    inert("xxd"),
    packer("xz", &XZ, XZ_OPTS),
    pm("yarn", Pm::Yarn, Some(Wrap::Runner("yarn dlx")), YARN_OPTS),
    pm("yarnpkg", Pm::Yarn, None, YARN_OPTS),
    inert("yq"),
    inert("zcat"),
    posix_shell("zsh", "zsh -c"),
    packer("zstd", &ZST, ZSTD_OPTS),
];

/// The row of `name` (a [`command_name`](super::word::command_name)), if the table has one.
pub fn get(name: &str) -> Option<&'static Program> {
    if let Ok(i) = PROGRAMS.binary_search_by(|p| p.name.cmp(name)) {
        return Some(&PROGRAMS[i]);
    }
    // `python3.12`, `pypy3.10`, `perl5.36`: the interpreter without its version.
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if stem.len() == name.len() || stem.is_empty() {
        return None;
    }
    let i = PROGRAMS.binary_search_by(|p| p.name.cmp(stem)).ok()?;
    let p = &PROGRAMS[i];
    (p.stdin == Stdin::Program).then_some(p)
}

/// `a` sorts before `b`, byte by byte (as [`str::cmp`] does).
const fn before(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// The table is sorted and has each name once: checked when the crate is compiled.
const _: () = {
    let mut i = 1;
    while i < PROGRAMS.len() {
        assert!(
            before(PROGRAMS[i - 1].name, PROGRAMS[i].name),
            "PROGRAMS must be sorted by name, each name once"
        );
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_its_name() {
        for p in PROGRAMS {
            assert_eq!(get(p.name).map(|r| r.name), Some(p.name));
        }
        assert!(get("mystery").is_none());
        assert!(get("").is_none());
    }

    #[test]
    fn a_versioned_interpreter_is_the_interpreter() {
        assert_eq!(get("python3.12").map(|p| p.lang), Some(Some(Lang::Python)));
        assert_eq!(get("pypy3.10").map(|p| p.lang), Some(Some(Lang::Python)));
        assert_eq!(get("perl5.36").map(|p| p.lang), Some(Some(Lang::Perl)));
        assert_eq!(get("lua5.4").map(|p| p.stdin), Some(Stdin::Program));
        // Only interpreters: a shell or a tool with a number is not its row.
        assert!(get("bash5").is_none());
        assert!(get("rm2").is_none());
        assert!(get("3").is_none());
    }

    #[test]
    fn option_words_that_take_a_value() {
        let npm = get("npm").unwrap().opts;
        assert!(npm.takes_value("-w"));
        assert!(npm.takes_value("--workspace"));
        assert!(!npm.takes_value("--workspace=a"));
        assert!(!npm.takes_value("-wa"));
        assert!(!npm.takes_value("-x"));
        assert!(!npm.takes_value("w"));
    }

    /// Lists that disagreed before they were this table, one case each.
    #[test]
    fn what_the_old_lists_disagreed_on() {
        use crate::shell::heredoc::{Reader, reader_kind};
        use crate::shell::pm::{PmCall, pm_call};
        use crate::shell::writes::targets;
        use crate::shell::{Word, analyze};
        let w = |s: &str| s.split_whitespace().map(Word::plain).collect::<Vec<_>>();
        let runs = |cmd: &str, what: &str| {
            analyze(cmd, Dialect::Posix).segments.iter().any(|s| {
                s.argv.iter().map(|w| w.text.as_str()).collect::<Vec<_>>()
                    == what.split(' ').collect::<Vec<_>>()
            })
        };
        // `pypy` was Python to the interpreter reader but not a stdin reader to the heredoc
        // classifier; a versioned `python3.12` was neither.
        assert_eq!(reader_kind(&w("pypy3 -")), Reader::Foreign);
        assert_eq!(reader_kind(&w("python3.12")), Reader::Foreign);
        assert!(runs(
            "pypy3 - <<'EOF'\nimport shutil\nshutil.rmtree('dist')\nEOF",
            "rm -rf -- dist"
        ));
        // awk was a language to the interpreter reader but inert data to the heredoc one:
        // `awk -f -` reads its program from stdin.
        assert_eq!(reader_kind(&w("gawk -f -")), Reader::Foreign);
        assert_eq!(reader_kind(&w("gawk {print}")), Reader::Inert);
        assert!(runs(
            "gawk -f - <<'EOF'\nBEGIN { system(\"git stash\") }\nEOF",
            "git stash"
        ));
        // GNU sed under its other name, and the HTTP clients the rules knew, read data.
        for reader in ["gsed s/a/b/", "xhs POST x", "aria2c -i -", "httpie"] {
            assert_eq!(reader_kind(&w(reader)), Reader::Inert, "{reader}");
        }
        // The deleters the rules knew were not write targets.
        for cmd in ["rimraf src/api", "del-cli src/api", "trash src/api"] {
            let t = targets(&analyze(cmd, Dialect::Posix));
            assert_eq!(t.len(), 1, "{cmd}");
            assert_eq!(t[0].word.text, "src/api");
            assert_eq!(t[0].reach, crate::shell::Reach::Tree);
        }
        // corepack launched `yarnpkg`, which the package-manager reader did not know.
        assert!(matches!(
            pm_call(&w("yarnpkg build")),
            Some(PmCall::Script { name, .. }) if name == "build"
        ));
        // `ionice -p PID` acts on another process, but a `-p` of the command it runs does not
        // make it run nothing.
        assert!(runs("ionice -c 3 git add -p", "git add -p"));
        assert!(!runs("ionice -p 42", "42"));
        // git's option grammar was two lists: the alias reader did not skip `--exec-path`'s
        // value, which the write reader did.
        let an = analyze(
            "git --exec-path /opt/git -c alias.nuke='reset --hard' nuke",
            Dialect::Posix,
        );
        assert!(
            an.segments
                .iter()
                .any(|s| s.wrappers.iter().any(|w| w == "git alias nuke")),
            "{:?}",
            an.segments
        );
    }

    #[test]
    fn roles_are_consistent() {
        for p in PROGRAMS {
            // A shell reads commands on stdin; an interpreter with a language runs files.
            if p.shell.is_some() {
                assert_eq!(p.stdin, Stdin::Shell, "{}", p.name);
            }
            if p.stdin == Stdin::Program && p.lang != Some(Lang::Awk) {
                assert!(p.runs_file, "{}", p.name);
            }
            if p.container.is_some() {
                assert!(matches!(p.wrap, Some(Wrap::Container)), "{}", p.name);
            }
            if p.shell_file {
                assert!(
                    matches!(p.wrap, Some(Wrap::Shell(_) | Wrap::Source)),
                    "{}",
                    p.name
                );
            }
        }
    }
}
