//! `guard floor`: apply the floor and run the command; `guard floor --take-cwd`: hand the
//! command's last working directory back to the client's shell. And the wrapper text the hook
//! puts in `updatedInput.command`.
//!
//! The client runs a command as `bash -c 'source <snapshot> && … && eval '<command>' && pwd -P
//! >| <cwd file>'`, so the wrapper is eval'd in a shell that has the session's aliases and
//! functions, and that shell's `pwd` afterwards is the cwd the next command starts in:
//!
//! ```text
//! '/bin/guard' floor --root R --env-fd 3 --deny OWNER=PATH … -- 'CMD' 3<<<"$(alias -p; declare -f)";
//! __sl_rc=$?; cd -- "$('/bin/guard' floor --take-cwd $__sl_rc)"; (exit $__sl_rc)
//! ```
//!
//! - `guard floor` records a state folder named after its parent (the client's shell, which is
//!   also the parent of `--take-cwd`), then execs the mechanism, which runs
//!   `bash -c <INNER> bash 'CMD' <state>`: `$0` is `bash`, the aliases and functions come in on
//!   fd 3, stdin, stdout and stderr are the client's, and the inner shell writes `pwd -P` into the
//!   state folder after `CMD`.
//! - `--take-cwd RC` prints that folder (`.` when none was recorded, e.g. after `exit`),
//!   prints the refusal note on stderr when RC is not 0, and deletes the state folder; the
//!   client's shell `cd`s there and ends with RC, so its own `pwd -P` and exit code are what they
//!   would have been.
//! - The text holds no `rm`, no `bash -c` of a literal, nothing the client's own checks refuse.

use super::mechanism::{self, Choice};
use super::{Denied, DeniedSet};
use std::path::{Path, PathBuf};

/// The parsed arguments of `guard floor`.
#[derive(Debug, Default)]
pub struct Args {
    pub root: Option<PathBuf>,
    pub env_fd: Option<u32>,
    pub deny: Vec<String>,
    pub state: Option<PathBuf>,
    pub command: String,
}

/// `guard floor`'s usage (it is not in `guard --help`: only the wrapper runs it).
pub const USAGE: &str = "usage: guard floor [--root DIR] [--env-fd N] [--state DIR] [--deny OWNER=PATH]... -- COMMAND\n       guard floor --take-cwd RC [--state DIR]\n\nRuns COMMAND (bash) where the kernel refuses writes to each PATH (OWNER: stream:<name>, protocol, output, planting); --take-cwd prints the folder COMMAND ended in and removes the floor's state. Exit codes: COMMAND's own; 126 the floor could not be applied (COMMAND did not run); 2 bad arguments.";

/// `guard floor ARGS…` (the words after `floor`): parses them by hand (it runs before every
/// floored command, so it builds no clap parser), runs, and gives the exit code.
pub fn main(words: &[String]) -> u8 {
    let usage = |e: &str| {
        eprintln!("guard floor: {e}\n{USAGE}");
        crate::exit::Code::Usage as u8
    };
    let mut args = Args::default();
    let mut take: Option<i32> = None;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let r: Result<(), String> = match w.as_str() {
            "--" => {
                let rest: Vec<&String> = it.by_ref().collect();
                match rest.as_slice() {
                    [one] => {
                        args.command = one.to_string();
                        Ok(())
                    }
                    _ => Err("give the command as one word after --".into()),
                }
            }
            "--root" => value("--root").map(|v| args.root = Some(v.into())),
            "--state" => value("--state").map(|v| args.state = Some(v.into())),
            "--deny" => value("--deny").map(|v| args.deny.push(v)),
            "--env-fd" => value("--env-fd").and_then(|v| {
                v.parse()
                    .map(|n| args.env_fd = Some(n))
                    .map_err(|_| format!("--env-fd '{v}' is not a file descriptor number"))
            }),
            "--take-cwd" => value("--take-cwd").and_then(|v| {
                v.parse()
                    .map(|n| take = Some(n))
                    .map_err(|_| format!("--take-cwd '{v}' is not an exit code"))
            }),
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            other => Err(format!("unknown argument '{other}'")),
        };
        if let Err(e) = r {
            return usage(&e);
        }
    }
    if let Some(rc) = take {
        let (cwd, note) = take_cwd(rc, args.state);
        print!("{cwd}");
        if let Some(note) = note {
            eprintln!("{note}");
        }
        return 0;
    }
    if args.command.is_empty() {
        return usage("no command (give it after --)");
    }
    let (code, message) = floor(args);
    eprintln!("{message}");
    code
}

