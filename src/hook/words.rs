//! A small command splitter: segments of words with quotes removed and expansions marked.
//! Enough to find `claim <stream>` / `release <stream>` at the head of a segment.

use super::lifecycle::Word;

/// Splits a shell command into segments (at `;`, `&`, `|`, newlines and parentheses outside
/// quotes), each a list of words; leading `NAME=value` assignments are dropped.
pub fn segments(command: &str) -> Vec<Vec<Word>> {
    let mut segs: Vec<Vec<Word>> = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut dynamic = false;
    let mut chars = command.chars().peekable();
    let end_word =
        |words: &mut Vec<Word>, cur: &mut String, in_word: &mut bool, dynamic: &mut bool| {
            if *in_word {
                words.push(Word {
                    text: std::mem::take(cur),
                    dynamic: *dynamic,
                });
            }
            *in_word = false;
            *dynamic = false;
        };
    let end_seg = |segs: &mut Vec<Vec<Word>>, words: &mut Vec<Word>| {
        let mut w = std::mem::take(words);
        let skip = w
            .iter()
            .take_while(|w| {
                let t = &w.text;
                t.find('=').is_some_and(|i| {
                    i > 0
                        && t[..i]
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                })
            })
            .count();
        w.drain(..skip);
        if !w.is_empty() {
            segs.push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        '$' | '`' => {
                            dynamic = true;
                            cur.push(q);
                        }
                        _ => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(n) => cur.push(n),
                }
            }
            '$' | '`' => {
                in_word = true;
                dynamic = true;
                cur.push(c);
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                end_word(&mut words, &mut cur, &mut in_word, &mut dynamic);
                end_seg(&mut segs, &mut words);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut words, &mut cur, &mut in_word, &mut dynamic);
                end_seg(&mut segs, &mut words);
            }
            c if c.is_whitespace() => end_word(&mut words, &mut cur, &mut in_word, &mut dynamic),
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    end_word(&mut words, &mut cur, &mut in_word, &mut dynamic);
    end_seg(&mut segs, &mut words);
    segs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmd: &str) -> Vec<Vec<String>> {
        segments(cmd)
            .into_iter()
            .map(|s| s.into_iter().map(|w| w.text).collect())
            .collect()
    }

    #[test]
    fn splits_and_unquotes() {
        assert_eq!(
            texts("claim api && echo 'a b'"),
            vec![vec!["claim", "api"], vec!["echo", "a b"]]
        );
        assert_eq!(
            texts("FOO=1 ./bin/claim \"ui\"; x|y"),
            vec![vec!["./bin/claim", "ui"], vec!["x"], vec!["y"]]
        );
        assert_eq!(
            texts("# claim api\nrelease api"),
            vec![vec!["release", "api"]]
        );
        assert_eq!(texts("echo a\\\nb"), vec![vec!["echo", "ab"]]);
    }

    #[test]
    fn marks_expansions() {
        let s = segments("release $S; release \"$(cat f)\"; release x");
        assert!(s[0][1].dynamic && s[1][1].dynamic && !s[2][1].dynamic);
        assert!(!segments("release 'x$'")[0][1].dynamic);
    }
}
