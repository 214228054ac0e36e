//! PowerShell and cmd words: backtick and caret escapes, `'…'` with `''`, `"…"` with
//! `` ` `` escapes and `$(…)`, here-strings, `%VAR%`.

use super::lexer::{Lexer, SubKind};
use super::quote::{Buf, Flow, is_name_byte};
use super::word::Word;

impl Lexer<'_, '_> {
    pub(super) fn ps_byte(&mut self, c: u8, w: &mut Buf) -> Flow {
        match c {
            b' ' | b'\t' | b'\r' | 0x0c | b'\n' | b';' | b'|' | b')' | b'{' | b'}' | b'&' => {
                return Flow::End;
            }
            b'(' => {
                self.embed_sub(w, 1, SubKind::Command);
                w.dynamic = true;
            }
            b'@' if !w.started && self.at(1) == Some(b'(') => {
                self.embed_sub(w, 2, SubKind::Command);
                w.dynamic = true;
            }
            b'<' | b'>' => {
                if w.bytes == b"*" && !w.quoted {
                    w.bytes.clear();
                    return Flow::Redirect;
                }
                return self.angle(w);
            }
            b'`' => self.escape(w),
            b'\'' => self.ps_single_quote(w),
            b'"' => {
                self.i += 1;
                self.ps_double_quote(w, None);
            }
            b'$' => self.ps_dollar(w),
            b'*' | b'?' | b'[' => {
                w.glob = true;
                self.take(w, c);
            }
            _ => self.take(w, c),
        }
        Flow::Next
    }

    pub(super) fn cmd_byte(&mut self, c: u8, w: &mut Buf) -> Flow {
        match c {
            b' ' | b'\t' | b'\r' | 0x0c | b'\n' | b'|' | b')' | b'&' => return Flow::End,
            b'<' | b'>' => return self.angle(w),
            b'^' => self.escape(w),
            b'"' => {
                self.i += 1;
                w.quote();
                while let Some(q) = self.peek() {
                    self.i += 1;
                    if q == b'"' {
                        break;
                    }
                    if q == b'%' {
                        w.dynamic = true;
                    }
                    w.push(q);
                }
            }
            b'%' => {
                w.dynamic = true;
                self.take(w, c);
            }
            b'*' | b'?' => {
                w.glob = true;
                self.take(w, c);
            }
            _ => self.take(w, c),
        }
        Flow::Next
    }

    fn ps_single_quote(&mut self, w: &mut Buf) {
        self.i += 1;
        w.quote();
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == b'\'' {
                if self.peek() == Some(b'\'') {
                    w.push(b'\'');
                    self.i += 1;
                } else {
                    return;
                }
            } else {
                w.push(c);
            }
        }
    }

    /// PowerShell `"…"` (cursor past the quote), or a here-string body up to `end`.
    fn ps_double_quote(&mut self, w: &mut Buf, end: Option<usize>) {
        w.quote();
        while let Some(c) = self.peek() {
            if end.is_some_and(|e| self.i >= e) {
                return;
            }
            match c {
                b'"' if end.is_none() => {
                    if self.at(1) == Some(b'"') {
                        w.push(b'"');
                        self.adv(2);
                    } else {
                        self.i += 1;
                        return;
                    }
                }
                b'`' => {
                    let out = match self.at(1) {
                        Some(b'n') => b'\n',
                        Some(b't') => b'\t',
                        Some(b'r') => b'\r',
                        Some(b'0') => 0,
                        Some(b'a') => 7,
                        Some(b'b') => 8,
                        Some(b'e') => 0x1b,
                        Some(b'f') => 0x0c,
                        Some(b'v') => 0x0b,
                        Some(x) => x,
                        None => b'`',
                    };
                    w.push(out);
                    self.adv(2);
                }
                b'$' => self.ps_dollar(w),
                _ => self.take(w, c),
            }
        }
    }

    fn ps_dollar(&mut self, w: &mut Buf) {
        let start = self.i;
        match self.at(1) {
            Some(b'(') => {
                self.open_sub(w, 2, SubKind::Command);
            }
            Some(b'{') => {
                self.adv(2);
                while let Some(c) = self.peek() {
                    self.i += 1;
                    if c == b'}' {
                        break;
                    }
                }
            }
            Some(c) if is_name_byte(c) => {
                self.adv(1);
                while self.peek().is_some_and(|b| is_name_byte(b) || b == b':') {
                    self.i += 1;
                }
            }
            Some(b'?' | b'$' | b'^') => self.adv(2),
            _ => {
                w.push(b'$');
                self.adv(1);
                return;
            }
        }
        w.extend(self.raw(start));
        w.dynamic = true;
    }

    /// `@'…'@` / `@"…"@` (cursor at `@`); `None` when this is not a here-string opener.
    pub(super) fn ps_here_string(&mut self) -> Option<Word> {
        let q = self.at(1).filter(|q| matches!(q, b'\'' | b'"'))?;
        let mut j = self.i + 2;
        while matches!(self.s.get(j), Some(b' ' | b'\t' | b'\r')) {
            j += 1;
        }
        if self.s.get(j) != Some(&b'\n') {
            return None;
        }
        let body_start = j + 1;
        let mut k = body_start;
        let (body_end, after) = loop {
            if k >= self.s.len() {
                break (self.s.len(), self.s.len());
            }
            if self.s[k] == q && self.s.get(k + 1) == Some(&b'@') {
                let mut end = k.saturating_sub(1).max(body_start);
                if end > body_start && self.s[end - 1] == b'\r' {
                    end -= 1;
                }
                break (end, k + 2);
            }
            match self.s[k..].iter().position(|&b| b == b'\n') {
                Some(p) => k += p + 1,
                None => k = self.s.len(),
            }
        };
        let mut w = Buf::default();
        w.quote();
        if q == b'\'' {
            w.extend(&self.s[body_start..body_end]);
        } else {
            self.i = body_start;
            self.ps_double_quote(&mut w, Some(body_end));
        }
        self.i = after;
        Some(w.finish())
    }
}
