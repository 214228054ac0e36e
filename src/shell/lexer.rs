//! The tokenizer: shell text → words, operators and redirections.
//!
//! One hand-written pass over the bytes (every syntax character is ASCII, so slicing at
//! them keeps UTF-8 intact). Substitutions (`$(…)`, backticks, `<(…)`, PowerShell `(…)`)
//! are lexed recursively into an arena and referenced from the word that holds them;
//! quoting and expansions live in `quote.rs`, heredoc bodies in `heredoc.rs`.
//!
//! Nothing here fails: unclosed quotes, substitutions and heredocs end at the end of the
//! input and the caller analyzes what was lexed.

use super::Dialect;
use super::heredoc::Heredoc;
use super::word::Word;

/// How deep substitutions and nested scripts may nest before the rest is skipped.
pub const MAX_DEPTH: u32 = 12;

/// A command operator between words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `;`
    Seq,
    /// `&` (background in sh, call operator in PowerShell, sequence in cmd)
    Background,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|`
    Pipe,
    /// `|&`
    PipeAll,
    /// An unquoted newline.
    Newline,
    /// `(`: subshell or group start.
    Open,
    /// `)`
    Close,
    /// `;;`, `;&`, `;;&` in a `case`.
    CaseBreak,
    /// `{` of a PowerShell script block or hashtable.
    BlockOpen,
    /// `}` of a PowerShell script block.
    BlockClose,
}

/// A redirection: `[fd]op target`. Targets are not argv words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The explicit descriptor (`2` in `2>&1`; `*` in PowerShell's `*>` is kept as `None`).
    pub fd: Option<u32>,
    /// The operator text: `>`, `>>`, `<`, `>&`, `&>`, `<<`, `<<<`, ...
    pub op: &'static str,
    /// The target word (`1` in `2>&1`; the delimiter of a heredoc).
    pub target: Option<Word>,
}

/// One lexed token.
#[derive(Clone, Debug)]
pub(crate) enum Tok {
    Word(Word),
    Op(Op),
    Redir(Box<Redirect>, Option<Box<Heredoc>>),
}

/// What kind of nested command source a substitution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubKind {
    /// `$(…)`, PowerShell `$(…)`/`@(…)`/`(…)` in argument position.
    Command,
    /// `` `…` ``
    Backtick,
    /// `<(…)` / `>(…)`
    Process,
    /// `name=(…)`: an array literal; only substitutions inside it run.
    Array,
}

/// A lexed substitution.
#[derive(Clone, Debug)]
pub(crate) struct Sub {
    pub kind: SubKind,
    pub toks: Vec<Tok>,
}

/// Shared state of one analysis: substitutions and the work budget.
#[derive(Debug)]
pub(crate) struct Arena {
    pub subs: Vec<Sub>,
    /// Bytes that may still be lexed (re-lexing nested scripts counts again).
    pub budget: usize,
    /// Some input was skipped because a limit was hit.
    pub truncated: bool,
}

impl Arena {
    pub fn new(budget: usize) -> Arena {
        Arena {
            subs: Vec::new(),
            budget,
            truncated: false,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Eof,
    Close,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    AwaitIn,
    Pattern,
    Body,
}

pub(crate) struct Pending {
    pub tok: usize,
    pub delim: String,
    pub strip_tabs: bool,
    pub quoted: bool,
}

struct ListState {
    cmd_start: bool,
    /// The last token was PowerShell's call operator `&`: a `(` after it is the command's
    /// name as an expression (`& ('np'+'m') …`), not a group.
    call: bool,
    parens: u32,
    case: Vec<Case>,
    pending: Vec<Pending>,
}

/// Reserved words after which the next word is again in command position.
fn keeps_command_position(text: &str) -> bool {
    matches!(
        text,
        "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "time"
    )
}

pub(crate) struct Lexer<'s, 'a> {
    pub(super) s: &'s [u8],
    pub(super) i: usize,
    pub(super) d: Dialect,
    pub(super) depth: u32,
    pub(super) arena: &'a mut Arena,
}

/// Lex `text` as a fresh source at nesting `depth`. Charges the budget.
pub(crate) fn lex(text: &str, d: Dialect, depth: u32, arena: &mut Arena) -> Vec<Tok> {
    if text.len() > arena.budget || depth > MAX_DEPTH {
        arena.truncated = true;
        return Vec::new();
    }
    arena.budget -= text.len();
    Lexer {
        s: text.as_bytes(),
        i: 0,
        d,
        depth,
        arena,
    }
    .tokens(Stop::Eof)
}

impl Lexer<'_, '_> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    pub(super) fn at(&self, off: usize) -> Option<u8> {
        self.s.get(self.i + off).copied()
    }

    pub(super) fn escape_char(&self) -> u8 {
        match self.d {
            Dialect::Posix => b'\\',
            Dialect::PowerShell => b'`',
            Dialect::Cmd => b'^',
        }
    }

    /// Skip blanks and line continuations (never newlines).
    fn skip_blanks(&mut self) {
        let esc = self.escape_char();
        while let Some(c) = self.peek() {
            if c == b' ' || c == b'\t' || c == b'\r' || c == 0x0c {
                self.i += 1;
            } else if c == esc && self.at(1) == Some(b'\n') {
                self.i += 2;
            } else if c == esc && self.at(1) == Some(b'\r') && self.at(2) == Some(b'\n') {
                self.i += 3;
            } else {
                break;
            }
        }
    }

    fn skip_line_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == b'\n' {
                break;
            }
            self.i += 1;
        }
    }

    /// The token list of one source, or of a substitution when `stop` is `Close`.
    pub(crate) fn tokens(&mut self, stop: Stop) -> Vec<Tok> {
        // A whole source: room up front for about one token per blank or operator byte (each
        // ends a token: `echo x; grep -rn y src` has 7 of each), so a long script's list is
        // neither copied on a doubling nor left half empty; at most 4096 tokens, past which the
        // doublings are few next to the work.
        let mut out = match stop {
            Stop::Eof => {
                let rest = self.s.get(self.i..).unwrap_or_default();
                let ends = rest
                    .iter()
                    .filter(|&&b| matches!(b, b' ' | b'\t' | b'\n' | b';' | b'|' | b'&'))
                    .count();
                Vec::with_capacity((ends + 1).min(4096))
            }
            _ => Vec::new(),
        };
        let mut st = ListState {
            cmd_start: true,
            call: false,
            parens: 0,
            case: Vec::new(),
            pending: Vec::new(),
        };
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if c == b'\n' {
                self.i += 1;
                if !matches!(st.case.last(), Some(Case::AwaitIn | Case::Pattern)) {
                    self.push_op(&mut out, &mut st, Op::Newline);
                }
                if !st.pending.is_empty() {
                    let pending = std::mem::take(&mut st.pending);
                    self.read_heredocs(&mut out, pending);
                }
                continue;
            }
            if c == b'#' && self.d != Dialect::Cmd {
                self.skip_line_comment();
                continue;
            }
            if self.d == Dialect::PowerShell && c == b'<' && self.at(1) == Some(b'#') {
                self.skip_block_comment();
                continue;
            }
            if c == b')' {
                if st.case.last() == Some(&Case::Pattern) {
                    self.i += 1;
                    if let Some(top) = st.case.last_mut() {
                        *top = Case::Body;
                    }
                    self.push_op(&mut out, &mut st, Op::Seq);
                    continue;
                }
                if st.parens == 0 && stop == Stop::Close {
                    self.i += 1;
                    break;
                }
                self.i += 1;
                st.parens = st.parens.saturating_sub(1);
                self.push_op(&mut out, &mut st, Op::Close);
                continue;
            }
            if let Some(op) = self.operator(&st) {
                match (st.case.last().copied(), op) {
                    (Some(Case::Pattern), Op::Pipe | Op::Open) => continue,
                    (Some(Case::Body), Op::CaseBreak) => {
                        if let Some(top) = st.case.last_mut() {
                            *top = Case::Pattern;
                        }
                        self.push_op(&mut out, &mut st, Op::Seq);
                        continue;
                    }
                    _ => {}
                }
                if op == Op::Open {
                    st.parens += 1;
                }
                self.push_op(&mut out, &mut st, op);
                continue;
            }
            let before = self.i;
            match self.word_or_redirect() {
                Some(Tok::Word(w)) => self.push_word(&mut out, &mut st, w),
                Some(Tok::Redir(r, h)) => self.push_redirect(&mut out, &mut st, r, h),
                Some(Tok::Op(op)) => self.push_op(&mut out, &mut st, op),
                None => {
                    if self.i == before {
                        // A byte no rule consumes: drop it rather than loop forever.
                        self.i += 1;
                    }
                }
            }
        }
        for p in st.pending {
            if let Some(Tok::Redir(_, Some(h))) = out.get_mut(p.tok) {
                h.closed = false;
            }
        }
        out
    }

    fn push_op(&mut self, out: &mut Vec<Tok>, st: &mut ListState, op: Op) {
        st.cmd_start = true;
        st.call = op == Op::Background && self.d == Dialect::PowerShell;
        out.push(Tok::Op(op));
    }

    fn push_word(&mut self, out: &mut Vec<Tok>, st: &mut ListState, w: Word) {
        let unquoted = if w.quoted || w.dynamic {
            None
        } else {
            Some(w.text.as_str())
        };
        if let Some(top) = st.case.last().copied() {
            match top {
                Case::AwaitIn => {
                    if unquoted == Some("in") {
                        if let Some(t) = st.case.last_mut() {
                            *t = Case::Pattern;
                        }
                        self.push_op(out, st, Op::Seq);
                    } else {
                        out.push(Tok::Word(w));
                    }
                    return;
                }
                Case::Pattern => {
                    if unquoted == Some("esac") {
                        st.case.pop();
                        self.push_op(out, st, Op::Seq);
                    }
                    return;
                }
                Case::Body => {
                    if st.cmd_start && unquoted == Some("esac") {
                        st.case.pop();
                        self.push_op(out, st, Op::Seq);
                        return;
                    }
                }
            }
        }
        if st.cmd_start && self.d == Dialect::Posix && unquoted == Some("case") {
            st.case.push(Case::AwaitIn);
            st.cmd_start = false;
            out.push(Tok::Word(w));
            return;
        }
        st.cmd_start = st.cmd_start && unquoted.is_some_and(keeps_command_position);
        out.push(Tok::Word(w));
    }

    fn push_redirect(
        &mut self,
        out: &mut Vec<Tok>,
        st: &mut ListState,
        r: Box<Redirect>,
        h: Option<Box<Heredoc>>,
    ) {
        if matches!(r.op, "<<" | "<<-") {
            let (delim, quoted) = r
                .target
                .as_ref()
                .map_or((String::new(), false), |t| (t.text.clone(), t.quoted));
            st.pending.push(Pending {
                tok: out.len(),
                delim,
                strip_tabs: r.op == "<<-",
                quoted,
            });
        }
        out.push(Tok::Redir(r, h));
    }

    /// An operator at the cursor, consumed; `None` when the cursor starts a word or a
    /// redirection.
    fn operator(&mut self, st: &ListState) -> Option<Op> {
        let c = self.peek()?;
        let n1 = self.at(1);
        let (op, len) = match (self.d, c) {
            (Dialect::Posix, b';') => match (n1, self.at(2)) {
                (Some(b';'), Some(b'&')) => (Op::CaseBreak, 3),
                (Some(b';'), _) | (Some(b'&'), _) => (Op::CaseBreak, 2),
                _ => (Op::Seq, 1),
            },
            (_, b';') => (Op::Seq, 1),
            (_, b'&') => match n1 {
                Some(b'&') => (Op::And, 2),
                Some(b'>') if self.d == Dialect::Posix => return None,
                _ if self.d == Dialect::Cmd => (Op::Seq, 1),
                _ => (Op::Background, 1),
            },
            (_, b'|') => match n1 {
                Some(b'|') => (Op::Or, 2),
                Some(b'&') if self.d == Dialect::Posix => (Op::PipeAll, 2),
                _ => (Op::Pipe, 1),
            },
            (Dialect::PowerShell, b'(') if !st.cmd_start || st.call => return None,
            (_, b'(') => (Op::Open, 1),
            (Dialect::PowerShell, b'{') => (Op::BlockOpen, 1),
            (Dialect::PowerShell, b'}') => (Op::BlockClose, 1),
            (Dialect::PowerShell, b'@') if n1 == Some(b'{') => (Op::BlockOpen, 2),
            _ => return None,
        };
        self.i += len;
        Some(op)
    }

    fn skip_block_comment(&mut self) {
        self.i += 2;
        while self.i < self.s.len() {
            if self.s[self.i] == b'#' && self.at(1) == Some(b'>') {
                self.i += 2;
                return;
            }
            self.i += 1;
        }
    }

    /// Lex a nested `(…)` body (the cursor is just past the opening parenthesis) into the
    /// arena, or skip it when too deep.
    pub(super) fn sub(&mut self, kind: SubKind) -> Option<u32> {
        if self.depth >= MAX_DEPTH {
            self.arena.truncated = true;
            self.skip_balanced();
            return None;
        }
        let mut child = Lexer {
            s: self.s,
            i: self.i,
            d: self.d,
            depth: self.depth + 1,
            arena: &mut *self.arena,
        };
        let toks = child.tokens(Stop::Close);
        self.i = child.i;
        Some(self.push_sub(kind, toks))
    }

    /// Lex `text` (a backtick body) as a nested source into the arena.
    pub(super) fn sub_text(&mut self, kind: SubKind, text: &str) -> Option<u32> {
        if self.depth >= MAX_DEPTH {
            self.arena.truncated = true;
            return None;
        }
        let toks = lex(text, self.d, self.depth + 1, self.arena);
        Some(self.push_sub(kind, toks))
    }

    fn push_sub(&mut self, kind: SubKind, toks: Vec<Tok>) -> u32 {
        let idx = u32::try_from(self.arena.subs.len()).unwrap_or(u32::MAX);
        self.arena.subs.push(Sub { kind, toks });
        idx
    }

    /// Skip to the parenthesis closing the one just before the cursor, minding quotes.
    pub(super) fn skip_balanced(&mut self) {
        let mut depth = 1u32;
        let esc = self.escape_char();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                b'\'' | b'"' => {
                    while let Some(q) = self.peek() {
                        self.i += 1;
                        if q == c {
                            break;
                        }
                        if q == esc && c == b'"' {
                            self.i += 1;
                        }
                    }
                }
                _ if c == esc => self.i += 1,
                _ => {}
            }
        }
    }

    /// A redirection operator at the cursor (after an optional descriptor already read).
    pub(super) fn redirect(&mut self, fd: Option<u32>) -> Tok {
        let rest = &self.s[self.i..];
        let posix = self.d == Dialect::Posix;
        let op: &'static str = if rest.starts_with(b"&>>") && posix {
            "&>>"
        } else if rest.starts_with(b"&>") && posix {
            "&>"
        } else if rest.starts_with(b"<<<") && posix {
            "<<<"
        } else if rest.starts_with(b"<<-") && posix {
            "<<-"
        } else if rest.starts_with(b"<<") && posix {
            "<<"
        } else if rest.starts_with(b"<>") && posix {
            "<>"
        } else if rest.starts_with(b"<&") {
            "<&"
        } else if rest.starts_with(b">>") {
            ">>"
        } else if rest.starts_with(b">&") {
            ">&"
        } else if rest.starts_with(b">|") && posix {
            ">|"
        } else if rest.starts_with(b">") {
            ">"
        } else {
            "<"
        };
        self.i += op.len();
        self.skip_blanks();
        let target = match self.peek() {
            None | Some(b'\n' | b';' | b'|' | b'(' | b')') => None,
            Some(b'&') if self.at(1) == Some(b'&') => None,
            Some(b'<' | b'>') => None,
            _ => match self.word_or_redirect() {
                Some(Tok::Word(w)) => Some(w),
                _ => None,
            },
        };
        let heredoc = match op {
            "<<" | "<<-" => Some(Heredoc::pending(op)),
            "<<<" => target.as_ref().map(Heredoc::here_string),
            _ => None,
        };
        Tok::Redir(Box::new(Redirect { fd, op, target }), heredoc.map(Box::new))
    }
}

#[cfg(test)]
#[path = "lexer_tests.rs"]
mod tests;
