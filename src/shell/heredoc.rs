//! Heredocs and here-strings: reading bodies, and deciding whether a body is data or code.
//!
//! A body is inert data only when all of these hold:
//! - the reader is known to be inert (`cat`, `tee`, `git commit -F -`, `grep`, `jq`, …),
//! - no later stage of its pipeline is a shell or an interpreter (`cat <<EOF | bash`),
//! - it holds no live substitution (an unquoted delimiter with `$(…)` or backticks),
//! - its closing delimiter was found (an unclosed body is analyzed, as the shell would
//!   have run the lines that follow).
//!
//! Otherwise the body is analyzed as commands ([`BodyKind::Script`]). Two readers get
//! their own kind: a program in another language that reads its code from stdin
//! (`python - <<EOF`, `node <<EOF`) is [`BodyKind::Foreign`] and not lexed as shell,
//! because Python or JavaScript text is not shell and lexing it as such only produces
//! noise; its process and file calls are read by the interpreter heuristic (`interp.rs`);
//! and `xargs` turns the body into [`BodyKind::Arguments`] of its command.

use super::lexer::{Lexer, Pending, Tok};
use super::programs::{self, Stdin, Wrap};
use super::word::{Word, command_name};

/// What a heredoc body is to the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// Data for an inert reader: not analyzed.
    Inert,
    /// Analyzed as commands.
    Script,
    /// Code in another language read from stdin: not lexed as shell; its process and file
    /// calls are read by `interp.rs`.
    Foreign,
    /// Words appended to the command of an `xargs` reader.
    Arguments,
}

impl BodyKind {
    /// A short lowercase name for explanations.
    pub fn label(self) -> &'static str {
        match self {
            BodyKind::Inert => "inert data",
            BodyKind::Script => "script (analyzed as commands)",
            BodyKind::Foreign => "foreign-language script (its process and file calls read)",
            BodyKind::Arguments => "xargs arguments",
        }
    }
}

/// A heredoc (`<<`, `<<-`) or here-string (`<<<`) attached to a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heredoc {
    /// `<<`, `<<-` or `<<<`.
    pub op: &'static str,
    /// The delimiter with quotes removed (empty for here-strings).
    pub delimiter: String,
    /// The delimiter (or here-string word) was quoted: no expansion in the body.
    pub quoted: bool,
    /// The body text (leading tabs removed for `<<-`).
    pub body: String,
    /// The closing delimiter line was found.
    pub closed: bool,
    /// Unquoted delimiter and the body holds `$(…)` or backticks that the shell runs.
    pub live: bool,
    /// What the analysis made of the body.
    pub kind: BodyKind,
    /// Why, in a few words (for `explain`).
    pub why: &'static str,
}

impl Heredoc {
    pub(crate) fn pending(op: &'static str) -> Heredoc {
        Heredoc {
            op,
            delimiter: String::new(),
            quoted: false,
            body: String::new(),
            closed: false,
            live: false,
            kind: BodyKind::Inert,
            why: "",
        }
    }

    pub(crate) fn here_string(w: &Word) -> Heredoc {
        Heredoc {
            op: "<<<",
            delimiter: String::new(),
            quoted: w.quoted,
            body: w.text.clone(),
            closed: true,
            live: false,
            kind: BodyKind::Inert,
            why: "",
        }
    }
}

/// `$(…)` (not `$((`) or a backtick outside backslash escapes.
pub fn has_live_substitution(body: &str) -> bool {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return true,
            b'$' if b.get(i + 1) == Some(&b'(') && b.get(i + 2) != Some(&b'(') => return true,
            _ => i += 1,
        }
    }
    false
}

impl Lexer<'_, '_> {
    /// Read the bodies of the heredocs opened on the line just ended.
    pub(crate) fn read_heredocs(&mut self, out: &mut [Tok], pending: Vec<Pending>) {
        for p in pending {
            let start = self.i;
            let mut end = self.s.len();
            let mut closed = false;
            while self.i < self.s.len() {
                let line_start = self.i;
                let line_end = self.s[line_start..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.s.len(), |k| line_start + k);
                let mut line = &self.s[line_start..line_end];
                if let Some(l) = line.strip_suffix(b"\r") {
                    line = l;
                }
                if p.strip_tabs {
                    while let Some(l) = line.strip_prefix(b"\t") {
                        line = l;
                    }
                }
                self.i = (line_end + 1).min(self.s.len());
                if line == p.delim.as_bytes() {
                    end = line_start;
                    closed = true;
                    break;
                }
            }
            let raw = String::from_utf8_lossy(&self.s[start..end]);
            let body = if p.strip_tabs {
                raw.split_inclusive('\n')
                    .map(|l| l.trim_start_matches('\t'))
                    .collect()
            } else {
                raw.into_owned()
            };
            if let Some(Tok::Redir(_, Some(h))) = out.get_mut(p.tok) {
                h.delimiter = p.delim;
                h.quoted = p.quoted;
                h.live = !p.quoted && has_live_substitution(&body);
                h.body = body;
                h.closed = closed;
            }
        }
    }
}

/// How a command treats what it reads on stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// Reads data only.
    Inert,
    /// A shell reading commands (`bash`, `sh -s`, `pwsh -Command -`, `ssh host`).
    Shell,
    /// An interpreter reading a program in another language.
    Foreign,
    /// Nothing known about it.
    Unknown,
}

