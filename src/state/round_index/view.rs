//! The index file's text, and the index as one guard call reads it.
//!
//! ```text
//! {"version":2,"dirStamp":…,"verify":false,"latestHeartbeatMs":…,"count":2,"bad":[…]}
//! ["api.lock","ui.lock"]
//! ["src/api/"]<TAB>{"stream":"api","sessionId":"3f2a…","owns":["src/api/**"],…}
//! ["src/ui/"]<TAB>{"stream":"ui",…}
//! ```
//!
//! One line of header, one of the folder's file names, then one line per lock: its literal
//! prefixes, a tab (JSON text never holds a raw tab), and the entry. A call parses the header
//! and splits the lines; the file names only when `verify` asks for the listing; an entry only
//! when a decision needs that lock: the entries that mention the caller's session (its own
//! locks), and, for an ownership check, the entries whose prefixes could match the path (their
//! prefixes are all that is parsed of the others). The cost of a call with no write target is
//! one read and a scan for line ends, whatever the number of locks.

use super::{BadEntry, Entry, Index, Unusable, VERSION, dir_stamp, listing, path};
use crate::state::Layout;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

/// The first line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Header {
    version: u32,
    dir_stamp: u64,
    verify: bool,
    latest_heartbeat_ms: u64,
    /// How many lock lines follow the file names: a file cut short is corrupt, not smaller.
    count: usize,
    bad: Vec<BadEntry>,
}

/// The index of one call: its text, where each lock line's two parts sit, and the entries
/// parsed so far.
pub struct View {
    text: String,
    files: Range<usize>,
    /// (prefixes, entry) of each lock line.
    lines: Vec<(Range<usize>, Range<usize>)>,
    parsed: Vec<OnceCell<Option<Entry>>>,
    pub bad: Vec<BadEntry>,
    pub dir_stamp: u64,
    pub verify: bool,
    pub latest_heartbeat_ms: u64,
}

