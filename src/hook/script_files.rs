//! The hook's side of [`crate::shell::files`]: the text of a script a command runs, read
//! from inside the repository only, bounded by size.

use crate::paths::lexical::{Place, place};
use crate::rules::{CommandContext, Env as Where};
use crate::shell::DirStep;
use crate::shell::files::{MAX_FILE_BYTES, Reader};
use std::io::Read;

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
    fn read(&self, path: &str, dirs: &[DirStep]) -> Option<String> {
        let abs = self
            .at
            .absolute(&self.at.base_of(dirs), path, self.at.rooted())?;
        if !matches!(place(self.at.root(), &abs), Place::Inside(rel) if !rel.is_empty()) {
            return None;
        }
        let file = std::fs::File::open(&abs).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        file.take(MAX_FILE_BYTES as u64 + 1)
            .read_to_string(&mut text)
            .ok()?;
        (text.len() <= MAX_FILE_BYTES).then_some(text)
    }
}