/// The exit code when the floor could not be applied: the command did not run.
pub const NOT_RUN: u8 = 126;

/// Applies the floor and execs the command; returns only on failure, with the message.
pub fn floor(args: Args) -> (u8, String) {
    let mut denied: Vec<Denied> = Vec::new();
    for d in &args.deny {
        match DeniedSet::parse_deny(d) {
            Ok(d) => denied.push(d),
            Err(e) => return (crate::exit::Code::Usage as u8, e),
        }
    }
    let mut set = DeniedSet {
        denied,
        ..DeniedSet::default()
    };
    set.finish();
    let mech = if set.denied.is_empty() {
        None
    } else {
        let home = crate::sessions::state_home();
        match mechanism::choose(home.as_deref()) {
            Choice::Ready(m) => Some(m),
            Choice::None(why) => {
                return (
                    NOT_RUN,
                    format!(
                        "session-lock: the write floor cannot be applied here ({why}); the command did not run"
                    ),
                );
            }
        }
    };
    if let Some(m) = &mech
        && m.kind() == mechanism::Kind::Landlock
    {
        // Only what Landlock can deny without breaking ordinary work; the rest (all of it in
        // the repo, a temp folder or home) is left to the analysis.
        set.denied = mechanism::landlock_keeps(&set.denied, args.root.as_deref()).0;
    }
    let state = args.state.clone().or_else(default_state);
    if let Some(dir) = &state
        && let Err(e) = fresh_state(dir, &set, args.root.as_deref())
    {
        return (
            NOT_RUN,
            format!(
                "session-lock: cannot record the floor's state in {}: {e}; the command did not run",
                dir.display()
            ),
        );
    }
    let bash = ["/bin/bash", "/usr/bin/bash"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| mechanism::find_program("bash"))
        .unwrap_or_else(|| PathBuf::from("bash"));
    let inner = vec![
        "-c".to_string(),
        inner_script(args.env_fd),
        "bash".to_string(),
        args.command.clone(),
        state
            .as_deref()
            .map(|s| s.display().to_string())
            .unwrap_or_default(),
    ];
    let mut cmd = match mech.filter(|_| !set.denied.is_empty()) {
        None => {
            let mut c = std::process::Command::new(&bash);
            c.args(&inner);
            c
        }
        Some(m) => match m.wrap(&set.denied, &bash, &inner) {
            Ok(mut c) => {
                c.env(mechanism::INSIDE_VAR, m.kind().name());
                c
            }
            Err(e) => {
                return (
                    NOT_RUN,
                    format!(
                        "session-lock: the write floor could not be applied ({e}); the command did not run"
                    ),
                );
            }
        },
    };
    exec(&mut cmd)
}

#[cfg(unix)]
fn exec(cmd: &mut std::process::Command) -> (u8, String) {
    use std::os::unix::process::CommandExt;
    let e = cmd.exec();
    (
        NOT_RUN,
        format!(
            "session-lock: cannot run {}: {e}; the command did not run",
            cmd.get_program().to_string_lossy()
        ),
    )
}

#[cfg(not(unix))]
fn exec(_: &mut std::process::Command) -> (u8, String) {
    (
        NOT_RUN,
        "session-lock: the write floor runs on Linux (and macOS) only".into(),
    )
}

/// The script the floored bash runs: `$1` the command, `$2` the state folder (or empty).
fn inner_script(env_fd: Option<u32>) -> String {
    let env = match env_fd {
        Some(fd) => format!(". /dev/fd/{fd} 2>/dev/null; exec {fd}<&-; "),
        None => String::new(),
    };
    format!(
        "__sl_c=$1; __sl_s=$2; set --; {env}shopt -s expand_aliases; eval \"$__sl_c\"; __sl_rc=$?; [ -z \"$__sl_s\" ] || pwd -P >| \"$__sl_s/cwd\" 2>/dev/null; exit $__sl_rc"
    )
}

/// The state folder of the shell that runs the wrapper: `<temp>/session-lock-floor-<uid>/<ppid>`.
fn default_state() -> Option<PathBuf> {
    #[cfg(unix)]
    {
        let uid = rustix::process::geteuid().as_raw();
        let ppid = rustix::process::getppid()?.as_raw_nonzero();
        Some(
            std::env::temp_dir()
                .join(format!("session-lock-floor-{uid}"))
                .join(ppid.to_string()),
        )
    }
    #[cfg(not(unix))]
    None
}

