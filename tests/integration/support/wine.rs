//! The Windows builds of the suite's tools, run under wine from the Linux test process.
//!
//! `scripts/test-windows` builds the `x86_64-pc-windows-gnu` binaries, prepares a wine prefix
//! and sets `SESSION_LOCK_WINDOWS_BIN` to the folder holding `guard.exe`, `claim.exe`, … and
//! `witness.exe` (scripts/windows/witness.c). Without it the Windows tests print a `skipped:`
//! line and pass: `scripts/test` runs on Linux only.
//!
//! The test process stays on the Linux side: it makes the temp git repos (there is no Windows
//! git in the prefix), writes the case files, and hands the Windows tools their paths in
//! Windows form (`Z:\…`, wine's drive for `/`). A Windows process the tools can see as alive
//! (a session's client) is a [`Witness`]: Linux pids mean nothing to them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The environment variable naming the folder of the Windows binaries.
pub const BIN_VAR: &str = "SESSION_LOCK_WINDOWS_BIN";

/// The Windows binaries and how to start them.
#[derive(Debug)]
pub struct Wine {
    bin: PathBuf,
}

/// The Windows binaries, when `scripts/test-windows` set them up; `None` otherwise.
pub fn get() -> Option<&'static Wine> {
    static WINE: OnceLock<Option<Wine>> = OnceLock::new();
    WINE.get_or_init(|| {
        let bin = PathBuf::from(std::env::var_os(BIN_VAR)?);
        bin.join("guard.exe").is_file().then_some(Wine { bin })
    })
    .as_ref()
}

/// The Windows binaries, or a `skipped:` line naming the test and `return` from it.
macro_rules! require_wine {
    () => {{
        fn here() {}
        let name = ::std::any::type_name_of_val(&here);
        let name = name.strip_suffix("::here").unwrap_or(name);
        match $crate::support::wine::get() {
            Some(w) => w,
            None => {
                println!(
                    "skipped: {name}: the Windows build runs under wine in scripts/test-windows ({} unset)",
                    $crate::support::wine::BIN_VAR
                );
                return;
            }
        }
    }};
}
pub(crate) use require_wine;

impl Wine {
    /// `<bin>/<name>.exe`.
    pub fn exe(&self, name: &str) -> PathBuf {
        self.bin.join(format!("{name}.exe"))
    }

    /// The folder of the binaries, in Windows form (for PATH).
    pub fn bin_dir(&self) -> String {
        win(&self.bin)
    }

    /// `wine <name>.exe`, stdin closed; wine's own chatter off.
    pub fn command(&self, name: &str) -> Command {
        self.program(&self.exe(name))
    }

    /// `wine <program>` for any Windows program (`cmd`, a path to an exe).
    pub fn program(&self, program: &Path) -> Command {
        let mut c = Command::new("wine");
        c.arg(program).env("WINEDEBUG", "-all").stdin(Stdio::null());
        c
    }

    /// The live Windows process of this test run: started once, alive until the run ends.
    pub fn witness(&self) -> &'static Witness {
        static LIVE: OnceLock<Witness> = OnceLock::new();
        LIVE.get_or_init(|| Witness::start(self))
    }

    /// A pid no Windows process of the prefix has: wine hands out small ids, multiples of 4.
    pub fn dead_pid(&self) -> u32 {
        0x0FFF_FFF0
    }

    /// The start time the Windows tools record for `pid`, read back from what `guard.exe`
    /// writes at SessionStart for a client of that pid.
    pub fn start_time_of(&self, pid: u32) -> Option<String> {
        let repo = crate::support::lifecycle::Repo::new();
        let payload = serde_json::json!({
            "session_id": crate::support::lifecycle::sid("probe"),
            "cwd": win(&repo.root),
            "hook_event_name": "SessionStart",
            "source": "startup",
        });
        let mut cmd = self.command("guard");
        cmd.current_dir(&repo.root)
            .env("SESSION_LOCK_HOME", win(&repo.home))
            .env("CLAUDE_PID", pid.to_string())
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_CODE_SESSION_ID");
        crate::support::lifecycle::run_with_stdin(cmd, payload.to_string().as_bytes());
        let path = repo.home.join(format!(
            "sessions/{}.json",
            crate::support::lifecycle::sid("probe")
        ));
        let entry: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        entry["procStart"].as_str().map(str::to_string)
    }
}

