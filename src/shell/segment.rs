//! Segments: the simple commands of an analysis, with where they came from, the words
//! as written, the argv after peeling, heredocs, pipes and `cd` steps.

use super::Dialect;
use super::heredoc::Heredoc;
use super::lexer::Redirect;
use super::word::{Word, command_name, render_word};

/// Upper bound on segments in one analysis.
pub const MAX_SEGMENTS: usize = 20_000;
/// The operand standing for xargs input that is not known from the command line.
pub const XARGS_INPUT: &str = "<xargs input>";

/// Where a segment's text came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The command as given.
    Command,
    /// A command substitution: `$(…)`, backticks, PowerShell `$(…)`/`(…)`.
    Substitution,
    /// A process substitution: `<(…)`, `>(…)`.
    ProcessSubstitution,
    /// A command string carried by a wrapper (`bash -c`, `eval`, `cmd /c`, ...).
    Script,
    /// A heredoc body analyzed as commands.
    Heredoc,
    /// A command run by `find -exec` (or copied per `xargs -I` item).
    Derived,
    /// The body of a function the command defines, where it is called.
    Function,
}

impl Origin {
    /// A short lowercase name for explanations.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Command => "command",
            Origin::Substitution => "substitution",
            Origin::ProcessSubstitution => "process substitution",
            Origin::Script => "script",
            Origin::Heredoc => "heredoc script",
            Origin::Derived => "derived",
            Origin::Function => "function body",
        }
    }
}

/// A lexical `cd` step in effect before a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirStep {
    /// `cd <path>` with a literal path.
    To(String),
    /// `cd "$X/sub"`, `cd ~`, `cd $(mktemp -d)`: a path with an expansion, as written.
    Dynamic(String),
    /// `cd`, `cd -`, `popd`: the directory is no longer known.
    Unknown,
}

/// One text that was lexed: the command itself or a nested script.
#[derive(Clone, Debug)]
pub struct Source {
    /// The text.
    pub text: String,
    /// How it was lexed.
    pub dialect: Dialect,
    /// The source it was found in.
    pub parent: Option<usize>,
    /// The wrapper that carried it (empty for the command itself).
    pub via: String,
}

/// One simple command.
#[derive(Clone, Debug)]
pub struct Segment {
    /// Index of the [`Source`] whose text holds it.
    pub source: usize,
    /// How it was found.
    pub origin: Origin,
    /// The wrapper that carried its source, for [`Origin::Script`].
    pub via: String,
    /// Nesting depth (0 for the command's own segments).
    pub depth: u32,
    /// How its source was lexed.
    pub dialect: Dialect,
    /// The words as written when wrappers were peeled (leading reserved words such as
    /// `if`/`then` removed); empty when [`Segment::argv`] is the whole segment. Use
    /// [`Segment::words`] for the written form in every case.
    pub written: Vec<Word>,
    /// The command after peeling wrappers; empty when nothing runs here.
    pub argv: Vec<Word>,
    /// The wrappers peeled, in order.
    pub wrappers: Vec<String>,
    /// Redirections (targets are not argv words).
    pub redirects: Vec<Redirect>,
    /// Heredocs and here-strings feeding it.
    pub heredocs: Vec<Heredoc>,
    /// The previous stage when this segment reads a pipe.
    pub pipe_prev: Option<usize>,
    /// The next stage when this segment writes a pipe.
    pub pipe_next: Option<usize>,
    /// Runs inside a `docker run` that cannot reach the host's files.
    pub sandboxed: bool,
    /// Runs inside a container that shares the host's network or pid namespace
    /// (`--network host`, `--pid=host`): it reaches the running app even when
    /// [`Segment::sandboxed`].
    pub host_app: bool,
    /// `cd` steps in effect before it, within its chain.
    pub dirs: Vec<DirStep>,
    /// What the shell resolved in it first: variables set, loop values, aliases and
    /// expansions replaced by their known values (one line each, for explanations).
    pub resolved: Vec<String>,
    /// The analysis mechanisms that made this segment what the rules see, beyond plain
    /// lexing (`function call`, `positional parameters`, `brace expansion`, …), in the order
    /// they acted; see [`Segment::mechanism`].
    pub mechanisms: Vec<&'static str>,
}

impl Segment {
    /// The words as written (leading reserved words removed).
    pub fn words(&self) -> &[Word] {
        if self.written.is_empty() {
            &self.argv
        } else {
            &self.written
        }
    }

    /// The segment as shell text, on one line.
    pub fn render(&self) -> String {
        self.words()
            .iter()
            .map(|w| render_word(&w.text))
            .collect::<Vec<_>>()
            .join(" ")
            .replace(['\n', '\r'], " ")
    }

    /// Which mechanisms decided what this segment runs, for explanations: how it was found
    /// (its origin and the wrapper or file that carried it), the wrappers peeled, what the
    /// shell resolved first and the named mechanisms of [`Segment::mechanisms`].
    pub fn mechanism(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        match self.origin {
            Origin::Command => {}
            o if self.via.is_empty() => out.push(o.label().to_string()),
            o => out.push(format!("{} ({})", o.label(), self.via)),
        }
        if !self.wrappers.is_empty() {
            out.push(format!("wrappers peeled ({})", self.wrappers.join(", ")));
        }
        if !self.resolved.is_empty() {
            out.push("expansions resolved".to_string());
        }
        for m in &self.mechanisms {
            if !out.iter().any(|o| o == m) {
                out.push((*m).to_string());
            }
        }
        if out.is_empty() {
            "plain command".to_string()
        } else {
            out.join(", ")
        }
    }

    /// The peeled command name (see [`command_name`]), empty when nothing runs.
    pub fn head(&self) -> String {
        self.argv
            .first()
            .map(|w| command_name(&w.text).into_owned())
            .unwrap_or_default()
    }
}

/// The result of analyzing one command.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// Texts that were lexed: `[0]` is the command, the rest nested scripts.
    pub sources: Vec<Source>,
    /// Every simple command found, nested ones included.
    pub segments: Vec<Segment>,
    /// A limit (input size, depth, work budget, segment count) cut the analysis short.
    pub truncated: bool,
    /// Files the command runs as scripts that are there but not regular files (a FIFO, a
    /// device, a socket), as the command names them: what they feed the shell is not known.
    pub unreadable: Vec<String>,
}