/// Which entries a question could concern, decided without parsing the others.
#[derive(Clone, Copy)]
pub enum Hint<'a> {
    Every,
    /// Entries whose text holds this JSON string (a session id, quoted as the index writes it).
    Mentions(&'a str),
    /// Entries with a literal prefix that could match this repo path.
    MayOwn(&'a str, bool),
}

/// The text of `index` as the file holds it.
pub fn render(index: &Index) -> serde_json::Result<Vec<u8>> {
    let header = Header {
        version: index.version,
        dir_stamp: index.dir_stamp,
        verify: index.verify,
        latest_heartbeat_ms: super::latest(index.locks.iter()),
        count: index.locks.len(),
        bad: index.bad.clone(),
    };
    let mut out = serde_json::to_vec(&header)?;
    out.push(b'\n');
    serde_json::to_writer(&mut out, &index.files)?;
    out.push(b'\n');
    for e in &index.locks {
        serde_json::to_writer(&mut out, &e.prefixes)?;
        out.push(b'\t');
        serde_json::to_writer(&mut out, e)?;
        out.push(b'\n');
    }
    Ok(out)
}

impl View {
    /// Reads the index and checks it against the folder: its stamp, and (when `verify`) the
    /// folder's file names.
    pub fn load(layout: &Layout) -> Result<View, Unusable> {
        let Some(stamp) = dir_stamp(&layout.dir) else {
            return Err(Unusable::Missing);
        };
        let text = match crate::atomic::read_regular(path(layout), crate::atomic::MAX_READ) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
            Err(e) => return Err(Unusable::Corrupt(e.to_string())),
        };
        let view = View::parse(text)?;
        if view.dir_stamp != stamp {
            return Err(Unusable::Stale);
        }
        if view.verify && listing(&layout.dir) != view.files()? {
            return Err(Unusable::Stale);
        }
        Ok(view)
    }

    /// Splits the text into its lines and parses the header.
    fn parse(text: String) -> Result<View, Unusable> {
        let corrupt = |why: String| Unusable::Corrupt(why);
        let mut spans = Vec::new();
        let mut start = 0;
        for end in line_ends(text.as_bytes()) {
            spans.push(start..end);
            start = end + 1;
        }
        if start != text.len() {
            return Err(corrupt("the last line is cut short".into()));
        }
        let (Some(head), Some(files)) = (spans.first(), spans.get(1)) else {
            return Err(corrupt("no header".into()));
        };
        let header: Header =
            serde_json::from_str(&text[head.clone()]).map_err(|e| corrupt(e.to_string()))?;
        if header.version != VERSION {
            return Err(corrupt(format!("version {}", header.version)));
        }
        if header.count != spans.len() - 2 {
            return Err(corrupt(format!(
                "{} lock lines, the header says {}",
                spans.len() - 2,
                header.count
            )));
        }
        let mut lines = Vec::with_capacity(header.count);
        for span in &spans[2..] {
            let tab = text.as_bytes()[span.clone()]
                .iter()
                .position(|&b| b == b'\t')
                .ok_or_else(|| corrupt("a lock line without its prefixes".into()))?;
            lines.push((span.start..span.start + tab, span.start + tab + 1..span.end));
        }
        Ok(View {
            files: files.clone(),
            parsed: lines.iter().map(|_| OnceCell::new()).collect(),
            lines,
            bad: header.bad,
            dir_stamp: header.dir_stamp,
            verify: header.verify,
            latest_heartbeat_ms: header.latest_heartbeat_ms,
            text,
        })
    }

    /// The folder's file names the index was written from.
    fn files(&self) -> Result<Vec<String>, Unusable> {
        serde_json::from_str(&self.text[self.files.clone()])
            .map_err(|e| Unusable::Corrupt(e.to_string()))
    }

    /// The whole index, every entry parsed (for writers, which rewrite it).
    pub fn into_index(self) -> Result<Index, Unusable> {
        let mut locks = Vec::with_capacity(self.lines.len());
        for (_, entry) in &self.lines {
            locks.push(
                serde_json::from_str(&self.text[entry.clone()])
                    .map_err(|e| Unusable::Corrupt(e.to_string()))?,
            );
        }
        Ok(Index {
            version: VERSION,
            dir_stamp: self.dir_stamp,
            verify: self.verify,
            files: self.files()?,
            locks,
            bad: self.bad,
        })
    }

    /// Entry `i`, parsed on first use; `None` when its text is not an entry.
    fn entry(&self, i: usize) -> Option<&Entry> {
        self.parsed[i]
            .get_or_init(|| serde_json::from_str(&self.text[self.lines[i].1.clone()]).ok())
            .as_ref()
    }

    /// The entry of `stream`, if the index has one it can read (a rare question: every entry
    /// may be parsed).
    pub fn find(&self, stream: &str) -> Option<Entry> {
        (0..self.lines.len())
            .filter_map(|i| self.entry(i))
            .find(|e| e.stream == stream)
            .cloned()
    }

    /// The entries `hint` could concern. `Err(())` when one of them cannot be read: the
    /// caller then decides from the lock files.
    pub fn select(&self, hint: Hint) -> Result<Vec<&Entry>, ()> {
        let picked: Vec<usize> = match hint {
            Hint::Every => (0..self.lines.len()).collect(),
            Hint::Mentions(quoted) => self.mentioning(quoted),
            Hint::MayOwn(rel, ci) => {
                let mut picked = Vec::new();
                for (i, (prefixes, _)) in self.lines.iter().enumerate() {
                    if may_match(&self.text[prefixes.clone()], rel, ci)? {
                        picked.push(i);
                    }
                }
                picked
            }
        };
        picked
            .into_iter()
            .map(|i| self.entry(i).ok_or(()))
            .collect()
    }

    /// The lock lines whose entry holds `needle`, found in one pass over the text.
    fn mentioning(&self, needle: &str) -> Vec<usize> {
        let Some(first) = self.lines.first() else {
            return Vec::new();
        };
        let from = first.0.start;
        let mut out: Vec<usize> = Vec::new();
        for hit in occurrences(&self.text.as_bytes()[from..], needle.as_bytes()) {
            let at = from + hit;
            // The line holding the hit: the last one starting at or before it.
            let i = self.lines.partition_point(|(p, _)| p.start <= at) - 1;
            if self.lines[i].1.contains(&at) && out.last() != Some(&i) {
                out.push(i);
            }
        }
        out
    }
}

