#![warn(missing_docs)]

//! Command analysis: shell text → segments of argv words, wrappers peeled, nested
//! commands found. Pure: no files, no processes, no clock.
//!
//! ```text
//! text ─lexer/quote/heredoc─▶ tokens ─segment─▶ segments ─wrappers/pm/docker─▶ argv
//!          ▲                                         │
//!          └──── substitutions, `bash -c` scripts, heredoc scripts, `eval`, ... ◀┘
//! ```
//!
//! The rules decide on words, not on text: `git commit -m "wrap vite build"` is one
//! `git` segment whose message is a single argv word, and `echo "rm -rf dist"` is an
//! `echo`. What runs is found wherever it hides: `$(…)`, backticks, `<(…)`, `bash -c`,
//! `eval`, `cmd /c`, `powershell -Command`, heredocs read by a shell, `find -exec`, and
//! `xargs` fed by `echo` or a heredoc.
//!
//! Work is bounded: [`MAX_INPUT_BYTES`] of input, nesting up to [`lexer::MAX_DEPTH`],
//! a total lexing budget of [`MAX_WORK_BYTES`] (nested scripts are lexed again), and
//! [`segment::MAX_SEGMENTS`] segments. Past a limit the analysis stops and says so in
//! [`Analysis::truncated`]; it never fails and never panics.
//!
//! PowerShell approximations: one lexer serves all three dialects (see `quote.rs` for the
//! table). In PowerShell `;`, newlines, `|`, `&&`, `||` separate commands, `&` (call
//! operator) starts one, `{ … }` script blocks are analyzed as if they ran, `(…)`,
//! `$(…)` and `@(…)` in argument position are nested commands, the backtick escapes,
//! `''`/`""` double a quote, `<# … #>` and `#` are comments, and `@'…'@`/`@"…"@` are
//! here-strings. Parameters stay words (`-Recurse`, `-Name:electron`); the rules
//! compare them case-insensitively and by prefix where PowerShell allows abbreviation.
//! Not modelled: `--%` stop-parsing, splatting, pipeline-bound parameters beyond the
//! previous stage, and variables holding commands.
//!
//! Knowledge about programs lives in one table (`programs.rs`, like ripgrep's file types):
//! which program is a shell, an interpreter (and its language), a wrapper (and how its
//! options are skipped), a writer (and which operands it writes), a package runner, a
//! container engine, a multicall binary, an HTTP client or a process killer. The heredoc
//! classifier, the wrapper peeler, the interpreter and script-file readers, the write targets
//! and the rules all ask it; adding a program is one row. It is a sorted static slice
//! searched by bisection: nothing is built per call.
//!
//! Decisions:
//! - Heredocs (see `heredoc.rs`): a body is inert only for a known inert reader, not
//!   piped into a shell, without a live substitution and closed; anything else is
//!   analyzed as commands. `python - <<EOF`, `node <<EOF` and other interpreters reading
//!   their program from stdin are *foreign*: not shell, so not lexed as shell. An unknown reader
//!   (`mystery <<EOF`) is not trusted. An unclosed body is analyzed, except when the
//!   input was cut at [`MAX_INPUT_BYTES`].
//! - Text that becomes code is analyzed: `echo …`/`printf …`/`Write-Output …` piped into
//!   a shell or `Invoke-Expression`, and the output of a substitution used as the
//!   command name (`$(cat <<EOF …)`, `bash -c "$(echo …)"`, `eval "$(…)"`).
//! - `powershell -EncodedCommand` is decoded (base64 of UTF-16LE) and analyzed like
//!   `-Command`; a value that does not decode is left alone.
//! - `xargs` gets its input words from an `echo`/`printf` stage or a heredoc when it
//!   can, and one placeholder operand ([`segment::XARGS_INPUT`]) otherwise.
//! - `docker run` payloads are marked [`Segment::sandboxed`] only when no mount can
//!   write the host; `docker exec`/`docker compose` never are. Substitutions on the
//!   `docker` line run on the host and are never sandboxed. A container sharing the
//!   host's network or pid namespace (`--network host`, `--pid=host`) is marked
//!   [`Segment::host_app`]: it reaches the running app whatever it mounts.
//! - Command names compare case-insensitively everywhere (see [`word::command_name`]).
//! - What the shell resolves first is resolved here too (see `vars.rs`): variables the
//!   command assigns, `${X:-default}`, `for` loops over literal lists, aliases, and
//!   substitutions whose output the text tells.
//! - Script files the command runs (`bash x.sh`, `./x.sh`, `source x`, `npm run X` →
//!   package.json) are analysed when the caller hands in a [`files::Reader`]; the analysis
//!   itself reads nothing.
//! - Programs in other languages (`python -c`, `node -e`, `perl -e`, `ruby -e`, `awk`,
//!   `python - <<EOF`, `echo … | python3`) are read by a documented heuristic (`interp.rs`):
//!   strings passed to process calls are analysed as commands, literal argv lists and file
//!   calls (`shutil.rmtree`, `fs.rmSync`, `open(p, 'w')`) become derived commands (`rm -rf
//!   p`, `tee p`), HTTP calls become `curl`. Strings built at run time are not known.
//! - Write targets (`writes.rs`): the paths each segment writes, for the ownership check.
//! - `cd`, `pushd`, `Set-Location` steps are kept per segment ([`Segment::dirs`]),
//!   scoped to subshells; a dynamic or missing target makes the directory unknown.