/// A Windows process that lives while its stdin is open (scripts/windows/witness.c).
pub struct Witness {
    child: Mutex<Option<(Child, ChildStdin)>>,
    pub pid: u32,
    /// Its start time as the Windows tools see it.
    pub start: String,
}

impl Witness {
    /// Starts one and reads its Windows pid and start time. Panics when it cannot.
    pub fn start(wine: &Wine) -> Witness {
        let mut child = wine
            .command("witness")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start witness.exe under wine");
        let stdin = child.stdin.take().expect("witness stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("witness stdout"))
            .read_line(&mut line)
            .expect("read the witness pid");
        let pid: u32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("witness.exe printed {line:?}, not a pid"));
        let start = wine
            .start_time_of(pid)
            .unwrap_or_else(|| panic!("guard.exe recorded no start time for the live pid {pid}"));
        Witness {
            child: Mutex::new(Some((child, stdin))),
            pid,
            start,
        }
    }

    /// Ends it (closes its stdin) and waits until it has exited.
    pub fn end(&self) {
        if let Some((mut child, stdin)) = self.child.lock().ok().and_then(|mut c| c.take()) {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// A suite tool run by a session from its Windows client process: `witness.exe <tool>.exe …`
/// (scripts/windows/witness.c) prints its pid and waits; [`start_as_client`] lists that pid in
/// the suite's session registry and then lets it start the tool as its child, so the tool runs
/// inside the session's Windows process tree, as from its Bash or PowerShell tool. The
/// counterpart of `Repo::tool_as`, whose `sh` client the Windows tools could not see (and which
/// wine does not make the Windows parent of anything). Add the tool's arguments to the command.
pub fn client_command(wine: &Wine, tool: &str) -> Command {
    let mut c = wine.command("witness");
    c.arg(win(&wine.exe(tool)));
    c
}

/// Starts `cmd` (a [`client_command`]), writes `home`'s registry entry for `session_id` working
/// in `cwd` (Windows form) with the client's Windows pid, as the guard lists a session, then
/// lets the client start the tool. The child's stdout and stderr are the tool's.
pub fn start_as_client(mut cmd: Command, home: &Path, session_id: &str, cwd: &str) -> Child {
    use std::io::{Read, Write};
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start witness.exe under wine");
    let mut stdout = child.stdout.take().expect("witness stdout");
    // Byte by byte up to the newline: what follows is the tool's own output.
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).expect("read the client's pid") == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line);
    let pid: u32 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("witness.exe printed {line:?}, not a pid"));
    let entry = serde_json::json!({
        "sessionId": session_id, "cwd": cwd, "pid": pid,
        "updatedAt": session_lock::time::iso(session_lock::time::now_ms()),
    });
    let dir = home.join("sessions");
    std::fs::create_dir_all(&dir).expect("sessions folder");
    std::fs::write(dir.join(format!("{session_id}.json")), entry.to_string())
        .expect("write the client's registry entry");
    let mut stdin = child.stdin.take().expect("witness stdin");
    stdin
        .write_all(b"go\n")
        .expect("let the client start the tool");
    drop(stdin);
    child.stdout = Some(stdout);
    child
}

/// How a test spells a Linux path to a Windows program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `Z:\tmp\x\repo`
    Back,
    /// `Z:/tmp/x/repo`
    Forward,
    /// `Z:\TMP\X\REPO` (wine's drives, like Windows', ignore case)
    Upper,
    /// `z:\tmp\x\repo`
    LowerDrive,
    /// `Z:\tmp\x\repo\..\repo`
    DotDot,
}

impl Form {
    pub const ALL: [Form; 5] = [
        Form::Back,
        Form::Forward,
        Form::Upper,
        Form::LowerDrive,
        Form::DotDot,
    ];

    /// `path` (absolute, Linux) in this form.
    pub fn of(self, path: &Path) -> String {
        let back = win(path);
        match self {
            Form::Back => back,
            Form::Forward => back.replace('\\', "/"),
            Form::Upper => back.to_uppercase(),
            Form::LowerDrive => format!("z{}", &back[1..]),
            Form::DotDot => match path.file_name() {
                Some(last) => format!("{back}\\..\\{}", last.to_string_lossy()),
                None => back,
            },
        }
    }

    /// The separator this form joins with.
    pub fn sep(self) -> char {
        if self == Form::Forward { '/' } else { '\\' }
    }

