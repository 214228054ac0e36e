//! Waiting for a file to change. On Linux an inotify watch on the file (`IN_MODIFY`): a wait
//! returns as soon as the file is written, or at its timeout. Elsewhere, and whenever the watch
//! cannot be set up, a wait is a short sleep, so callers stay a bounded poll: they look at the
//! file after every wait, and an event is only ever a hint to look sooner.
//!
//! The watch is set up before the caller's first look, so a write that lands between a look
//! and the next wait is not missed: its event is already queued.

use std::path::Path;
use std::time::Duration;

/// The sleep of a wait without inotify.
pub const POLL: Duration = Duration::from_micros(200);

/// A watch on one file.
pub struct FileWatch {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fd: Option<rustix::fd::OwnedFd>,
}

impl FileWatch {
    /// Watches `path` (a file that exists; otherwise waits are sleeps).
    pub fn new(path: &Path) -> FileWatch {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use rustix::fs::inotify;
            let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
                .ok()
                .filter(|fd| inotify::add_watch(fd, path, inotify::WatchFlags::MODIFY).is_ok());
            FileWatch { fd }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = path;
            FileWatch {}
        }
    }

    /// True when waits are woken by writes (not sleeps).
    pub fn is_evented(&self) -> bool {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            self.fd.is_some()
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            false
        }
    }

    /// Waits until the file was written since the last wait, or `limit` passed (without a
    /// watch: [`POLL`] or `limit`, whichever is shorter). Events that came are consumed.
    pub fn wait(&self, limit: Duration) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(fd) = &self.fd {
            use rustix::event::{PollFd, PollFlags, Timespec, poll};
            let mut fds = [PollFd::new(fd, PollFlags::IN)];
            let timeout = Timespec {
                tv_sec: limit.as_secs() as i64,
                tv_nsec: i64::from(limit.subsec_nanos()),
            };
            if poll(&mut fds, Some(&timeout)).is_ok_and(|n| n > 0) {
                drain(fd);
            }
            return;
        }
        std::thread::sleep(limit.min(POLL));
    }
}

/// Reads every queued event (the descriptor is non-blocking): they only said "look again".
#[cfg(any(target_os = "linux", target_os = "android"))]
fn drain(fd: &rustix::fd::OwnedFd) {
    let mut buf = [0u8; 4096];
    while rustix::io::read(fd, &mut buf).is_ok_and(|n| n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Instant;

    #[test]
    fn a_write_ends_the_wait_and_no_write_waits_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, "").unwrap();
        let w = FileWatch::new(&p);
        if !w.is_evented() {
            return; // sleeps only: nothing to order
        }
        // A write before the wait is queued: the wait returns at once.
        writeln!(
            std::fs::OpenOptions::new().append(true).open(&p).unwrap(),
            "x"
        )
        .unwrap();
        let t = Instant::now();
        w.wait(Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(30));
        // Drained: with nothing written the wait runs to its limit.
        let t = Instant::now();
        w.wait(Duration::from_millis(30));
        assert!(t.elapsed() >= Duration::from_millis(30));
        // A write from another thread wakes a long wait.
        let q = p.clone();
        let writer = std::thread::spawn(move || {
            writeln!(
                std::fs::OpenOptions::new().append(true).open(&q).unwrap(),
                "y"
            )
            .unwrap();
        });
        let t = Instant::now();
        w.wait(Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(30));
        writer.join().unwrap();
    }

    #[test]
    fn a_missing_file_waits_by_sleeping() {
        let dir = tempfile::tempdir().unwrap();
        let w = FileWatch::new(&dir.path().join("none"));
        assert!(!w.is_evented());
        let t = Instant::now();
        w.wait(Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
