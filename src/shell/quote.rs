//! Words: quoting, escapes and expansions for the three dialects.
//!
//! | construct | sh (bash, zsh, dash) | PowerShell | cmd |
//! |---|---|---|---|
//! | escape | `\` (and `\`-newline continuation) | `` ` `` | `^` |
//! | literal quotes | `'…'` | `'…'` (`''` is a quote) | none |
//! | expanding quotes | `"…"` (`\` escapes `$ \` " \\`) | `"…"` (`` ` `` escapes, `""`) | `"…"` |
//! | other quotes | `$'…'` ANSI-C, `$"…"` | here-strings `@'…'@`, `@"…"@` | |
//! | substitutions | `$(…)`, `` `…` ``, `<(…)`, `>(…)`, `${…}` | `$(…)`, `@(…)`, `(…)` as an argument | |
//! | variables (dynamic) | `$x`, `${x}`, `$1`, `~` | `$x`, `$env:X`, `${x}` | `%X%` |

use super::Dialect;
use super::lexer::{Lexer, SubKind, Tok};
use super::word::{Word, is_assignment};

/// A word being built.
#[derive(Default)]
pub(super) struct Buf {
    pub(super) bytes: Vec<u8>,
    pub(super) quoted: bool,
    pub(super) dynamic: bool,
    pub(super) glob: bool,
    pub(super) backslashed: bool,
    pub(super) subs: Vec<u32>,
    pub(super) started: bool,
}

impl Buf {
    pub(super) fn push(&mut self, b: u8) {
        self.bytes.push(b);
        self.started = true;
    }

    pub(super) fn extend(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
        self.started = true;
    }

    pub(super) fn quote(&mut self) {
        self.quoted = true;
        self.started = true;
    }

    /// The word so far is a file-descriptor number (`2` of `2>&1`).
    pub(super) fn fd_prefix(&self) -> Option<Option<u32>> {
        if self.quoted || self.dynamic || !self.subs.is_empty() || self.bytes.is_empty() {
            return None;
        }
        if self.bytes.iter().all(u8::is_ascii_digit) {
            let n = std::str::from_utf8(&self.bytes)
                .ok()
                .and_then(|t| t.parse().ok());
            return Some(n);
        }
        None
    }

    pub(super) fn finish(self) -> Word {
        let text = match String::from_utf8(self.bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Word {
            text,
            quoted: self.quoted,
            dynamic: self.dynamic,
            glob: self.glob,
            backslashed: self.backslashed,
            expanded: false,
            subs: self.subs.into(),
        }
    }
}

/// A byte with no meaning of its own inside a word of dialect `d`: a table per dialect, as
/// every byte of every word is asked.
fn plain(d: Dialect, c: u8) -> bool {
    let table = match d {
        Dialect::Posix => &PLAIN[0],
        Dialect::PowerShell => &PLAIN[1],
        Dialect::Cmd => &PLAIN[2],
    };
    table[usize::from(c)]
}

/// [`plain`] for the three dialects, in the order Posix, PowerShell, Cmd.
static PLAIN: [[bool; 256]; 3] = {
    let mut t = [[true; 256]; 3];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        // Blanks, operators, double quotes and globs mean something in every dialect.
        let common = matches!(
            b,
            b' ' | b'\t'
                | b'\r'
                | 0x0c
                | b'\n'
                | b'&'
                | b'|'
                | b')'
                | b'<'
                | b'>'
                | b'"'
                | b'*'
                | b'?'
        );
        let posix = matches!(
            b,
            b';' | b'(' | b'\\' | b'\'' | b'$' | b'`' | b'[' | b'{' | b'~'
        );
        let powershell = matches!(
            b,
            b';' | b'(' | b'`' | b'\'' | b'$' | b'[' | b'{' | b'}' | b'@'
        );
        let cmd = matches!(b, b'^' | b'%');
        t[0][c] = !(common || posix);
        t[1][c] = !(common || powershell);
        t[2][c] = !(common || cmd);
        c += 1;
    }
    t
};

