//! The kernel write floor (`guard floor`) with real processes: every trick of the research's
//! table leaves another stream's files, the protocol and the planted-code paths untouched, and
//! ordinary work keeps working; then the wrapper the hook writes, through a shell that runs it
//! the way the client's Bash tool does.
//!
//! The bubblewrap tests need `bwrap` (scripts/setup and .ci/run install it); without it they
//! skip with the reason, except under CI, where they fail.

use crate::support::claude::in_ci;
use crate::support::e2e::wait_until;
use crate::support::repo::GitRepo;
use session_lock::floor::set::{self, Inputs};
use session_lock::floor::{DeniedSet, Owner, mechanism};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const API: &str = "export const api = 1;\n// uncommitted change\n";

/// Skips (or under CI fails) when this machine has no bubblewrap floor.
macro_rules! require_bwrap {
    () => {
        match mechanism::available(None) {
            Ok(mechanism::Kind::Bubblewrap) => {}
            other => {
                let why = format!("no bubblewrap floor here ({other:?}); install bubblewrap");
                if in_ci() {
                    panic!("{why}: CI needs it (scripts/setup and .ci/run install it)");
                }
                eprintln!("skipped: {why}");
                return;
            }
        }
    };
}

/// A repo where another stream owns `src/api/**` and the caller owns `src/web/**`, with its
/// denied set as the hook computes it, and a scratch folder, a home and a state folder.
struct Bed {
    repo: GitRepo,
    set: DeniedSet,
    scratch: tempfile::TempDir,
}

impl Bed {
    fn new() -> Bed {
        let repo = GitRepo::with_files(&[
            ("src/api/index.ts", "export const api = 1;\n"),
            ("src/web/app.ts", "export const web = 1;\n"),
            ("README.md", "readme\n"),
            (
                "package.json",
                "{\"name\": \"floor-bed\", \"version\": \"1.0.0\"}\n",
            ),
            ("session-lock/config.json", "{}\n"),
        ]);
        repo.write("src/api/index.ts", API);
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(scratch.path().join("home")).unwrap();
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut rules = vec![set::Rule {
            owner: Owner::Stream("api".into()),
            patterns: v(&["src/api/**"]),
            keep: Vec::new(),
        }];
        rules.extend(set::protocol_rules(
            &v(&["session-lock/**"]),
            &v(&["dist"]),
            &[],
        ));
        let set = set::compute(&Inputs {
            root: repo.path().to_path_buf(),
            rules,
            fixed: Vec::new(),
            case_insensitive: false,
        });
        Bed { repo, set, scratch }
    }

    fn tmp(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }

    fn home(&self) -> PathBuf {
        self.scratch.path().join("home")
    }