/// Could one of the prefixes in `list` (a JSON array of strings) match `rel`? Read without
/// building strings when no prefix holds an escape (the common case); else through serde.
fn may_match(list: &str, rel: &str, ci: bool) -> Result<bool, ()> {
    // One pass over `["a/","b/"]`: each item is a quote, bytes that are neither a quote nor a
    // backslash, a quote, then a comma or the end. Anything else (an escape, a ',' inside a
    // prefix, stray text) goes to serde.
    let b = list.as_bytes();
    // A lone `[` is both ends, so a list that passes has at least two bytes.
    if b.first() != Some(&b'[') || b.last() != Some(&b']') {
        return may_match_slow(list, rel, ci);
    }
    let end = b.len() - 1;
    let mut at = 1;
    if at == end {
        return Ok(false);
    }
    loop {
        if b[at] != b'"' {
            return may_match_slow(list, rel, ci);
        }
        let start = at + 1;
        let Some(len) = b[start..end].iter().position(|&c| c == b'"' || c == b'\\') else {
            return may_match_slow(list, rel, ci);
        };
        let close = start + len;
        if b[close] == b'\\' {
            return may_match_slow(list, rel, ci);
        }
        // Both ends are ASCII quotes, so this is a whole `str`.
        if crate::globs::prefix_may_match(&list[start..close], rel, ci) {
            return Ok(true);
        }
        at = close + 1;
        if at == end {
            return Ok(false);
        }
        if b[at] != b',' || at + 1 == end {
            return may_match_slow(list, rel, ci);
        }
        at += 1;
    }
}

fn may_match_slow(list: &str, rel: &str, ci: bool) -> Result<bool, ()> {
    let list: Vec<Cow<str>> = serde_json::from_str(list).map_err(|_| ())?;
    Ok(list
        .iter()
        .any(|prefix| crate::globs::prefix_may_match(prefix, rel, ci)))
}

/// The offsets of every `\n` in `text`.
///
/// The searches here are picked so that none asks the CPU which vector instructions it has:
/// memchr's default entry points do that on their first call (`cpuid`, a few times), and under
/// a hypervisor that traps it that costs more than this whole parse (about 9 µs a `cpuid` on
/// the machine the benchmark runs on). SSE2 is part of x86-64, so its search needs no probe;
/// elsewhere the portable one does the same work a word at a time.
fn line_ends(text: &[u8]) -> Vec<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(one) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return one.iter(text).collect();
    }
    memchr::arch::all::memchr::One::new(b'\n')
        .iter(text)
        .collect()
}