/// Classify the program `argv` as a stdin reader (its row of the program table).
pub fn reader_kind(argv: &[Word]) -> Reader {
    let Some(head) = argv.first() else {
        return Reader::Inert;
    };
    let Some(prog) = programs::get(&command_name(&head.text)) else {
        return Reader::Unknown;
    };
    if matches!(prog.wrap, Some(Wrap::Source)) {
        return match argv.get(1).map(|w| w.text.as_str()) {
            Some("/dev/stdin" | "-") => Reader::Shell,
            _ => Reader::Inert,
        };
    }
    match prog.stdin {
        // `bash -n` parses and runs nothing.
        Stdin::Shell
            if argv[1..]
                .iter()
                .take_while(|w| w.text.starts_with('-'))
                .any(|w| !w.text.starts_with("--") && w.text[1..].contains('n')) =>
        {
            Reader::Inert
        }
        Stdin::Shell => Reader::Shell,
        Stdin::Program => interpreter_kind(&argv[1..]),
        Stdin::Inert => Reader::Inert,
        Stdin::Unknown => Reader::Unknown,
    }
}

/// An interpreter reads its program from stdin unless it got code (`-c`, `-e`, `-m`) or a
/// script file.
fn interpreter_kind(args: &[Word]) -> Reader {
    for a in args {
        let t = a.text.as_str();
        if t == "-" {
            return Reader::Foreign;
        }
        if matches!(
            t,
            "-c" | "-e" | "-m" | "-p" | "--eval" | "--print" | "-r" | "run"
        ) {
            return Reader::Inert;
        }
        if !t.starts_with('-') {
            return Reader::Inert;
        }
    }
    Reader::Foreign
}

/// Decide what a heredoc body is. `reader` is the peeled command reading it, `shell_c`
/// says a `-c` script was peeled off that command (the script reads the body), `later`
/// are the following pipeline stages, `input_cut` says the input was truncated (so an
/// unclosed body proves nothing).
pub fn classify(
    h: &Heredoc,
    reader: &[Word],
    shell_c: bool,
    xargs: bool,
    later: &[&[Word]],
    input_cut: bool,
) -> (BodyKind, &'static str) {
    if xargs {
        return (
            BodyKind::Arguments,
            "read by xargs: appended to its command",
        );
    }
    if !h.closed && h.op != "<<<" && !input_cut {
        return (
            BodyKind::Script,
            "no closing delimiter: the rest is analyzed",
        );
    }
    let kind = if shell_c && reader.is_empty() {
        Reader::Shell
    } else {
        reader_kind(reader)
    };
    match kind {
        Reader::Shell => return (BodyKind::Script, "read by a shell"),
        Reader::Foreign => {
            return (
                BodyKind::Foreign,
                "read by an interpreter of another language",
            );
        }
        Reader::Unknown => return (BodyKind::Script, "reader not known to be inert"),
        Reader::Inert => {}
    }
    for stage in later {
        match reader_kind(stage) {
            Reader::Shell => return (BodyKind::Script, "output piped into a shell"),
            Reader::Foreign => {
                return (BodyKind::Foreign, "output piped into an interpreter");
            }
            Reader::Inert | Reader::Unknown => {}
        }
    }
    if h.live {
        return (
            BodyKind::Script,
            "unquoted delimiter with a live substitution",
        );
    }
    (BodyKind::Inert, "inert reader")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::plain).collect()
    }

    #[test]
    fn live_substitutions() {
        assert!(has_live_substitution("a $(date) b"));
        assert!(has_live_substitution("a `date` b"));
        assert!(!has_live_substitution("a $((1+2)) b"));
        assert!(!has_live_substitution(r"a \$(date) b"));
        assert!(!has_live_substitution("plain $HOME text"));
    }

    #[test]
    fn reader_kinds() {
        assert_eq!(reader_kind(&words("cat")), Reader::Inert);
        assert_eq!(reader_kind(&words("git commit -F -")), Reader::Inert);
        assert_eq!(reader_kind(&words("bash")), Reader::Shell);
        assert_eq!(reader_kind(&words("sh -s")), Reader::Shell);
        assert_eq!(reader_kind(&words("python3 -")), Reader::Foreign);
        assert_eq!(reader_kind(&words("node")), Reader::Foreign);
        assert_eq!(reader_kind(&words("python3 tool.py")), Reader::Inert);
        assert_eq!(reader_kind(&words("python3 -c pass")), Reader::Inert);
        assert_eq!(reader_kind(&words("source /dev/stdin")), Reader::Shell);
        assert_eq!(reader_kind(&words("mystery")), Reader::Unknown);
        assert_eq!(reader_kind(&[]), Reader::Inert);
    }

    #[test]
    fn classification() {
        let mut h = Heredoc::pending("<<");
        h.closed = true;
        assert_eq!(
            classify(&h, &words("cat"), false, false, &[], false).0,
            BodyKind::Inert
        );
        let bash = words("bash");
        assert_eq!(
            classify(&h, &words("cat"), false, false, &[&bash], false).0,
            BodyKind::Script
        );
        assert_eq!(
            classify(&h, &[], true, false, &[], false).0,
            BodyKind::Script
        );
        h.live = true;
        assert_eq!(
            classify(&h, &words("cat"), false, false, &[], false).0,
            BodyKind::Script
        );
        h.live = false;
        h.closed = false;
        assert_eq!(
            classify(&h, &words("cat"), false, false, &[], false).0,
            BodyKind::Script
        );
        assert_eq!(
            classify(&h, &words("cat"), false, false, &[], true).0,
            BodyKind::Inert
        );
        assert_eq!(
            classify(&h, &words("rm"), false, true, &[], false).0,
            BodyKind::Arguments
        );
    }
}
