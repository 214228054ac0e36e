//! The interpreter heuristic's lexer: string literals (with each language's quoting:
//! Python prefixes and triple quotes, JS templates, perl `q{}`/`qw()`/`qx{}`, ruby `%w[]`/
//! `%x()`), dotted names, punctuation; comments dropped. A string that interpolates is
//! kept as unknown.

use super::{Lang, MAX_TOKENS};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    /// A string literal; `None` when built at run time (interpolation).
    Str(Option<String>),
    /// A command string (backticks, `qx{}`, `%x{}`, a `` $`…` `` template); `None` when
    /// interpolated.
    Cmd(Option<String>),
    /// A name, dotted (`os.path.join`, `.execSync` after a call, `File::Path::rmtree`).
    Name(String),
    /// One punctuation character.
    P(char),
}

pub(super) struct Lexer<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    pub(super) lang: Lang,
    pub(super) out: Vec<Tok>,
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    pub(super) fn run(mut self) -> Vec<Tok> {
        while self.i < self.s.len() && self.out.len() < MAX_TOKENS {
            let c = self.s[self.i];
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                b'#' if !matches!(self.lang, Lang::Js) && self.prev_byte() != Some(b'$') => {
                    self.skip_line()
                }
                b'/' if matches!(self.lang, Lang::Js | Lang::Php) && self.peek(1) == Some(b'/') => {
                    self.skip_line()
                }
                b'/' if matches!(self.lang, Lang::Js | Lang::Php) && self.peek(1) == Some(b'*') => {
                    self.skip_block()
                }
                b'\'' | b'"' => {
                    let t = self.string(c, "");
                    self.out.push(t);
                }
                b'`' if matches!(self.lang, Lang::Js | Lang::Perl | Lang::Ruby | Lang::Php) => {
                    self.i += 1;
                    let (text, known) = self.quoted(b'`', self.lang != Lang::Js);
                    let tagged = matches!(self.out.last(), Some(Tok::Name(n)) if n.ends_with('$'));
                    let t = match self.lang {
                        Lang::Js if tagged => Tok::Cmd(known.then_some(text)),
                        Lang::Js => Tok::Str(known.then_some(text)),
                        _ => Tok::Cmd(known.then_some(text)),
                    };
                    self.out.push(t);
                }
                b'%' if self.lang == Lang::Ruby && self.ruby_percent() => {}
                c if c.is_ascii_alphabetic()
                    || c == b'_'
                    || c == b'$'
                    || c == b'.' && self.name_follows() =>
                {
                    self.name()
                }
                c => {
                    self.out.push(Tok::P(c as char));
                    self.i += 1;
                    // Keep UTF-8 intact: skip continuation bytes.
                    while self.i < self.s.len() && (self.s[self.i] & 0xC0) == 0x80 {
                        self.i += 1;
                    }
                }
            }
        }
        self.out
    }

    fn prev_byte(&self) -> Option<u8> {
        self.i.checked_sub(1).map(|k| self.s[k])
    }

    fn name_follows(&self) -> bool {
        self.peek(1)
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
    }

    fn skip_line(&mut self) {
        while self.i < self.s.len() && self.s[self.i] != b'\n' {
            self.i += 1;
        }
    }

    fn skip_block(&mut self) {
        self.i += 2;
        while self.i < self.s.len() && !(self.s[self.i] == b'*' && self.peek(1) == Some(b'/')) {
            self.i += 1;
        }
        self.i = (self.i + 2).min(self.s.len());
    }

    fn name(&mut self) {
        let start = self.i;
        while let Some(c) = self.peek(0) {
            let sep = c == b'.' || (c == b':' && self.peek(1) == Some(b':'));
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || sep {
                self.i += if c == b':' { 2 } else { 1 };
            } else {
                break;
            }
        }
        let name = String::from_utf8_lossy(&self.s[start..self.i]).replace("::", ".");
        // String prefixes and perl quote-like operators.
        if let Some(q) = self.peek(0).filter(|q| matches!(q, b'\'' | b'"')) {
            let lower = name.to_ascii_lowercase();
            if self.lang == Lang::Python
                && lower.len() <= 2
                && lower.chars().all(|c| "rbuf".contains(c))
            {
                let t = self.string(q, &lower);
                self.out.push(t);
                return;
            }
        }
        if self.lang == Lang::Perl
            && matches!(name.as_str(), "q" | "qq" | "qw" | "qx")
            && let Some(d) = self
                .peek(0)
                .filter(|d| d.is_ascii_punctuation() && *d != b',' && *d != b';' && *d != b'=')
        {
            self.i += 1;
            let (text, known) = self.quoted(closing(d), name != "q");
            self.quote_like(&name, text, known);
            return;
        }
        self.out.push(Tok::Name(name));
    }

    /// `qw(…)`/`%w[…]` as a parenthesised list, `qx`/`%x` as a command, the rest a string.
    fn quote_like(&mut self, op: &str, text: String, known: bool) {
        match op {
            "qw" | "w" | "W" => {
                self.out.push(Tok::P('['));
                for (k, w) in text.split_whitespace().enumerate() {
                    if k > 0 {
                        self.out.push(Tok::P(','));
                    }
                    self.out.push(Tok::Str(Some(w.to_string())));
                }
                self.out.push(Tok::P(']'));
            }
            "qx" | "x" => self.out.push(Tok::Cmd(known.then_some(text))),
            _ => self.out.push(Tok::Str(known.then_some(text))),
        }
    }

    /// Ruby `%w[…]`, `%x{…}`, `%q(…)`, `%Q(…)`, `%(…)`.
    fn ruby_percent(&mut self) -> bool {
        let (kind, at) = match self.peek(1) {
            Some(k @ (b'w' | b'W' | b'x' | b'q' | b'Q')) => (k as char, 2),
            Some(b'(' | b'[' | b'{') => ('Q', 1),
            _ => return false,
        };
        let Some(d) = self
            .peek(at)
            .filter(|d| matches!(d, b'(' | b'[' | b'{' | b'<' | b'|' | b'!'))
        else {
            return false;
        };
        self.i += at + 1;
        let (text, known) = self.quoted(closing(d), kind != 'q' && kind != 'w');
        let op = kind.to_string();
        self.quote_like(&op, text, known);
        true
    }

    /// A string literal opened by `q` at the cursor, with `prefix` (Python `r`, `f`, `b`).
    fn string(&mut self, q: u8, prefix: &str) -> Tok {
        let triple =
            self.lang == Lang::Python && self.peek(1) == Some(q) && self.peek(2) == Some(q);
        if triple {
            self.i += 3;
            let start = self.i;
            while self.i < self.s.len()
                && !(self.s[self.i] == q && self.peek(1) == Some(q) && self.peek(2) == Some(q))
            {
                self.i += 1;
            }
            let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
            self.i = (self.i + 3).min(self.s.len());
            let known = !(prefix.contains('f') && text.contains('{'));
            return Tok::Str(known.then_some(text));
        }
        self.i += 1;
        let raw = prefix.contains('r')
            || (q == b'\'' && matches!(self.lang, Lang::Perl | Lang::Php | Lang::Ruby));
        let interpolates = q == b'"' && matches!(self.lang, Lang::Perl | Lang::Php | Lang::Ruby);
        let (text, mut known) = self.quoted_with(q, !raw, interpolates);
        if prefix.contains('f') && text.contains('{') {
            known = false;
        }
        Tok::Str(known.then_some(text))
    }

    /// Read up to the closing `close` (the cursor is past the opening one).
    fn quoted(&mut self, close: u8, interpolates: bool) -> (String, bool) {
        self.quoted_with(close, true, interpolates)
    }

    fn quoted_with(&mut self, close: u8, escapes: bool, interpolates: bool) -> (String, bool) {
        let open = opening(close);
        let mut depth = 0usize;
        let mut out: Vec<u8> = Vec::new();
        let mut known = true;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            if c == b'\\' && self.i + 1 < self.s.len() {
                let n = self.s[self.i + 1];
                self.i += 2;
                if !escapes {
                    if n == close || n == b'\\' {
                        out.push(n);
                    } else {
                        out.extend([c, n]);
                    }
                    continue;
                }
                match n {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'\n' => {}
                    _ => out.push(n),
                }
                continue;
            }
            if open != close && c == open {
                depth += 1;
            } else if c == close {
                if depth == 0 {
                    self.i += 1;
                    break;
                }
                depth -= 1;
            }
            if interpolates {
                let next = self.peek(1);
                let var = matches!(c, b'$' | b'@')
                    && next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, b'_' | b'{'));
                if var || (c == b'#' && next == Some(b'{')) || (c == b'$' && next == Some(b'{')) {
                    known = false;
                }
            }
            if close == b'`' && c == b'$' && self.peek(1) == Some(b'{') {
                known = false;
            }
            out.push(c);
            self.i += 1;
        }
        (String::from_utf8_lossy(&out).into_owned(), known)
    }
}

fn closing(open: u8) -> u8 {
    match open {
        b'(' => b')',
        b'[' => b']',
        b'{' => b'}',
        b'<' => b'>',
        d => d,
    }
}

fn opening(close: u8) -> u8 {
    match close {
        b')' => b'(',
        b']' => b'[',
        b'}' => b'{',
        b'>' => b'<',
        d => d,
    }
}