/// The offsets of the non-overlapping occurrences of `needle` in `hay`, without a CPU probe
/// (see [`line_ends`]).
fn occurrences(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    if needle.is_empty() {
        return out;
    }
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(pair) = memchr::arch::x86_64::sse2::packedpair::Finder::new(needle) {
        while hay.len() - at >= pair.min_haystack_len() {
            let Some(i) = pair.find(&hay[at..], needle) else {
                return out;
            };
            out.push(at + i);
            at += i + needle.len();
        }
    }
    let two_way = memchr::arch::all::twoway::Finder::new(needle);
    while let Some(i) = two_way.find(&hay[at..], needle) {
        out.push(at + i);
        at += i + needle.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_read_with_and_without_escapes() {
        for (list, rel, want) in [
            (r#"["src/api/"]"#, "src/api/x.ts", true),
            (r#"["src/api/"]"#, "src/ui/x.ts", false),
            (r#"[]"#, "src/api/x.ts", false),
            (r#"["docs/","src/a,b/"]"#, "src/a,b/x", true),
            (r#"["docs/","src/a,b/"]"#, "src/a/x", false),
            (r#"["src/\"q\"/"]"#, "src/\"q\"/x", true),
            (r#"["src/\u00e9/"]"#, "src/\u{e9}/x", true),
            (r#"[""]"#, "anything", true),
            (r#"["x/","src/"]"#, "src/y", true),
            (r#"["x/" , "src/"]"#, "src/y", true),
            (r#"["x/","y/"]"#, "src/y", false),
        ] {
            assert_eq!(may_match(list, rel, false), Ok(want), "{list} vs {rel}");
        }
        assert_eq!(may_match("not json", "x", false), Err(()));
        assert_eq!(may_match(r#"["a"#, "x", false), Err(()));
        assert_eq!(may_match(r#"["a",]"#, "x", false), Err(()));
        assert_eq!(may_match("[", "x", false), Err(()));
    }

    /// What the searches must find: every non-overlapping occurrence, left to right.
    fn naive(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = 0;
        while at + needle.len() <= hay.len() {
            if hay[at..].starts_with(needle) {
                out.push(at);
                at += needle.len();
            } else {
                at += 1;
            }
        }
        out
    }

    #[test]
    fn the_searches_find_what_a_naive_scan_finds() {
        let long = format!("{}\"me\"{}\"me\"", "x\"m\n".repeat(40), "y".repeat(70));
        let hays: [&[u8]; 6] = [
            b"",
            b"\n",
            b"a\nb\n\nc",
            b"aaaaaaa",
            long.as_bytes(),
            b"\"me\"",
        ];
        for hay in hays {
            assert_eq!(line_ends(hay), naive(hay, b"\n"), "{hay:?}");
            for needle in [
                &b"\"me\""[..],
                b"aa",
                b"a",
                b"\n",
                b"longer than most of these",
            ] {
                assert_eq!(
                    occurrences(hay, needle),
                    naive(hay, needle),
                    "{needle:?} in {hay:?}"
                );
            }
        }
        assert!(occurrences(b"abc", b"").is_empty());
    }

    #[test]
    fn a_session_is_found_in_its_own_lines_only() {
        let index = Index {
            version: VERSION,
            dir_stamp: 1,
            verify: false,
            files: vec!["a.lock".into(), "b.lock".into(), "c.lock".into()],
            locks: ["a", "b", "c"]
                .iter()
                .map(|s| Entry {
                    stream: s.to_string(),
                    session_id: if *s == "b" {
                        "other".into()
                    } else {
                        "me".into()
                    },
                    owns: vec![format!("src/{s}/**")],
                    prefixes: vec![format!("src/{s}/")],
                    heartbeat_ms: 5,
                    done: false,
                    taken_from: (*s == "b").then(|| "me".to_string()),
                })
                .collect(),
            bad: Vec::new(),
        };
        let text = String::from_utf8(render(&index).unwrap()).unwrap();
        let view = View::parse(text).unwrap();
        assert_eq!(view.mentioning("\"me\""), vec![0, 1, 2]);
        assert_eq!(view.mentioning("\"other\""), vec![1]);
        let owners = view.select(Hint::MayOwn("src/c/x.ts", false)).unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].stream, "c");
        assert_eq!(view.into_index().unwrap(), index);
    }

    #[test]
    fn a_file_cut_short_or_miscounted_is_corrupt() {
        let header =
            r#"{"version":2,"dirStamp":1,"verify":false,"latestHeartbeatMs":0,"count":1,"bad":[]}"#;
        for text in [
            format!("{header}\n[]\n"),
            format!("{header}\n[]\n[\"x/\"]\t{{}}"),
            format!("{header}\n[]\n[\"x/\"]{{}}\n"),
            String::new(),
        ] {
            assert!(
                matches!(View::parse(text.clone()), Err(Unusable::Corrupt(_))),
                "{text:?}"
            );
        }
    }
}
