//! Durable files: atomic replace, create-if-absent, append-only JSON lines with torn-tail repair.
//!
//! Atomic replace writes a temp file in the same directory, syncs it, renames it over the target
//! and syncs the directory, so a reader sees the old file or the new one, never half of either.
//!
//! Every write here stays inside the suite's state folders: none goes through a symbolic link
//! planted there. The *state path* of a file is the folders from its state root down to it: the
//! repo's `session-lock/` (that folder included) or the per-user state home (`$SESSION_LOCK_HOME`,
//! below it; the platform's default is itself named `session-lock`). A link among those folders
//! is refused before anything is created, and a file is opened for writing without following a
//! link in its own name (`O_NOFOLLOW`; a replace renames over a link, which replaces the link,
//! never what it points to). The refusal names the link. Where the folders above the state root
//! lead is the user's business (a repo may live behind a link). The check looks at the folders
//! as they are; a link swapped in between the check and the write by someone racing it is not
//! caught: that needs write access to the state folder, which is already the user's own.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The mode of a file private to its owner: every file the suite writes for itself.
pub const FILE_MODE: u32 = 0o600;
/// The mode of a private folder.
pub const DIR_MODE: u32 = 0o700;

/// The variable naming the per-user state home (read here for the state path of its files, and
/// by `sessions::state_home`).
pub const STATE_HOME_VAR: &str = "SESSION_LOCK_HOME";

/// The repo's state folder name, which is also the last part of the default state home.
const STATE_DIR_NAME: &str = "session-lock";

/// Where the state path ending at `folder` (a state file's folder) starts, and whether that
/// start is part of it: the state home when `folder` is in it (the home itself is the user's
/// choice), else the nearest folder at or above `folder` named `session-lock` (itself
/// included). `None`: not a state folder.
fn state_root(folder: &Path) -> Option<(PathBuf, bool)> {
    if let Some(home) = std::env::var_os(STATE_HOME_VAR).filter(|v| !v.is_empty()) {
        let home = PathBuf::from(home);
        if folder.starts_with(&home) {
            return Some((home, false));
        }
    }
    folder
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == STATE_DIR_NAME))
        .map(|a| (a.to_path_buf(), true))
}

/// The refusal of a write to `path` because `link` is a symbolic link.
fn through_link(path: &Path, link: &Path) -> io::Error {
    let what = if link == path {
        "it is a symbolic link".to_string()
    } else {
        format!("{} is a symbolic link", link.display())
    };
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refusing to write {}: {what}, and the suite never writes its state through one (a link planted there sends the write elsewhere); remove the link",
            path.display()
        ),
    )
}

