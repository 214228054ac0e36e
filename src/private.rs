//! What is private to the user: the per-user state home (ledgers, registries, locks, runs) and
//! the bus's runtime folder. Folders are made 0700 and files 0600 whatever the umask; a folder
//! a secret goes into (a socket clients hand their token to) is checked first: a folder, not a
//! link, owned by this user, that nobody else may write in (so nobody else can put a socket of
//! theirs, or a link, where clients look).
//!
//! Files the suite creates for itself are private already: the atomic replaces and appends and
//! the lock files are made `FILE_MODE` where they are written (the state-write module, which
//! owns the modes). The folders are made here.

use std::io;
use std::path::Path;

pub use crate::atomic::{DIR_MODE, FILE_MODE};

/// Creates `dir` and its missing parents, each 0700 (the umask only takes bits away, and 0700
/// has none it takes), and narrows `dir` itself to 0700 when it is wider (a folder an earlier
/// build made under a 022 umask), so what is already in it is private from now on. A symbolic
/// link among the folders of its state path is refused, as every state write refuses it.
pub fn create_dirs(dir: &Path) -> io::Result<()> {
    crate::atomic::check_state_path(dir, true)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)?;
        let meta = std::fs::metadata(dir)?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// Why a folder is not private.
#[derive(Debug)]
pub enum NotPrivate {
    /// It is a symbolic link (it may lead anywhere).
    Link,
    /// Not a folder.
    NotADir,
    /// Another user owns it.
    Owner {
        uid: u32,
        me: u32,
    },
    /// Others may write in it.
    Mode(u32),
    Io(io::Error),
}

impl std::fmt::Display for NotPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotPrivate::Link => write!(f, "it is a symbolic link"),
            NotPrivate::NotADir => write!(f, "it is not a folder"),
            NotPrivate::Owner { uid, me } => {
                write!(f, "it is owned by uid {uid}, not by this user (uid {me})")
            }
            NotPrivate::Mode(m) => {
                write!(f, "its mode is {m:04o}: other users may write in it")
            }
            NotPrivate::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Checks that `dir` is a folder (not a link) that this user owns and nobody else may write in.
pub fn check_dir(dir: &Path) -> Result<(), NotPrivate> {
    let meta = std::fs::symlink_metadata(dir).map_err(NotPrivate::Io)?;
    if meta.file_type().is_symlink() {
        return Err(NotPrivate::Link);
    }
    if !meta.is_dir() {
        return Err(NotPrivate::NotADir);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(NotPrivate::Owner {
                uid: meta.uid(),
                me,
            });
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(NotPrivate::Mode(mode));
        }
    }
    Ok(())
}

/// A folder a secret goes into: created private when missing (its parents too), then checked.
/// One that exists already is used only if it passes [`check_dir`]: a folder someone else made,
/// or opened up, is never taken over or narrowed.
pub fn secret_dir(dir: &Path) -> io::Result<()> {
    let fail = |why: NotPrivate| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not private to this user: {why}", dir.display()),
        )
    };
    match std::fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                create_dirs(parent)?;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
                    Ok(()) => {}
                    // Made by someone else meanwhile: the check below decides.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            #[cfg(not(unix))]
            std::fs::create_dir_all(dir)?;
        }
        Err(e) => return Err(e),
    }
    check_dir(dir).map_err(fail)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn folders_are_0700_and_a_wider_one_is_narrowed() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b/c");
        create_dirs(&deep).unwrap();
        for p in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&t.path().join(p)), 0o700, "{p}");
        }
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dirs(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
    }

    #[test]
    fn a_secret_folder_must_be_ours_and_closed() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("run/bus");
        secret_dir(&d).unwrap();
        assert_eq!(mode(&d), 0o700);
        secret_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = secret_dir(&d).unwrap_err().to_string();
        assert!(e.contains("0777") && e.contains("not private"), "{e}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        secret_dir(&d).unwrap(); // others may look, not write: nobody can plant a socket
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            mode(&d),
            0o777,
            "never narrowed: it may not be ours to trust"
        );
        let link = t.path().join("link");
        std::os::unix::fs::symlink(t.path(), &link).unwrap();
        let e = secret_dir(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