mod build;
mod cmd_for;
pub mod docker;
pub mod files;
pub mod gitopts;
pub mod heredoc;
pub mod interp;
pub mod lexer;
pub mod opts;
pub mod pm;
pub mod programs;
mod quote;
mod quote_win;
pub mod segment;
pub mod vars;
pub mod word;
pub mod wrappers;
pub mod writes;

pub use heredoc::{BodyKind, Heredoc};
pub use lexer::{Op, Redirect};
pub use segment::{Analysis, DirStep, Origin, Segment, Source};
pub use word::Word;
pub use writes::{Reach, WriteTarget};

use build::{Builder, Ctx};
use lexer::Arena;

/// Longest input analyzed; the rest is ignored (and the analysis marked truncated).
pub const MAX_INPUT_BYTES: usize = 1 << 20;
/// Total bytes the lexer may process across nested re-lexing.
pub const MAX_WORK_BYTES: usize = 8 * MAX_INPUT_BYTES;

/// The shell language a text is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// bash, sh, zsh, dash (the `Bash` tool).
    Posix,
    /// PowerShell (the `PowerShell` tool, `powershell -Command`).
    PowerShell,
    /// cmd.exe (`cmd /c`, `Start-Process` command lines).
    Cmd,
}

impl Dialect {
    /// A short lowercase name.
    pub fn label(self) -> &'static str {
        match self {
            Dialect::Posix => "sh",
            Dialect::PowerShell => "powershell",
            Dialect::Cmd => "cmd",
        }
    }

    /// How this shell reads a path rooted without a drive on Windows: bash is Git Bash there
    /// (`/c/x` is `C:\x`, other `/x` the MSYS root); PowerShell and cmd use the current drive.
    pub fn rooted(self) -> crate::paths::lexical::Rooted {
        match self {
            Dialect::Posix => crate::paths::lexical::Rooted::Msys,
            Dialect::PowerShell | Dialect::Cmd => crate::paths::lexical::Rooted::CurrentDrive,
        }
    }
}

/// Analyze `command` written in `dialect`, from its text alone.
pub fn analyze(command: &str, dialect: Dialect) -> Analysis {
    analyze_with(command, dialect, &files::NoFiles)
}

/// Analyze `command`, reading the script files it runs through `reader` (see [`files`]).
pub fn analyze_with(command: &str, dialect: Dialect, reader: &dyn files::Reader) -> Analysis {
    let mut text = command;
    let mut cut = false;
    if text.len() > MAX_INPUT_BYTES {
        let mut end = MAX_INPUT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text = &text[..end];
        cut = true;
    }
    let mut b = Builder {
        arena: Arena::new(MAX_WORK_BYTES),
        out: Analysis::default(),
        input_cut: cut,
        reader,
        files_read: 0,
        functions: Vec::new(),
        calls: 0,
        written: Vec::new(),
    };
    let ctx = Ctx {
        source: 0,
        origin: Origin::Command,
        via: String::new(),
        depth: 0,
        dialect,
        sandboxed: false,
        host_app: false,
        dirs: Vec::new(),
        output_code: false,
        vars: vars::Vars::default(),
    };
    b.source(text.to_string(), ctx, None);
    let mut out = b.out;
    out.truncated |= cut || b.arena.truncated;
    out
}

#[cfg(test)]
mod analysis_tests;
#[cfg(test)]
mod proptests;