    /// `guard floor` running `command` from the repo root, as the wrapper would.
    fn floor(&self, command: &str, mechanism: &str) -> Output {
        let mut args = vec![
            "floor".to_string(),
            "--root".into(),
            self.repo.path().display().to_string(),
            "--state".into(),
            self.tmp().join("state").display().to_string(),
        ];
        args.extend(self.set.to_args());
        args.push("--".into());
        args.push(command.into());
        Command::new(env!("CARGO_BIN_EXE_guard"))
            .args(&args)
            .current_dir(self.repo.path())
            .env("HOME", self.home())
            .env("SESSION_LOCK_HOME", self.tmp().join("sl-home"))
            .env("T", self.tmp())
            .env(mechanism::CHOOSE_VAR, mechanism)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn api(&self) -> String {
        self.repo.read("src/api/index.ts").unwrap_or_default()
    }
}

fn text(o: &Output) -> String {
    format!(
        "rc {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn every_trick_of_the_table_is_stopped_by_bubblewrap() {
    require_bwrap!();
    let bed = Bed::new();
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode()
    };
    let api_mode = mode(&bed.repo.join("src/api/index.ts"));
    let tricks: &[(&str, &str)] = &[
        ("append", "echo pwn >> src/api/index.ts"),
        (
            "python with a computed name",
            "python3 -c \"import os; p=os.path.join('src','a'+'pi','index.ts'); open(p,'a').write('pwn')\" \
             || perl -e 'open(F, \">>\", \"src/\" . \"a\" . \"pi/index.ts\") or die; print F \"pwn\"'",
        ),
        (
            "script written then run",
            "printf 'echo pwn >> src/a%si/index.ts\\n' p > \"$T/x.sh\"; sh \"$T/x.sh\"",
        ),
        (
            "base64 path",
            "echo pwn >> \"$(echo c3JjL2FwaS9pbmRleC50cw== | base64 -d)\"",
        ),
        ("truncate", ": > src/api/index.ts"),
        ("new file in the denied folder", "touch src/api/new.ts"),
        ("rm", "rm -f src/api/index.ts"),
        ("mv out", "mv src/api/index.ts \"$T/moved.ts\""),
        (
            "mv over",
            "echo pwn > \"$T/o\"; mv -f \"$T/o\" src/api/index.ts",
        ),
        ("sed -i", "sed -i s/export/pwn/ src/api/index.ts"),
        (
            "cp over",
            "echo pwn > \"$T/c\"; cp \"$T/c\" src/api/index.ts",
        ),
        (
            "hard link",
            "ln src/api/index.ts \"$T/hl\" && echo pwn >> \"$T/hl\"",
        ),
        (
            "symlink",
            "ln -sf \"$PWD/src/api/index.ts\" \"$T/sl\" && echo pwn >> \"$T/sl\"",
        ),
        ("git checkout --", "git checkout -- src/api/index.ts"),
        ("git rm", "git rm -qf src/api/index.ts"),
        ("chmod", "chmod 000 src/api/index.ts"),
        ("touch -d", "touch -d 2001-01-01 src/api/index.ts"),
        ("umount", "umount src/api"),
        (
            "nested user namespace",
            "unshare -Urm sh -c 'umount src/api; echo pwn >> src/api/index.ts'",
        ),
        (
            "the protocol",
            "echo '{\"x\":1}' > session-lock/config.json",
        ),
        ("a new lock", "echo '{}' > session-lock/api.lock"),
        ("a git hook", "echo 'echo pwn' > .git/hooks/pre-commit"),
        ("git config", "git config core.hooksPath \"$T\""),
    ];
    for (name, trick) in tricks {
        let out = bed.floor(trick, "bubblewrap");
        assert_eq!(bed.api(), API, "{name}: {trick}\n{}", text(&out));
        assert!(!bed.repo.exists("src/api/new.ts"), "{name}");
        assert_eq!(mode(&bed.repo.join("src/api/index.ts")), api_mode, "{name}");
        assert_eq!(
            bed.repo.read("session-lock/config.json").unwrap(),
            "{}\n",
            "{name}"
        );
        assert!(!bed.repo.exists("session-lock/api.lock"), "{name}");
        assert!(!bed.repo.exists(".git/hooks/pre-commit"), "{name}");
        let config = bed.repo.read(".git/config").unwrap();
        assert!(!config.contains("hooksPath"), "{name}: {config}");
    }
    // Detached children inherit the floor: each says when it has tried.
    for (name, trick) in [
        (
            "double fork",
            "( (sleep 0.2; echo pwn >> src/api/index.ts; touch \"$T/double.done\") & ) >/dev/null 2>&1",
        ),
        (
            "setsid",
            "setsid sh -c 'sleep 0.2; echo pwn >> src/api/index.ts; touch \"$T/setsid.done\"' >/dev/null 2>&1 &",
        ),
    ] {
        let out = bed.floor(trick, "bubblewrap");
        assert!(out.status.success(), "{name}: {}", text(&out));
        let marker = bed
            .tmp()
            .join(format!("{}.done", name.split(' ').next().unwrap()));
        assert!(
            wait_until(Duration::from_secs(10), || marker.exists()),
            "{name}: the child never finished"
        );
        assert_eq!(bed.api(), API, "{name}");
    }
}

#[test]
fn ordinary_work_keeps_working_under_bubblewrap() {
    require_bwrap!();
    let bed = Bed::new();
    let work: &[(&str, &str)] = &[
        ("own file", "echo ok >> src/web/app.ts"),
        (
            "new file in the repo root",
            "echo n > NOTES.md && mkdir build && touch build/x",
        ),
        (
            "new file in a shared ancestor",
            "echo n > src/new.ts && mkdir src/lib",
        ),
        (
            "atomic save of a root file",
            "printf 'new readme\\n' > .README.md.tmp && mv .README.md.tmp README.md",
        ),
        (
            "git add and commit of own files",
            "git add src/web/app.ts src/new.ts && git -c user.name=t -c user.email=t@example.invalid commit -qm own",
        ),
        (
            "git checkout -- of a root file",
            "echo dirty >> package.json && git checkout -- package.json && ! grep -q dirty package.json",
        ),
        (
            "the cache folder",
            "mkdir -p ~/.cache/tool && echo c > ~/.cache/tool/x && cat ~/.cache/tool/x",
        ),
        (
            "/tmp and mktemp",
            "f=$(mktemp) && echo t > \"$f\" && cat \"$f\" && rm \"$f\" && d=$(mktemp -d) && rmdir \"$d\"",
        ),
        (
            "npm install writing package-lock.json",
            "npm install --offline --no-audit --no-fund --loglevel=error && test -s package-lock.json",
        ),
    ];
    for (name, cmd) in work {
        let out = bed.floor(cmd, "bubblewrap");
        assert!(out.status.success(), "{name}: {cmd}\n{}", text(&out));
    }
    assert!(bed.repo.read("src/web/app.ts").unwrap().ends_with("ok\n"));
    assert_eq!(bed.repo.read("README.md").unwrap(), "new readme\n");
    let log = bed.repo.git(&["log", "--format=%s", "-1"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "own");
    assert!(bed.repo.exists("package-lock.json"));
    // A background job started by one command and killed by a later one.
    let pid_file = bed.tmp().join("job.pid");
    let out = bed.floor(
        "sleep 300 >/dev/null 2>&1 & echo $! > \"$T/job.pid\"",
        "bubblewrap",
    );
    assert!(out.status.success(), "{}", text(&out));
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "the job runs");
    let out = bed.floor("kill \"$(cat \"$T/job.pid\")\"", "bubblewrap");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map_or(true, |s| s.contains(") Z "))
        }),
        "the later command killed the job"
    );
}

