//! The only place the suite takes OS file locks (std `File::lock`, released by the OS when the
//! holder dies). clippy.toml routes every other use here.
//!
//! The lock is `flock(2)` on Linux and macOS and `LockFileEx` on Windows: it belongs to the open
//! file, not to the process, so two opens of one file exclude each other even in one process
//! (POSIX `fcntl` locks would not; the test below holds every platform to that).
#![allow(clippy::disallowed_methods)]

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An exclusive lock on a file, held until dropped.
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

/// Lock files live in the state folders: opened as state writes are (no symbolic link
/// followed, `crate::atomic::open_for_write`), and created private to their owner whatever the
/// umask.
fn open(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, crate::private::FILE_MODE);
    crate::atomic::open_for_write(path, &mut options)
}

impl FileLock {
    /// Blocks until the lock is ours.
    pub fn exclusive(path: &Path) -> io::Result<FileLock> {
        let file = open(path)?;
        file.lock()?;
        Ok(FileLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Takes the lock if it is free now; `None` when someone else holds it.
    pub fn try_exclusive(path: &Path) -> io::Result<Option<FileLock>> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock {
                file,
                path: path.to_path_buf(),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Polls for the lock until `limit` passes; `None` when it stayed taken. Short limits keep
    /// the guard from ever hanging on a stuck holder.
    pub fn exclusive_within(path: &Path, limit: Duration) -> io::Result<Option<FileLock>> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(lock) = FileLock::try_exclusive(path)? {
                return Ok(Some(lock));
            }
            if start.elapsed() >= limit {
                return Ok(None);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(25));
        }
    }

    /// The locked file, to read or write what the lock guards (e.g. the build holder record).
    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the handle (dropping `file` next) releases the lock in any case, so an unlock
        // error is not worth reporting: wine answers a successful unlock with "Lock violation"
        // (os error 33).
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_taker_waits_then_gets_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let first = FileLock::exclusive(&p).unwrap();
        assert!(FileLock::try_exclusive(&p).unwrap().is_none());
        assert!(
            FileLock::exclusive_within(&p, Duration::from_millis(30))
                .unwrap()
                .is_none()
        );
        drop(first);
        assert!(FileLock::try_exclusive(&p).unwrap().is_some());
    }
}