/// Refuses a write to `path` (a file, or with `dir` a folder to create) when a folder of its
/// state path is a symbolic link. Folders not made yet end the check: nothing below them can
/// be a link.
pub(crate) fn check_state_path(path: &Path, dir: bool) -> io::Result<()> {
    let last = if dir { path } else { parent_of(path) };
    let Some((root, inclusive)) = state_root(last) else {
        return Ok(());
    };
    let Ok(below) = last.strip_prefix(&root) else {
        return Ok(());
    };
    let mut at = root.clone();
    let mut steps: Vec<PathBuf> = Vec::new();
    if inclusive {
        steps.push(at.clone());
    }
    for part in below.components() {
        at.push(part);
        steps.push(at.clone());
    }
    for folder in steps {
        match fs::symlink_metadata(&folder) {
            Ok(m) if m.file_type().is_symlink() => return Err(through_link(path, &folder)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates the state folder `dir` and its parents, refusing a symbolic link among the folders of
/// its state path (what `fs::create_dir_all` would follow).
pub fn create_dirs(dir: impl AsRef<Path>) -> io::Result<()> {
    let dir = dir.as_ref();
    check_state_path(dir, true)?;
    fs::create_dir_all(dir)
}

/// Opens a state file for writing (`options` say how) without following a link in its own name
/// or in the folders of its state path; a link is refused, naming it.
pub fn open_for_write(path: &Path, options: &mut OpenOptions) -> io::Result<fs::File> {
    check_state_path(path, false)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    #[cfg(not(unix))]
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(through_link(path, path));
    }
    options.open(path).map_err(|e| {
        let link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if link { through_link(path, path) } else { e }
    })
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Syncs a directory so a rename or create inside it survives a crash. A no-op where the
/// platform cannot open directories (Windows).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
    }
    Ok(())
}

/// An I/O error while writing `path`, naming `path` (not the temp file beside it) and the
/// OS's reason: `cannot write session-lock/ui.done: Read-only file system (os error 30)`.
pub fn write_error(path: &Path, e: io::Error) -> io::Error {
    // tempfile's errors end with ` at path "<the temp file>"`: that path means nothing to a
    // reader, who never asked for it.
    let text = e.to_string();
    let reason = match text.find(" at path \"") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    io::Error::new(
        e.kind(),
        format!("cannot write {}: {reason}", path.display()),
    )
}

/// The mode a replaced file gets.
enum Mode {
    /// Private to the owner (tempfile's default).
    Private,
    /// What `open(…, 0666)` gives under the umask.
    UmaskDefault,
    /// The replaced file's own mode.
    Keep(fs::Permissions),
}

fn temp_with(path: &Path, bytes: &[u8], mode: &Mode) -> io::Result<tempfile::NamedTempFile> {
    check_state_path(path, false)?;
    let dir = parent_of(path);
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tmp-").suffix(".part");
    #[cfg(unix)]
    if let Mode::UmaskDefault = mode {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    if let Mode::Keep(perms) = mode {
        // Set after the create, so the umask does not narrow it.
        tmp.as_file().set_permissions(perms.clone())?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// Replaces `path` with `bytes` atomically and durably. The new file is private to its owner
/// (the suite's own state files).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, &Mode::Private)
}

/// [`write_atomic`] for a file people own (`.gitignore`, `.claude/settings.json`): an existing
/// file keeps its mode; a new one gets the umask's default, as editors and git create files.
pub fn write_atomic_shared(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mode = match fs::metadata(path) {
        Ok(m) => Mode::Keep(m.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Mode::UmaskDefault,
        Err(e) => return Err(write_error(path, e)),
    };
    replace(path, bytes, &mode)
}

fn replace(path: &Path, bytes: &[u8], mode: &Mode) -> io::Result<()> {
    let tmp = temp_with(path, bytes, mode).map_err(|e| write_error(path, e))?;
    tmp.persist(path).map_err(|e| write_error(path, e.error))?;
    sync_dir(parent_of(path)).map_err(|e| write_error(path, e))
}

/// Replaces a derived cache file atomically but without syncing: readers see the old file or the
/// new one; after a crash the cache may be old or empty, which its readers detect and rebuild.
pub fn replace_cache(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_state_path(path, false)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".part")
        .tempfile_in(parent_of(path))?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map(|_| ()).map_err(|e| e.error)
}

/// Creates `path` with `bytes` only if it does not exist yet; the content appears whole or not
/// at all. Returns `false` (and changes nothing) when the file already exists.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let tmp = temp_with(path, bytes, &Mode::Private).map_err(|e| write_error(path, e))?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            sync_dir(parent_of(path)).map_err(|e| write_error(path, e))?;
            Ok(true)
        }
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(write_error(path, e.error)),
    }
}

/// Appends one line (a `\n` is added) to an append-only ledger; with `sync`, the data is on disk
/// when this returns. A new ledger is private to its owner, whatever the umask. Callers serialize appends with a file lock when several writers exist.
pub fn append_line(path: &Path, line: &str, sync: bool) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    let mut file = open_for_write(path, &mut options)?;
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    file.write_all(&buf)?;
    if sync {
        file.sync_data()?;
    }
    Ok(())
}

/// What reading a JSON-lines ledger found (each line as a `T`, a JSON value by default).
#[derive(Debug)]
pub struct Lines<T = serde_json::Value> {
    /// Every complete line that parsed, in order.
    pub records: Vec<T>,
    /// Complete lines that did not parse (1-based line numbers), kept out of `records`.
    pub bad_lines: Vec<usize>,
    /// A last line without its newline was found (a torn append) and left out.
    pub torn_tail: bool,
}

/// Reads a JSON-lines ledger. A missing file is empty. A torn last line (no trailing newline) is
/// left out; with `repair`, the file is also truncated back to its last complete line (callers
/// hold the ledger's lock when they repair).
pub fn read_lines(path: &Path, repair: bool) -> io::Result<Lines> {
    read_lines_as(path, repair)
}

impl<T> Default for Lines<T> {
    fn default() -> Self {
        Lines {
            records: Vec::new(),
            bad_lines: Vec::new(),
            torn_tail: false,
        }
    }
}