#[test]
fn the_wrapper_keeps_the_session_s_shell_and_names_the_owner_on_failure() {
    require_bwrap!();
    let bed = Bed::new();
    let guard = Path::new(env!("CARGO_BIN_EXE_guard"));
    // The client's Bash tool: the snapshot's aliases and functions, then eval, then `pwd -P`.
    let run = |command: &str, stdin: &str| -> (Output, String) {
        let wrapped = session_lock::floor::run::wrapper(guard, bed.repo.path(), &bed.set, command);
        let cwd_file = bed.tmp().join("client-cwd");
        let outer = format!(
            "alias hi='echo ALIAS-OK'; greet() {{ echo \"FN-OK $1\"; }}; eval {} && pwd -P >| {}",
            session_lock::shell::word::quote_posix(&wrapped),
            session_lock::shell::word::quote_posix(&cwd_file.to_string_lossy()),
        );
        let _ = std::fs::remove_file(&cwd_file);
        let mut child = Command::new("/bin/bash")
            .args(["-c", &outer])
            .current_dir(bed.repo.path())
            .env("HOME", bed.home())
            .env("SESSION_LOCK_HOME", bed.tmp().join("sl-home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (out, std::fs::read_to_string(&cwd_file).unwrap_or_default())
    };
    let (out, cwd) = run(
        "shopt -s expand_aliases; hi; greet there; echo \"$0\"; read -r l; echo \"in:$l\"; echo 'it'\"'\"'s'; cd src/web",
        "a line\n",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ALIAS-OK\nFN-OK there\nbash\nin:a line\nit's\n"
    );
    assert_eq!(
        cwd.trim_end(),
        bed.repo.join("src/web").display().to_string(),
        "cd carries over"
    );
    let (out, _) = run("exit 3", "");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let (out, _) = run("echo pwn >> src/api/index.ts", "");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Read-only file system"), "{err}");
    assert!(
        err.contains("src/api (owned by stream 'api')")
            && err
                .lines()
                .filter(|l| l.starts_with("session-lock:"))
                .count()
                == 1,
        "{err}"
    );
    assert_eq!(bed.api(), API);
    // A command that succeeds hears nothing from the floor, and leaves no state behind.
    let (out, _) = run("true", "");
    assert!(out.stderr.is_empty(), "{}", text(&out));
    let base = std::env::temp_dir().join(format!(
        "session-lock-floor-{}",
        rustix::process::geteuid().as_raw()
    ));
    let left: Vec<_> = std::fs::read_dir(&base)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.iter().all(|p| !p.ends_with("cwd")),
        "state folders are removed: {left:?}"
    );
}

#[test]
fn landlock_denies_what_it_can_without_breaking_ordinary_work() {
    if let Err(why) = mechanism::landlock_abi() {
        // The kernel decides, not an install step: said, not failed, under CI too.
        eprintln!("skipped: {why}");
        return;
    }
    // Landlock denies only paths outside the repo, temp folders and home (their ancestors
    // would refuse new entries): the build folder's scratch space, when it is such a place.
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let outside = tempfile::tempdir_in(&base).unwrap();
    let protected = outside.path().join("state");
    std::fs::create_dir_all(&protected).unwrap();
    std::fs::write(protected.join("f"), "orig\n").unwrap();
    let bed = Bed::new();
    let d = session_lock::floor::Denied {
        path: protected.canonicalize().unwrap(),
        owner: Owner::Protocol,
    };
    let (kept, _) = mechanism::landlock_keeps(std::slice::from_ref(&d), Some(bed.repo.path()));
    if kept.is_empty() {
        eprintln!(
            "skipped: the build folder {} lies in a temp or home folder, where the Landlock floor denies nothing by design",
            base.display()
        );
        return;
    }
    let mut bed = bed;
    bed.set.denied.push(d);
    for trick in [
        format!("echo pwn >> {}/f", protected.display()),
        format!("rm -f {}/f", protected.display()),
        format!("mv {0}/f {0}/g", protected.display()),
        format!("touch {}/new", protected.display()),
        format!("ln {}/f \"$T/hl\"", protected.display()),
    ] {
        let out = bed.floor(&trick, "landlock");
        assert_eq!(
            std::fs::read_to_string(protected.join("f")).unwrap_or_default(),
            "orig\n",
            "{trick}\n{}",
            text(&out)
        );
        assert!(!protected.join("new").exists() && !protected.join("g").exists());
    }
    for cmd in [
        "echo n > NOTES.md && echo n > src/new.ts",
        "printf 'x\\n' > .README.md.tmp && mv .README.md.tmp README.md",
        "f=$(mktemp) && echo t > \"$f\" && rm \"$f\"",
        "mkdir -p ~/.cache/t && echo c > ~/.cache/t/x",
        "git add README.md && git -c user.name=t -c user.email=t@example.invalid commit -qm ll",
    ] {
        let out = bed.floor(cmd, "landlock");
        assert!(out.status.success(), "{cmd}\n{}", text(&out));
    }
}
