//! How far a message got, read from the target's transcript. The client writes there what it
//! does with a message:
//!
//! ```text
//! {"type":"queue-operation","operation":"enqueue","content":"…<id>…"}   it took it      → accepted
//! {"type":"attachment","attachment":{"type":"queued_command",…<id>…}}    into a request
//! {"type":"user","message":{"content":"…<id>…"}}                         (a wake's prompt)
//! {"type":"assistant","message":{"model":"claude-…",…}}                  answered        → delivered
//! ```
//!
//! A message is *delivered* once a line holding its id that is not a queue operation (it went
//! into a model request) is followed by an assistant line from a real model. An assistant line
//! of model `<synthetic>` is the client's own error text (the API failed): that request's
//! input was not seen. Reading is incremental ([`Tracker::poll`] reads only what was appended),
//! so a sender watching for its message costs one `stat` and a small read per look.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What the transcript says of one message, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    Nothing,
    /// The client took it into its queue.
    Taken,
    /// It was in a model request's input, and the model answered.
    Consumed,
}

/// Watches one transcript for a few message ids.
pub struct Tracker {
    path: PathBuf,
    file: Option<std::fs::File>,
    pos: u64,
    partial: Vec<u8>,
    ids: Vec<String>,
    seen: Vec<Seen>,
    /// In a request's input, no answer yet.
    in_input: Vec<bool>,
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// A line's top-level `type`, and whether it is an answer of a real model.
fn kind(line: &[u8]) -> (String, bool) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
        return (String::new(), false);
    };
    let t = v
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("")
        .to_string();
    let real = t == "assistant"
        && v.pointer("/message/model")
            .and_then(|m| m.as_str())
            .is_some_and(|m| !m.is_empty() && m != "<synthetic>");
    (t, real)
}

impl Tracker {
    /// Watches `path` from byte `from` for `ids`.
    pub fn new(path: &Path, ids: Vec<String>, from: u64) -> Tracker {
        let n = ids.len();
        Tracker {
            path: path.to_path_buf(),
            file: None,
            pos: from,
            partial: Vec::new(),
            ids,
            seen: vec![Seen::Nothing; n],
            in_input: vec![false; n],
        }
    }

    pub fn seen(&self, i: usize) -> Seen {
        self.seen.get(i).copied().unwrap_or(Seen::Nothing)
    }

    /// Reads what was appended since the last look. True when something new was read.
    pub fn poll(&mut self) -> bool {
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(f) = self.file.as_mut() else {
            return false;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len <= self.pos {
            return false;
        }
        if f.seek(SeekFrom::Start(self.pos)).is_err() {
            return false;
        }
        // Sized to what was appended: one read, not one per doubling of a growing buffer.
        let mut buf = Vec::with_capacity(usize::try_from(len - self.pos).unwrap_or(0));
        if f.take(len - self.pos).read_to_end(&mut buf).is_err() {
            return false;
        }
        self.pos += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let Some(last) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return true;
        };
        let rest = self.partial.split_off(last + 1);
        let whole = std::mem::replace(&mut self.partial, rest);
        for line in whole.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            self.line(line);
        }
        true
    }

    fn line(&mut self, line: &[u8]) {
        let pending = self.in_input.iter().any(|b| *b);
        let mine: Vec<usize> = (0..self.ids.len())
            .filter(|i| self.seen[*i] != Seen::Consumed && contains(line, self.ids[*i].as_bytes()))
            .collect();
        if mine.is_empty() && !(pending && contains(line, b"\"assistant\"")) {
            return;
        }
        let (t, real_answer) = kind(line);
        if real_answer {
            for i in 0..self.ids.len() {
                if self.in_input[i] || mine.contains(&i) {
                    self.seen[i] = Seen::Consumed;
                    self.in_input[i] = false;
                }
            }
            return;
        }
        for i in mine {
            self.seen[i] = self.seen[i].max(Seen::Taken);
            if t != "queue-operation" {
                self.in_input[i] = true;
            }
        }
    }
}

/// What the whole transcript says of each id (`Nothing` for all when there is none).
pub fn seen_all(transcript: Option<&Path>, ids: &[String]) -> Vec<Seen> {
    let Some(path) = transcript else {
        return vec![Seen::Nothing; ids.len()];
    };
    let mut t = Tracker::new(path, ids.to_vec(), 0);
    t.poll();
    (0..ids.len()).map(|i| t.seen(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn add(p: &Path, line: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    #[test]
    fn taken_then_consumed_as_the_client_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        add(
            &p,
            r#"{"type":"user","message":{"content":"B-PROMPT"},"permissionMode":"default"}"#,
        );
        let from = std::fs::metadata(&p).unwrap().len();
        let mut t = Tracker::new(&p, vec!["m-1".into(), "m-2".into()], from);
        assert!(!t.poll());
        add(
            &p,
            r#"{"type":"queue-operation","operation":"enqueue","content":"Session message m-1 from a"}"#,
        );
        // Half a line: not read as one yet.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        write!(f, r#"{{"type":"assistant","message":{{"model":"claude-x"#).unwrap();
        t.poll();
        assert_eq!((t.seen(0), t.seen(1)), (Seen::Taken, Seen::Nothing));
        writeln!(f, r#""}}}}"#).unwrap();
        t.poll();
        assert_eq!(
            t.seen(0),
            Seen::Taken,
            "an answer before it went in counts for nothing"
        );
        add(
            &p,
            r#"{"type":"attachment","attachment":{"type":"queued_command","prompt":"Session message m-1 from a"}}"#,
        );
        add(
            &p,
            r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"}]}}"#,
        );
        t.poll();
        assert_eq!(
            t.seen(0),
            Seen::Taken,
            "the client's own error text is no answer"
        );
        add(
            &p,
            r#"{"type":"assistant","message":{"model":"claude-opus-5-5"}}"#,
        );
        t.poll();
        assert_eq!((t.seen(0), t.seen(1)), (Seen::Consumed, Seen::Nothing));
        let all = seen_all(Some(&p), &["m-1".into(), "m-2".into()]);
        assert_eq!(all, vec![Seen::Consumed, Seen::Nothing]);
        assert_eq!(seen_all(None, &["m-1".into()]), vec![Seen::Nothing]);
    }

    #[test]
    fn a_wake_prompt_answered_by_a_failing_model_is_not_consumed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        add(
            &p,
            r#"{"type":"user","message":{"role":"user","content":"Session message m-9 from a"}}"#,
        );
        add(
            &p,
            r#"{"type":"assistant","message":{"model":"<synthetic>"}}"#,
        );
        assert_eq!(seen_all(Some(&p), &["m-9".into()]), vec![Seen::Taken]);
    }
}
