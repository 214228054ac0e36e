//! A child's output read line by line on a thread, so a test can wait for the line that says
//! an event happened (a tool printing that it waits) instead of sleeping "long enough", and
//! still read the whole output once the child is done.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Seen {
    text: String,
    /// The stream ended: no more lines will come.
    ended: bool,
}

type Shared = Arc<(Mutex<Seen>, Condvar)>;

/// The lines of one output stream, as they arrive.
pub struct Lines {
    seen: Shared,
    reader: Option<JoinHandle<()>>,
}

impl Lines {
    /// Reads `stream` on a thread until it ends.
    pub fn read(stream: impl Read + Send + 'static) -> Lines {
        let seen: Shared = Arc::default();
        let reader = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let (lock, changed) = &*seen;
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut s = lock.lock().unwrap();
                    s.text.push_str(&line);
                    s.text.push('\n');
                    changed.notify_all();
                }
                lock.lock().unwrap().ended = true;
                changed.notify_all();
            })
        };
        Lines {
            seen,
            reader: Some(reader),
        }
    }

    /// The child's stderr (it must be piped), taken from it: its `Output` then has none.
    #[track_caller]
    pub fn stderr(child: &mut Child) -> Lines {
        Lines::read(child.stderr.take().expect("the child's stderr is piped"))
    }

    /// The first line `wanted` accepts, waiting at most `limit` for it; `None` when the time
    /// passed or the stream ended without one.
    pub fn wait_for(&self, limit: Duration, wanted: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + limit;
        let (lock, changed) = &*self.seen;
        let mut s = lock.lock().unwrap();
        loop {
            if let Some(line) = s.text.lines().find(|l| wanted(l)) {
                return Some(line.to_string());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if s.ended || left.is_zero() {
                return None;
            }
            s = changed.wait_timeout(s, left).unwrap().0;
        }
    }

    /// What has been read so far.
    pub fn text(&self) -> String {
        self.seen.0.lock().unwrap().text.clone()
    }

    /// All of it, once the stream has ended (the child, and anything it started, closed it).
    pub fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the output reader");
        }
        self.text()
    }
}