pub(super) fn is_name_byte(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

impl Lexer<'_, '_> {
    /// Advance by `n`, never past the end.
    pub(super) fn adv(&mut self, n: usize) {
        self.i = (self.i + n).min(self.s.len());
    }

    /// Take the byte `c` at the cursor into the word as it stands.
    pub(super) fn take(&mut self, w: &mut Buf, c: u8) {
        w.push(c);
        self.i += 1;
    }

    /// Step past the `n`-byte opener at the cursor and lex the substitution it opens,
    /// noting it in the word.
    pub(super) fn open_sub(&mut self, w: &mut Buf, n: usize, kind: SubKind) {
        self.adv(n);
        if let Some(ix) = self.sub(kind) {
            w.subs.push(ix);
        }
    }

    /// [`Self::open_sub`], keeping the substitution's source text in the word as well.
    pub(super) fn embed_sub(&mut self, w: &mut Buf, n: usize, kind: SubKind) {
        let start = self.i;
        self.open_sub(w, n, kind);
        w.extend(self.raw(start));
    }

    pub(super) fn raw(&self, start: usize) -> &[u8] {
        &self.s[start.min(self.s.len())..self.i.min(self.s.len())]
    }

    /// A word, or a redirection when the cursor is at one (possibly after a descriptor).
    pub(crate) fn word_or_redirect(&mut self) -> Option<Tok> {
        let c = self.peek()?;
        if self.d == Dialect::Posix && c == b'&' && self.at(1) == Some(b'>') {
            return Some(self.redirect(None));
        }
        if self.d == Dialect::PowerShell
            && c == b'@'
            && let Some(w) = self.ps_here_string()
        {
            return Some(Tok::Word(w));
        }
        let mut w = Buf::default();
        while let Some(c) = self.peek() {
            let run = self.s[self.i..]
                .iter()
                .take_while(|&&b| plain(self.d, b))
                .count();
            if run > 0 {
                w.extend(&self.s[self.i..self.i + run]);
                self.i += run;
                continue;
            }
            let flow = match self.d {
                Dialect::Posix => self.posix_byte(c, &mut w),
                Dialect::PowerShell => self.ps_byte(c, &mut w),
                Dialect::Cmd => self.cmd_byte(c, &mut w),
            };
            match flow {
                Flow::Next => {}
                Flow::End => break,
                Flow::Redirect => {
                    let fd = w.fd_prefix().flatten();
                    return Some(self.redirect(fd));
                }
            }
        }
        if !w.started && w.subs.is_empty() {
            return None;
        }
        Some(Tok::Word(w.finish()))
    }

    /// `<` or `>` inside a word: a redirection when the word so far is empty or a
    /// descriptor number, else the end of the word.
    pub(super) fn angle(&mut self, w: &Buf) -> Flow {
        if !w.started || w.fd_prefix().is_some() {
            Flow::Redirect
        } else {
            Flow::End
        }
    }

    fn posix_byte(&mut self, c: u8, w: &mut Buf) -> Flow {
        match c {
            b' ' | b'\t' | b'\r' | 0x0c | b'\n' | b';' | b'|' | b')' | b'&' => return Flow::End,
            b'(' => {
                let text = &w.bytes;
                let array = !w.quoted
                    && text.ends_with(b"=")
                    && std::str::from_utf8(text).is_ok_and(is_assignment);
                if !array {
                    return Flow::End;
                }
                self.embed_sub(w, 1, SubKind::Array);
            }
            b'<' | b'>' => {
                if !w.started && self.at(1) == Some(b'(') {
                    self.embed_sub(w, 2, SubKind::Process);
                    w.dynamic = true;
                } else {
                    return self.angle(w);
                }
            }
            b'\\' => self.escape(w),
            b'\'' => self.single_quote(w),
            b'"' => {
                self.i += 1;
                self.double_quote(w);
            }
            b'$' => self.dollar(w, false),
            b'`' => self.backtick(w),
            b'*' | b'?' | b'[' | b'{' => {
                w.glob = true;
                self.take(w, c);
            }
            b'~' if !w.started => {
                w.dynamic = true;
                self.take(w, c);
            }
            _ => self.take(w, c),
        }
        Flow::Next
    }

    /// The dialect's escape character at the cursor.
    pub(super) fn escape(&mut self, w: &mut Buf) {
        match self.at(1) {
            Some(b'\n') => self.adv(2),
            Some(b'\r') if self.at(2) == Some(b'\n') => self.adv(3),
            None => {
                let e = self.escape_char();
                w.push(e);
                self.adv(1);
            }
            Some(c) => {
                if !w.started && self.d == Dialect::Posix {
                    w.backslashed = true;
                }
                w.quote();
                w.push(c);
                self.adv(2);
            }
        }
    }

    fn single_quote(&mut self, w: &mut Buf) {
        self.i += 1;
        w.quote();
        let rest = &self.s[self.i..];
        match rest.iter().position(|&b| b == b'\'') {
            Some(k) => {
                w.extend(&rest[..k]);
                self.i += k + 1;
            }
            None => {
                w.extend(rest);
                self.i = self.s.len();
            }
        }
    }

    /// Inside `"…"` (cursor past the opening quote).
    fn double_quote(&mut self, w: &mut Buf) {
        w.quote();
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    self.i += 1;
                    return;
                }
                b'\\' => match self.at(1) {
                    Some(n @ (b'$' | b'`' | b'"' | b'\\')) => {
                        w.push(n);
                        self.adv(2);
                    }
                    Some(b'\n') => self.adv(2),
                    _ => {
                        w.push(b'\\');
                        self.adv(1);
                    }
                },
                b'$' => self.dollar(w, true),
                b'`' => self.backtick(w),
                _ => self.take(w, c),
            }
        }
    }

    /// `$…` in sh: substitutions, parameters, `$'…'` and `$"…"`.
    fn dollar(&mut self, w: &mut Buf, in_dq: bool) {
        let start = self.i;
        match self.at(1) {
            Some(b'(') => {
                if self.at(2) == Some(b'(') {
                    self.adv(3);
                    self.skip_arithmetic();
                } else {
                    self.open_sub(w, 2, SubKind::Command);
                }
                w.extend(self.raw(start));
                w.dynamic = true;
            }
            Some(b'{') => {
                self.adv(2);
                self.parameter(w);
                w.extend(self.raw(start));
                w.dynamic = true;
            }
            Some(b'\'') if !in_dq => {
                self.adv(2);
                self.ansi_c(w);
            }
            Some(b'"') if !in_dq => {
                self.adv(2);
                self.double_quote(w);
            }
            Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
                self.adv(1);
                while self.peek().is_some_and(is_name_byte) {
                    self.i += 1;
                }
                w.extend(self.raw(start));
                w.dynamic = true;
            }
            Some(c) if c.is_ascii_digit() || b"@*#?$!-".contains(&c) => {
                self.adv(2);
                w.extend(self.raw(start));
                w.dynamic = true;
            }
            _ => {
                w.push(b'$');
                self.adv(1);
            }
        }
    }

    /// Skip `$(( … ))` (cursor past `$((`).
    fn skip_arithmetic(&mut self) {
        let mut depth = 2u32;
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
                _ => {}
            }
        }
    }

    /// `${…}` (cursor past `${`): skipped, but substitutions inside still run.
    fn parameter(&mut self, w: &mut Buf) {
        let mut depth = 1u32;
        while let Some(c) = self.peek() {
            match c {
                b'}' => {
                    self.i += 1;
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                b'{' => {
                    self.i += 1;
                    depth += 1;
                }
                b'\\' => self.adv(2),
                b'\'' => {
                    self.i += 1;
                    while let Some(q) = self.peek() {
                        self.i += 1;
                        if q == b'\'' {
                            break;
                        }
                    }
                }
                b'$' if self.at(1) == Some(b'(') && self.at(2) != Some(b'(') => {
                    self.open_sub(w, 2, SubKind::Command);
                }
                b'`' => {
                    let mut scratch = Buf::default();
                    self.backtick(&mut scratch);
                    w.subs.append(&mut scratch.subs);
                }
                _ => self.i += 1,
            }
        }
    }

    /// `` `…` `` (cursor at the opening backtick): the body is unescaped and lexed as a
    /// nested source.
    fn backtick(&mut self, w: &mut Buf) {
        let start = self.i;
        self.i += 1;
        let mut inner = Vec::new();
        loop {
            match self.peek() {
                None => break,
                Some(b'`') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => match self.at(1) {
                    Some(c @ (b'`' | b'\\' | b'$')) => {
                        inner.push(c);
                        self.adv(2);
                    }
                    _ => {
                        inner.push(b'\\');
                        self.adv(1);
                    }
                },
                Some(c) => {
                    inner.push(c);
                    self.i += 1;
                }
            }
        }
        let text = String::from_utf8_lossy(&inner).into_owned();
        if let Some(ix) = self.sub_text(SubKind::Backtick, &text) {
            w.subs.push(ix);
        }
        w.extend(self.raw(start));
        w.dynamic = true;
    }

    /// `$'…'` (cursor past `$'`): ANSI-C escapes decoded.
    fn ansi_c(&mut self, w: &mut Buf) {
        w.quote();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'\'' => return,
                b'\\' => {
                    let Some(e) = self.peek() else {
                        w.push(b'\\');
                        return;
                    };
                    self.i += 1;
                    self.ansi_escape(e, w);
                }
                _ => w.push(c),
            }
        }
    }

    fn ansi_escape(&mut self, e: u8, w: &mut Buf) {
        let simple = match e {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0x0c),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            _ => None,
        };
        if let Some(b) = simple {
            w.push(b);
            return;
        }
        match e {
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.i += 1;
                        }
                        _ => break,
                    }
                }
                w.push((v & 0xff) as u8);
            }
            b'x' | b'u' | b'U' => {
                let max = match e {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match self.peek().and_then(|d| (d as char).to_digit(16)) {
                        Some(d) => {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            self.i += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    w.push(b'\\');
                    w.push(e);
                } else if e == b'x' {
                    w.push((v & 0xff) as u8);
                } else {
                    let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                    let mut tmp = [0u8; 4];
                    w.extend(ch.encode_utf8(&mut tmp).as_bytes());
                }
            }
            b'c' => {
                if let Some(c) = self.peek() {
                    self.i += 1;
                    w.push(c & 0x1f);
                }
            }
            _ => {
                w.push(b'\\');
                w.push(e);
            }
        }
    }
}

pub(super) enum Flow {
    Next,
    End,
    Redirect,
}