/// [`read_lines`] with each line read straight into a `T` (no JSON value built first); a line
/// that is not a `T` counts as bad.
pub fn read_lines_as<T: serde::de::DeserializeOwned>(
    path: &Path,
    repair: bool,
) -> io::Result<Lines<T>> {
    let opened = if repair {
        open_for_write(path, OpenOptions::new().read(true).write(true))
    } else {
        open_regular(path)
    };
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lines::default()),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(not_regular(path));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let mut out = Lines::default();
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    if complete < bytes.len() {
        out.torn_tail = true;
        if repair {
            file.set_len(complete as u64)?;
            file.seek(SeekFrom::End(0))?;
            file.sync_data()?;
        }
    }
    for (n, line) in complete_lines(&bytes[..complete]) {
        match serde_json::from_slice::<T>(line) {
            Ok(v) => out.records.push(v),
            Err(_) => out.bad_lines.push(n),
        }
    }
    Ok(out)
}

/// The lines of a ledger's text up to its last newline, numbered from 1, blank ones left out
/// (what [`read_lines_as`] parses; for readers that look at each line without keeping it).
pub fn complete_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes[..complete]
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
}

/// Rewrites a ledger with `records` (compaction): a new file renamed over the old one.
pub fn rewrite_lines(path: &Path, records: &[serde_json::Value]) -> io::Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// Reads a small file whole, as text, into `buf` (a scratch buffer, only ever grown, so reading
/// many files zeroes its room once): one open, reads to the end, one close. For many small
/// files read in a row (a folder of locks): `fs::read_to_string` asks for each file's size
/// first, one system call more per file.
pub fn read_text_into<'a>(path: &Path, buf: &'a mut Vec<u8>) -> io::Result<&'a str> {
    const CHUNK: usize = 4096;
    let mut file = open_regular(path)?;
    let mut len = 0;
    loop {
        if buf.len() < len + CHUNK / 4 {
            buf.resize(len + CHUNK, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // The error `read_to_string` gives for the same bytes.
    std::str::from_utf8(&buf[..len]).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Largest file [`read_regular`] callers without a bound of their own read ([`read_optional`]).
pub const MAX_READ: u64 = 64 << 20;

/// The error for a path that is there but not a regular file.
fn not_regular(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is not a regular file (a FIFO, device or socket is never read)",
            path.display()
        ),
    )
}

/// True for the error [`open_regular`] gives a FIFO, a device or a socket.
pub fn is_not_regular(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidInput && e.to_string().contains("is not a regular file")
}

/// Opens `path` for reading only when it is a regular file (links followed). A FIFO, a device
/// or a socket is refused before any open (opening a FIFO waits for a writer; a device may act
/// when opened), and again on the open file, which is opened non-blocking so that one swapped in
/// between cannot make the open wait. Every file the suite reads for a decision comes through
/// here: input an agent can shape never makes a reader wait.
pub fn open_regular(path: &Path) -> io::Result<fs::File> {
    if !fs::metadata(path)?.is_file() {
        return Err(not_regular(path));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32,
    );
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular(path));
    }
    Ok(file)
}

/// A regular file's text, at most `max` bytes (a longer one is an error naming the file).
pub fn read_regular(path: impl AsRef<Path>, max: u64) -> io::Result<String> {
    let path = path.as_ref();
    let mut text = String::new();
    open_regular(path)?
        .take(max + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is over {max} bytes", path.display()),
        ));
    }
    Ok(text)
}

