//! cmd's `for` loops over literal sets: `for [/d] [/r [root]] %X in (set) do command` runs
//! the command once per item, so the tokens are rewritten into one copy of the command per
//! item with `%X` (`%%X` in a batch file, `%~nxX` with modifiers) replaced. An item with
//! `*`/`?` stays a pattern (`/d` matches folders, plain `for` files); under `/r` it is
//! joined to the root. `for /f` (a file's lines or a command's output) and `for /l`
//! (numbers) are left as they are: their items are not in the text.

use super::lexer::{Op, Tok};
use super::word::Word;

/// Most items one loop is expanded to.
const MAX_ITEMS: usize = 64;
/// Most tokens the rewritten list may hold.
const MAX_TOKENS: usize = 16_384;

/// The loop's parts, with token indices.
struct Loop {
    var: String,
    root: Option<String>,
    items: Vec<String>,
    /// Index of the first body token and one past the last.
    body: (usize, usize),
}

fn word_is(t: Option<&Tok>, s: &str) -> bool {
    matches!(t, Some(Tok::Word(w)) if w.text.eq_ignore_ascii_case(s))
}

fn ends_command(op: Op) -> bool {
    matches!(
        op,
        Op::Seq | Op::And | Op::Or | Op::Newline | Op::Background
    )
}

/// Parse a loop whose `for` is at `i`.
fn parse(toks: &[Tok], i: usize) -> Option<Loop> {
    let mut j = i + 1;
    let mut root = None;
    while let Some(Tok::Word(w)) = toks.get(j) {
        match w.text.to_ascii_lowercase().as_str() {
            "/d" => {}
            "/r" => {
                if let Some(Tok::Word(r)) = toks.get(j + 1)
                    && !r.text.starts_with('%')
                {
                    root = Some(r.text.clone());
                    j += 1;
                } else {
                    root = Some(".".to_string());
                }
            }
            "/f" | "/l" => return None,
            _ => break,
        }
        j += 1;
    }
    let Some(Tok::Word(var)) = toks.get(j) else {
        return None;
    };
    if !var.text.starts_with('%') || var.text.len() < 2 || !word_is(toks.get(j + 1), "in") {
        return None;
    }
    let Some(Tok::Op(Op::Open)) = toks.get(j + 2) else {
        return None;
    };
    let mut k = j + 3;
    let mut items = Vec::new();
    loop {
        match toks.get(k)? {
            Tok::Word(w) => items.extend(
                w.text
                    .split([',', ';'])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
            Tok::Op(Op::Close) => break,
            _ => return None,
        }
        k += 1;
    }
    if !word_is(toks.get(k + 1), "do") {
        return None;
    }
    let start = k + 2;
    let mut end = start;
    if let Some(Tok::Op(Op::Open)) = toks.get(start) {
        let mut depth = 0usize;
        while let Some(t) = toks.get(end) {
            match t {
                Tok::Op(Op::Open) => depth += 1,
                Tok::Op(Op::Close) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end += 1;
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
    } else {
        while let Some(t) = toks.get(end) {
            if matches!(t, Tok::Op(op) if ends_command(*op)) {
                break;
            }
            end += 1;
        }
    }
    items.truncate(MAX_ITEMS);
    Some(Loop {
        var: var.text.trim_start_matches('%').to_string(),
        root,
        items,
        body: (start, end),
    })
}

/// `text` with every reference to the loop variable `var` (`%d`, `%%d`, `%~nxd`) replaced.
fn substitute(text: &str, var: &str, item: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(k) = rest.find('%') {
        out.push_str(&rest[..k]);
        let after = rest[k..].trim_start_matches('%');
        if let Some(m) = after.strip_prefix('~') {
            // `%~nxd`: modifiers, then the variable's letter.
            let run = m.bytes().take_while(u8::is_ascii_alphabetic).count();
            if m[..run].ends_with(var) {
                out.push_str(item);
                rest = &m[run..];
                changed = true;
                continue;
            }
        } else if let Some(t) = after.strip_prefix(var) {
            out.push_str(item);
            rest = t;
            changed = true;
            continue;
        }
        out.push('%');
        rest = &rest[k + 1..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `toks` with every literal `for` loop written out once per item.
pub(crate) fn expand(toks: Vec<Tok>) -> Vec<Tok> {
    let has_for = toks
        .iter()
        .any(|t| matches!(t, Tok::Word(w) if w.text.eq_ignore_ascii_case("for")));
    if !has_for {
        return toks;
    }
    let mut out: Vec<Tok> = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let at_start = i == 0 || matches!(toks[i - 1], Tok::Op(_));
        let lp = (at_start && word_is(toks.get(i), "for"))
            .then(|| parse(&toks, i))
            .flatten();
        let Some(lp) =
            lp.filter(|l| out.len() + l.items.len() * (l.body.1 - l.body.0 + 1) < MAX_TOKENS)
        else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        for item in &lp.items {
            let value = match &lp.root {
                Some(r) if r != "." => format!("{}\\{item}", r.trim_end_matches(['\\', '/'])),
                _ => item.clone(),
            };
            for t in &toks[lp.body.0..lp.body.1] {
                out.push(match t {
                    Tok::Word(w) => match substitute(&w.text, &lp.var, &value) {
                        Some(text) => Tok::Word(Word {
                            glob: w.glob || value.contains(['*', '?']),
                            dynamic: w.dynamic && text.contains(['%', '$']),
                            text,
                            ..w.clone()
                        }),
                        None => t.clone(),
                    },
                    other => other.clone(),
                });
            }
            out.push(Tok::Op(Op::Seq));
        }
        i = lp.body.1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_variables_are_replaced() {
        assert_eq!(substitute("%d", "d", "dist").as_deref(), Some("dist"));
        assert_eq!(substitute("%%d", "d", "dist").as_deref(), Some("dist"));
        assert_eq!(
            substitute("\"%~fd\"", "d", "dist").as_deref(),
            Some("\"dist\"")
        );
        assert_eq!(
            substitute("x\\%d\\y", "d", "dist").as_deref(),
            Some("x\\dist\\y")
        );
        assert_eq!(substitute("%e", "d", "dist"), None);
        assert_eq!(substitute("100%", "d", "dist"), None);
        assert_eq!(substitute("plain", "d", "dist"), None);
    }
}