/// Makes `dir` empty and ours (its parent a folder of ours, not a link), with the note a failed
/// command gets.
fn fresh_state(dir: &Path, set: &DeniedSet, root: Option<&Path>) -> std::io::Result<()> {
    if let Some(base) = dir.parent() {
        match std::fs::symlink_metadata(base) {
            Ok(m) if m.is_dir() && owned_by_me(&m) => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder of this user",
                    base.display()
                )));
            }
            Err(_) => {
                std::fs::create_dir_all(base)?;
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))?;
                }
            }
        }
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir(dir)?;
    if !set.denied.is_empty() {
        std::fs::write(dir.join("note"), set.refusal_note(root))?;
    }
    Ok(())
}

#[cfg(unix)]
fn owned_by_me(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    m.uid() == rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn owned_by_me(_: &std::fs::Metadata) -> bool {
    true
}

/// `guard floor --take-cwd RC`: the recorded cwd for stdout (`.` when none), the refusal note
/// when RC is not 0, and the state folder deleted.
pub fn take_cwd(rc: i32, state: Option<PathBuf>) -> (String, Option<String>) {
    let Some(dir) = state.or_else(default_state) else {
        return (".".into(), None);
    };
    let cwd = std::fs::read_to_string(dir.join("cwd"))
        .ok()
        .map(|c| c.strip_suffix('\n').unwrap_or(&c).to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| ".".into());
    let note = (rc != 0)
        .then(|| std::fs::read_to_string(dir.join("note")).ok())
        .flatten();
    let _ = std::fs::remove_dir_all(&dir);
    (cwd, note)
}

/// The command the client runs instead of `command`: `command` under the floor of `set`, with
/// the snapshot's aliases and functions, the cwd carried over and the exit code kept.
pub fn wrapper(guard: &Path, root: &Path, set: &DeniedSet, command: &str) -> String {
    let (mut s, guard) = floor_call(guard, root, set, command, true);
    s.push_str(&format!(
        " 3<<<\"$(alias -p; declare -f)\"; __sl_rc=$?; cd -- \"$({guard} floor --take-cwd $__sl_rc)\"; (exit $__sl_rc)"
    ));
    s
}

/// [`wrapper`] for a client whose every command starts in a fresh shell (Gemini CLI), which
/// refuses any command substitution in what it runs: no snapshot, no cwd carried over; the
/// floor's note on a failure and the exit code kept.
pub fn wrapper_plain(guard: &Path, root: &Path, set: &DeniedSet, command: &str) -> String {
    let (mut s, guard) = floor_call(guard, root, set, command, false);
    s.push_str(&format!(
        "; __sl_rc=$?; {guard} floor --take-cwd $__sl_rc >/dev/null; (exit $__sl_rc)"
    ));
    s
}

/// `guard floor … -- 'command'` (reading the snapshot on fd 3 when `env_fd`), and the guard
/// program quoted.
fn floor_call(
    guard: &Path,
    root: &Path,
    set: &DeniedSet,
    command: &str,
    env_fd: bool,
) -> (String, String) {
    use crate::shell::word::quote_posix as q;
    let guard = q(&guard.to_string_lossy()).into_owned();
    let mut s = format!("{guard} floor --root {}", q(&root.to_string_lossy()));
    if env_fd {
        s.push_str(" --env-fd 3");
    }
    for a in set.to_args() {
        s.push(' ');
        s.push_str(&q(&a));
    }
    s.push_str(" -- ");
    s.push_str(&q(command));
    (s, guard)
}

/// The suite's commands that write the protocol's state themselves.
pub const SUITE_COMMANDS: [&str; 6] = [
    "claim",
    "release",
    "build-renderer",
    "reload-plugin",
    "send-message",
    "wait-milestone",
];

/// A plain single invocation of a suite command: its bare name (or a path into the suite's own
/// binaries folder), then words and quoted strings with nothing a shell would expand, chain,
/// redirect or substitute. Such a call runs outside the floor (it writes `session-lock/`); any
/// other command that runs one stays inside.
pub fn plain_suite_call(command: &str, binary_dir: Option<&Path>) -> bool {
    let command = command.trim();
    let program = command.split([' ', '\t']).next().unwrap_or("");
    let name = match program.rsplit_once('/') {
        None => program,
        Some((dir, name)) => {
            let ours = binary_dir.is_some_and(|b| Path::new(dir) == b);
            if !ours {
                return false;
            }
            name
        }
    };
    if !SUITE_COMMANDS.contains(&name) {
        return false;
    }
    #[derive(PartialEq)]
    enum In {
        Word,
        Single,
        Double,
    }
    let mut state = In::Word;
    for c in command[program.len()..].chars() {
        state = match state {
            In::Word if c == '\'' => In::Single,
            In::Word if c == '"' => In::Double,
            In::Word if c.is_ascii_alphanumeric() || " \t-_./=:,@+%".contains(c) => In::Word,
            In::Word => return false,
            In::Single if c == '\'' => In::Word,
            In::Single => In::Single,
            In::Double if c == '"' => In::Word,
            In::Double if "$`\\!".contains(c) => return false,
            In::Double => In::Double,
        };
    }
    state == In::Word && !command.contains('\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_suite_calls_are_told_from_anything_else() {
        let bin = Path::new("/opt/sl/bin");
        for ok in [
            "claim api",
            "release api --json",
            "send-message api 'rebase on main, please'",
            "send-message api \"done: src/api\"",
            "/opt/sl/bin/wait-milestone 2 --stream web",
            "build-renderer",
        ] {
            assert!(plain_suite_call(ok, Some(bin)), "{ok}");
        }
        for no in [
            "claim api && rm -rf src",
            "release $(echo api)",
            "release api; touch x",
            "( (release api) & )",
            "./claim api",
            "/tmp/claim api",
            "claim api > out",
            "PATH=. claim api",
            "send-message api \"$(cat /etc/passwd)\"",
            "claim 'api",
            "claim api\nrm x",
            "git status",
            "claimx api",
            "release ~/x",
            "release api*",
        ] {
            assert!(!plain_suite_call(no, Some(bin)), "{no}");
        }
    }

    #[test]
    fn the_wrapper_quotes_and_holds_nothing_the_client_refuses() {
        let set = DeniedSet {
            denied: vec![Denied {
                path: PathBuf::from("/r/src/api"),
                owner: super::super::Owner::Stream("api".into()),
            }],
            ..DeniedSet::default()
        };
        let w = wrapper(
            Path::new("/opt/sl bin/guard"),
            Path::new("/r"),
            &set,
            "echo 'it'\"'\"'s' > x",
        );
        assert!(w.starts_with("'/opt/sl bin/guard' floor --root /r --env-fd 3 --deny stream:api=/r/src/api -- 'echo '\\''it'\\''\"'\\''\"'\\''s'\\'' > x' 3<<<"), "{w}");
        assert!(!w.contains("rm ") && !w.contains("bash -c"), "{w}");
        assert!(w.ends_with("(exit $__sl_rc)"), "{w}");
        // Gemini's form: the same call, no substitution of any kind.
        let p = wrapper_plain(Path::new("/opt/sl bin/guard"), Path::new("/r"), &set, "ls");
        assert_eq!(
            p,
            "'/opt/sl bin/guard' floor --root /r --deny stream:api=/r/src/api -- ls; __sl_rc=$?; '/opt/sl bin/guard' floor --take-cwd $__sl_rc >/dev/null; (exit $__sl_rc)"
        );
        assert!(
            !["$(", "`", "<(", ">(", "<<<"].iter().any(|t| p.contains(t)),
            "{p}"
        );
    }

    #[test]
    fn take_cwd_reads_the_record_and_removes_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s");
        let set = DeniedSet {
            denied: vec![Denied {
                path: PathBuf::from("/r/src/api"),
                owner: super::super::Owner::Stream("api".into()),
            }],
            ..DeniedSet::default()
        };
        fresh_state(&state, &set, Some(Path::new("/r"))).unwrap();
        std::fs::write(state.join("cwd"), "/r/src/web\n").unwrap();
        let (cwd, note) = take_cwd(0, Some(state.clone()));
        assert_eq!((cwd.as_str(), note), ("/r/src/web", None));
        assert!(!state.exists());
        fresh_state(&state, &set, Some(Path::new("/r"))).unwrap();
        let (cwd, note) = take_cwd(1, Some(state.clone()));
        assert_eq!(cwd, ".");
        assert!(note.unwrap().contains("src/api (owned by stream 'api')"));
    }
}