/// Reads a whole small regular file to a string (at most [`MAX_READ`]), `None` when it does not
/// exist.
pub fn read_optional(path: &Path) -> io::Result<Option<String>> {
    match read_regular(path, MAX_READ) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_read_into_a_kept_buffer_is_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let (small, big, bad) = (
            dir.path().join("s"),
            dir.path().join("b"),
            dir.path().join("x"),
        );
        let long = "é".repeat(10_000);
        fs::write(&small, "one").unwrap();
        fs::write(&big, &long).unwrap();
        fs::write(&bad, b"\xff").unwrap();
        let mut buf = Vec::new();
        assert_eq!(read_text_into(&big, &mut buf).unwrap(), long);
        assert_eq!(read_text_into(&small, &mut buf).unwrap(), "one");
        let err = read_text_into(&bad, &mut buf).unwrap_err();
        assert_eq!(
            err.to_string(),
            fs::read_to_string(&bad).unwrap_err().to_string()
        );
        let gone = read_text_into(&dir.path().join("none"), &mut buf).unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn write_atomic_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "second");
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temp files left behind");
    }

    #[cfg(unix)]
    #[test]
    fn shared_files_keep_their_mode_and_new_ones_follow_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".gitignore");
        fs::write(&p, "a\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o664)).unwrap();
        write_atomic_shared(&p, b"b\n").unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o664
        );
        let fresh = dir.path().join("new.md");
        write_atomic_shared(&fresh, b"x").unwrap();
        // What a plain create gives under the same umask.
        let plain = dir.path().join("plain.md");
        fs::write(&plain, "x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&fresh), mode(&plain));
    }

    #[test]
    fn write_errors_name_the_target_not_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // A parent that is a file fails the temp file's create, whoever runs the test.
        let blocker = dir.path().join("session-lock");
        fs::write(&blocker, "not a folder").unwrap();
        let target = blocker.join("ui.done");
        let e = write_atomic(&target, b"x").unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("cannot write {}: ", target.display())),
            "{e}"
        );
        assert!(!e.contains(".tmp-"), "{e}");
        let e = create_new(&target, b"x").unwrap_err().to_string();
        assert!(e.contains("ui.done") && !e.contains(".tmp-"), "{e}");
    }

    #[test]
    fn create_new_never_clobbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        assert!(create_new(&p, b"one").unwrap());
        assert!(!create_new(&p, b"two").unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "one");
    }

    #[test]
    fn torn_tail_is_left_out_and_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.jsonl");
        append_line(&p, &json!({"op":"queued","id":1}).to_string(), true).unwrap();
        append_line(&p, "not json", false).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"op\":\"deliv")
            .unwrap();
        let seen = read_lines(&p, false).unwrap();
        assert_eq!(seen.records.len(), 1);
        assert_eq!(seen.bad_lines, vec![2]);
        assert!(seen.torn_tail);
        let repaired = read_lines(&p, true).unwrap();
        assert!(repaired.torn_tail);
        assert!(!read_lines(&p, false).unwrap().torn_tail);
        append_line(&p, &json!({"op":"delivered","id":1}).to_string(), true).unwrap();
        assert_eq!(read_lines(&p, false).unwrap().records.len(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn state_writes_refuse_links_below_the_state_root_and_keep_those_above() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        // The repo behind a link is the user's business.
        let real = dir.path().join("real-repo");
        fs::create_dir_all(real.join("session-lock")).unwrap();
        symlink(&real, dir.path().join("repo")).unwrap();
        let sl = dir.path().join("repo/session-lock");
        write_atomic(&sl.join("a.lock"), b"x").unwrap();
        append_line(&sl.join("blocks.jsonl"), "{}", false).unwrap();
        create_dirs(sl.join("history/1")).unwrap();
        // A folder link in the state path, and a link in the file's own name.
        symlink(&outside, sl.join(".index")).unwrap();
        symlink(outside.join("log"), sl.join("log.jsonl")).unwrap();
        let refused = |e: io::Error, link: &str| {
            let text = e.to_string();
            assert!(
                text.starts_with("cannot write ") || text.starts_with("refusing to write "),
                "{text}"
            );
            assert!(
                text.contains(link) && text.contains("symbolic link"),
                "{text}"
            );
        };
        refused(
            write_atomic(&sl.join(".index/round.json"), b"x").unwrap_err(),
            ".index",
        );
        refused(
            replace_cache(&sl.join(".index/round.json"), b"x").unwrap_err(),
            ".index",
        );
        refused(
            create_new(&sl.join(".index/n"), b"x").unwrap_err(),
            ".index",
        );
        refused(create_dirs(sl.join(".index/deeper")).unwrap_err(), ".index");
        refused(
            append_line(&sl.join("log.jsonl"), "{}", true).unwrap_err(),
            "log.jsonl",
        );
        refused(
            read_lines(&sl.join("log.jsonl"), true).unwrap_err(),
            "log.jsonl",
        );
        assert!(
            read_lines(&sl.join("log.jsonl"), false).is_ok(),
            "reading is not writing"
        );
        // The state folder itself is part of its state path.
        let other = dir.path().join("other");
        fs::create_dir_all(&other).unwrap();
        symlink(&outside, other.join("session-lock")).unwrap();
        refused(
            write_atomic(&other.join("session-lock/a.lock"), b"x").unwrap_err(),
            "session-lock",
        );
        assert_eq!(
            fs::read_dir(&outside).unwrap().count(),
            0,
            "nothing went through"
        );
    }

    #[test]
    fn missing_ledger_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let seen = read_lines(&dir.path().join("none.jsonl"), true).unwrap();
        assert!(seen.records.is_empty() && !seen.torn_tail);
    }
}