    /// `root` in this form joined with the repo-relative `rel` (its `/` in the form's
    /// separator; the case of `rel` kept).
    pub fn join(self, root: &Path, rel: &str) -> String {
        let rel = rel.replace('/', &self.sep().to_string());
        format!("{}{}{rel}", self.of(root), self.sep())
    }
}

/// `/tmp/x` → `Z:\tmp\x`: wine's drive Z: is the Linux root.
pub fn win(path: &Path) -> String {
    format!("Z:{}", path.to_string_lossy().replace('/', "\\"))
}

/// Where a corpus runs the guard: this build on Linux, or the Windows build under wine with
/// the case's paths in one [`Form`].
#[derive(Clone, Copy, Debug)]
pub enum Host {
    Linux,
    Windows(&'static Wine, Form),
}

impl Host {
    /// The guard, run from `cwd` for `repo` with a clean environment.
    pub fn guard(self, repo: &crate::support::lifecycle::Repo, cwd: &Path) -> Command {
        let mut cmd = match self {
            Host::Linux => repo.tool("guard"),
            Host::Windows(wine, _) => {
                let mut c = repo.scrubbed(wine.command("guard"));
                c.env("SESSION_LOCK_HOME", win(&repo.home));
                c
            }
        };
        cmd.current_dir(cwd);
        cmd
    }

    /// An absolute path as this host's programs are given it (folders: cwd, homes, configs).
    pub fn path(self, path: &Path) -> String {
        match self {
            Host::Linux => path.to_string_lossy().to_string(),
            Host::Windows(..) => win(path),
        }
    }

    /// `path` rooted without its drive, as a Windows client may name it on the current drive
    /// (`\tmp\x\repo`, or with `/` when `slash`; the case's letter case and `..`); on Linux the
    /// path itself, where a leading `/` is the root.
    pub fn no_drive(self, path: &Path, slash: bool) -> String {
        match self {
            Host::Linux => path.to_string_lossy().to_string(),
            Host::Windows(_, form) => {
                let rest = form.of(path)[2..].replace('/', "\\");
                if slash { rest.replace('\\', "/") } else { rest }
            }
        }
    }

    /// `path` as Git Bash names it, through its drive mount (`/z/tmp/x/repo`); on Linux the path
    /// itself.
    pub fn msys(self, path: &Path) -> String {
        match self {
            Host::Linux => path.to_string_lossy().to_string(),
            Host::Windows(_, form) => {
                let f = form.of(path);
                format!("/{}{}", &f[..1], f[2..].replace('\\', "/"))
            }
        }
    }

    /// A file below `root` as a client on this host names it: `<root>/<rel>` on Linux, the
    /// case's form of the root joined with `rel` on Windows.
    pub fn join(self, root: &Path, rel: &str) -> String {
        match self {
            Host::Linux => format!("{}/{rel}", root.to_string_lossy()),
            Host::Windows(_, form) => form.join(root, rel),
        }
    }

    /// A process this host's tools see as alive, with its start time as they record it.
    pub fn live(self) -> (u32, Option<String>) {
        match self {
            Host::Linux => {
                let me = std::process::id();
                (me, session_lock::liveness::start_time(me))
            }
            Host::Windows(wine, _) => {
                let w = wine.witness();
                (w.pid, Some(w.start.clone()))
            }
        }
    }

    /// A pid whose process has exited (or never was) on this host.
    pub fn dead(self) -> u32 {
        match self {
            Host::Linux => crate::support::lifecycle::dead_pid(),
            Host::Windows(wine, _) => wine.dead_pid(),
        }
    }

    pub fn is_windows(self) -> bool {
        matches!(self, Host::Windows(..))
    }
}

/// How many times [`Host::run`] started a Windows program again after wine failed to start it.
pub static RESTARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Host {
    /// Runs what `make` builds with `input` on stdin. Under a loaded wine a program now and then
    /// never starts: exit 1 with nothing on stdout or stderr, which no tool of the suite ends
    /// with (the guard exits 0 or 2, the others say why on stderr). That one signature is
    /// started again, once, and counted in [`RESTARTS`].
    pub fn run(self, make: impl Fn() -> Command, input: &[u8]) -> std::process::Output {
        let out = crate::support::lifecycle::run_with_stdin(make(), input);
        let never_started =
            out.status.code() == Some(1) && out.stdout.is_empty() && out.stderr.is_empty();
        if self.is_windows() && never_started {
            RESTARTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return crate::support::lifecycle::run_with_stdin(make(), input);
        }
        out
    }
}
