//! The git commands leases run: fetch of the lease refs, reading them, and the compare-and-swap
//! push. Every remote operation is a real `git` process with git's own credentials and a time
//! limit, so a dead remote fails a claim instead of hanging it.

use super::{MIRROR_PREFIX, REMOTE_PREFIX};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long one remote operation may take.
pub const REMOTE_LIMIT: Duration = Duration::from_secs(20);

/// Why a git operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitError {
    /// The remote could not be reached (down, refused, no route, timed out).
    Unreachable(String),
    /// The compare-and-swap lost: the ref was not the value expected.
    Lost,
    /// The remote refused the ref itself (hooks, protected namespaces, custom refs denied).
    Refused(String),
    /// `leases.remote` is neither a remote of this clone nor a URL or path: (the name, the
    /// clone's remotes).
    NoSuchRemote(String, Vec<String>),
    /// Anything else, with git's words.
    Failed(String),
    /// Not git's: this clone's lease files (its id) are not usable; the words say which.
    Local(String),
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Unreachable(why) => write!(f, "the remote is unreachable: {why}"),
            GitError::Lost => write!(f, "another claim changed the lease first"),
            GitError::Refused(why) => write!(f, "the remote refused the lease ref: {why}"),
            GitError::NoSuchRemote(name, remotes) => write!(
                f,
                "'{name}' is not a remote of this clone (its remotes: {})",
                if remotes.is_empty() {
                    "none".to_string()
                } else {
                    remotes.join(", ")
                }
            ),
            GitError::Failed(why) => write!(f, "git failed: {why}"),
            GitError::Local(why) => write!(f, "{why}"),
        }
    }
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn git(root: &Path, args: &[&str], input: Option<&[u8]>, limit: Duration) -> Result<Out, GitError> {
    // Never a prompt: a claim runs inside a session with no terminal to answer (`git::command`).
    let mut child = crate::git::command(root)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| GitError::Failed(format!("cannot run git: {e}")))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = stdin.write_all(bytes);
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = String::new();
        let mut e = String::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_string(&mut o);
        }
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_string(&mut e);
        }
        (o, e)
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::Unreachable(format!(
                    "git {} gave no answer in {}s",
                    args.first().unwrap_or(&""),
                    limit.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(GitError::Failed(e.to_string())),
        }
    };
    let (stdout, stderr) = reader.join().unwrap_or_default();
    Ok(Out {
        ok: status.success(),
        stdout,
        stderr,
    })
}

/// Git's words for "could not talk to the remote", across transports.
fn unreachable(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    [
        "could not read from remote",
        "unable to connect",
        "connection refused",
        "could not resolve host",
        "unable to access",
        "no route to host",
        "network is unreachable",
        "connection timed out",
        "does not appear to be a git repository",
        "the remote end hung up unexpectedly",
    ]
    .iter()
    .any(|m| s.contains(m))
}

/// What git said went wrong: its first `fatal:` or `error:` line (git follows it with advice
/// such as "Please make sure you have the correct access rights and the repository exists.",
/// which says nothing of the cause), else its last line. A line that ends in a colon is
/// continued on the next (`fatal: unable to connect to 127.0.0.1:` is followed by the errno).
fn reason(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let Some(at) = lines
        .iter()
        .position(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| lines.len().checked_sub(1))
    else {
        return String::new();
    };
    match lines.get(at + 1) {
        Some(next) if lines[at].ends_with(':') => format!("{} {next}", lines[at]),
        _ => lines[at].to_string(),
    }
}

fn classify(out: &Out) -> GitError {
    if unreachable(&out.stderr) {
        GitError::Unreachable(reason(&out.stderr))
    } else {
        GitError::Failed(reason(&out.stderr))
    }
}

/// [`classify`] for a command given `remote`: a name git does not know (no URL, no path) is
/// said as such, with the clone's remotes, not as a server that cannot be reached.
fn classify_remote(root: &Path, remote: &str, out: &Out) -> GitError {
    let looks_like_name = !remote.contains(['/', ':', '\\']);
    let named = format!("'{remote}' does not appear to be a git repository");
    if looks_like_name && out.stderr.contains(&named) {
        let remotes = git(root, &["remote"], None, REMOTE_LIMIT)
            .map(|o| o.stdout.lines().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default();
        if !remotes.iter().any(|r| r == remote) {
            return GitError::NoSuchRemote(remote.to_string(), remotes);
        }
    }
    classify(out)
}

/// The remote's value of `refname` now (`None`: it does not exist).
fn remote_value(root: &Path, remote: &str, refname: &str) -> Result<Option<String>, GitError> {
    let out = git(root, &["ls-remote", remote, refname], None, REMOTE_LIMIT)?;
    if !out.ok {
        return Err(classify_remote(root, remote, &out));
    }
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(_, name)| *name == refname)
        .map(|(sha, _)| sha.to_string()))
}

/// Fetches the remote's lease refs into the mirror namespace (deleted ones are pruned).
pub fn fetch(root: &Path, remote: &str) -> Result<(), GitError> {
    let spec = format!("+{REMOTE_PREFIX}*:{MIRROR_PREFIX}*");
    let out = git(
        root,
        &["fetch", "--no-tags", "--prune", "--quiet", remote, &spec],
        None,
        REMOTE_LIMIT,
    )?;
    if out.ok {
        Ok(())
    } else {
        Err(classify_remote(root, remote, &out))
    }
}

