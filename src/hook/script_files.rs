//! The hook's side of [`crate::shell::files`]: the text of a script a command runs, read
//! from inside the repository only, regular files only, bounded by size.

use crate::paths::lexical::{Place, place};
use crate::rules::{CommandContext, Env as Where};
use crate::shell::DirStep;
use crate::shell::files::{MAX_FILE_BYTES, Reader, Unread};

/// Reads files inside the repository, resolved from the payload's cwd and `cd` steps.
pub struct RepoFiles<'a> {
    at: Where<'a>,
}

impl<'a> RepoFiles<'a> {
    pub fn new(cmd: &'a CommandContext) -> RepoFiles<'a> {
        RepoFiles {
            at: Where::new(cmd),
        }
    }
}

impl Reader for RepoFiles<'_> {
    fn read(&self, path: &str, dirs: &[DirStep]) -> Result<String, Unread> {
        let abs = self
            .at
            .absolute(&self.at.base_of(dirs), path, self.at.rooted())
            .ok_or(Unread::Nothing)?;
        if !matches!(place(self.at.root(), &abs), Place::Inside(rel) if !rel.is_empty()) {
            // Not the repo's to read; but a FIFO or device anywhere still feeds unknown text.
            return Err(match std::fs::metadata(&abs) {
                Ok(m) if !m.is_file() && !m.is_dir() => Unread::NotRegular,
                _ => Unread::Nothing,
            });
        }
        // A FIFO would make the read wait for a writer the agent controls; a device or socket
        // gives text no one can know in advance. Neither is opened.
        crate::atomic::read_regular(&abs, MAX_FILE_BYTES as u64).map_err(|e| {
            if crate::atomic::is_not_regular(&e) {
                Unread::NotRegular
            } else {
                Unread::Nothing
            }
        })
    }
}