/// The mirror refs: (object, stream).
pub fn mirror_refs(root: &Path) -> Result<Vec<(String, String)>, GitError> {
    let out = git(
        root,
        &[
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            MIRROR_PREFIX,
        ],
        None,
        REMOTE_LIMIT,
    )?;
    if !out.ok {
        return Err(classify(&out));
    }
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(sha, name)| {
            name.strip_prefix(MIRROR_PREFIX)
                .map(|s| (sha.to_string(), s.to_string()))
        })
        .collect())
}

/// The contents of blobs, in order (`None` for one that is missing or not a blob).
pub fn blobs(root: &Path, shas: &[String]) -> Result<Vec<Option<String>>, GitError> {
    if shas.is_empty() {
        return Ok(Vec::new());
    }
    let input: String = shas.iter().map(|s| format!("{s}\n")).collect();
    let out = git(
        root,
        &["cat-file", "--batch"],
        Some(input.as_bytes()),
        REMOTE_LIMIT,
    )?;
    let mut rest = out.stdout.as_str();
    let mut found = Vec::new();
    for _ in shas {
        let Some((header, after)) = rest.split_once('\n') else {
            found.push(None);
            continue;
        };
        let parts: Vec<&str> = header.split(' ').collect();
        match parts.as_slice() {
            [_, kind, size] => {
                let size: usize = size.parse().unwrap_or(0);
                let body = after.get(..size).unwrap_or("");
                found.push((*kind == "blob").then(|| body.to_string()));
                rest = after.get(size + 1..).unwrap_or("");
            }
            _ => {
                found.push(None);
                rest = after;
            }
        }
    }
    Ok(found)
}

/// Writes a blob into the local object store; its id.
pub fn hash_blob(root: &Path, bytes: &[u8]) -> Result<String, GitError> {
    let out = git(
        root,
        &["hash-object", "-w", "--stdin"],
        Some(bytes),
        REMOTE_LIMIT,
    )?;
    if !out.ok {
        return Err(classify(&out));
    }
    Ok(out.stdout.trim().to_string())
}

/// The compare-and-swap: sets `ref` on the remote to `new` only if it is `expected` now
/// (`None`: only if it does not exist).
pub fn push_cas(
    root: &Path,
    remote: &str,
    refname: &str,
    new: &str,
    expected: Option<&str>,
) -> Result<(), GitError> {
    let out = push_with_lease(root, remote, refname, &format!("{new}:{refname}"), expected)?;
    // Porcelain: one line per ref, `<flag>\t<from>:<to>\t<summary>`; `!` is a rejection.
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(refname))
        .unwrap_or("")
        .to_string();
    if out.ok && !line.starts_with('!') {
        return Ok(());
    }
    if line.starts_with('!') {
        if line.contains("stale info")
            || line.contains("fetch first")
            || line.contains("non-fast-forward")
        {
            return Err(GitError::Lost);
        }
        // Another push may have changed the ref between the remote's advertisement and its
        // update: the remote rejects ours then too ("atomic transaction failed", "cannot lock
        // ref"). The remote's order decides: a ref that is no longer what we expected was won
        // by someone else; one that still is was refused for its own sake.
        if remote_value(root, remote, refname)?.as_deref() != expected {
            return Err(GitError::Lost);
        }
        let summary = line.rsplit('\t').next().unwrap_or(&line).trim().to_string();
        let detail = reason(&out.stderr);
        return Err(GitError::Refused(
            format!("{summary} {detail}").trim().to_string(),
        ));
    }
    Err(classify_remote(root, remote, &out))
}

/// Deletes a ref on the remote if it is `expected` (the doctor's probe cleans up with it).
pub fn delete_cas(
    root: &Path,
    remote: &str,
    refname: &str,
    expected: &str,
) -> Result<(), GitError> {
    let out = push_with_lease(
        root,
        remote,
        refname,
        &format!(":{refname}"),
        Some(expected),
    )?;
    if out.ok {
        Ok(())
    } else {
        Err(classify_remote(root, remote, &out))
    }
}

/// `git push --atomic --force-with-lease=<ref>:<expected>` of one refspec.
fn push_with_lease(
    root: &Path,
    remote: &str,
    refname: &str,
    spec: &str,
    expected: Option<&str>,
) -> Result<Out, GitError> {
    let lease = format!("--force-with-lease={refname}:{}", expected.unwrap_or(""));
    git(
        root,
        &["push", "--porcelain", "--atomic", remote, &lease, spec],
        None,
        REMOTE_LIMIT,
    )
}

/// Points this clone's mirror ref of `stream` at `sha` (after a push that landed).
pub fn set_mirror_ref(root: &Path, stream: &str, sha: &str) -> Result<(), GitError> {
    let name = format!("{MIRROR_PREFIX}{stream}");
    let out = git(root, &["update-ref", &name, sha], None, REMOTE_LIMIT)?;
    if out.ok { Ok(()) } else { Err(classify(&out)) }
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn a_reason_is_git_s_first_fatal_line_continued_past_a_colon() {
        let refused = "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n";
        assert_eq!(
            reason(refused),
            "fatal: unable to connect to 127.0.0.1: 127.0.0.1[0: 127.0.0.1]: errno=Connection refused"
        );
        let advice = "fatal: 'orgin' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        assert_eq!(
            reason(advice),
            "fatal: 'orgin' does not appear to be a git repository"
        );
        assert_eq!(reason("one\n two \n"), "two");
        assert_eq!(reason(""), "");
    }
}
