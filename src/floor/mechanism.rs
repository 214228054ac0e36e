//! The platform's way to refuse writes, behind one small trait, chosen at run time.
//!
//! - **bubblewrap** (Linux): `bwrap --cap-drop ALL --disable-userns --unshare-user --uid U
//!   --gid G --dev-bind / / --ro-bind D D … -- CMD`. A deny-list: each denied path is a
//!   read-only bind in a private mount namespace, so writing, creating, deleting, renaming,
//!   linking, `chmod` and `touch` below it fail with EROFS, and nothing around it changes. The
//!   hardening is the same as root and as a user: no capabilities inside (root cannot unmount
//!   the binds or write through `/proc/<pid>/root`), no nested user namespaces (no `unshare -Urm`
//!   around the binds). Never `--unshare-pid`: `claim` and `release` prove a session by its
//!   process tree. Chosen where a probe (cached per boot in the state home) shows it runs.
//! - **Landlock** (Linux ≥ 6.2, ABI 3): an allow-list, so a deny is built by granting every
//!   write right beneath each entry of each ancestor of a denied path, but the denied path and
//!   the ancestors themselves. Its limit: no new entry, deletion or rename *directly in an
//!   ancestor* of a denied path. Denying `src/api` would stop new files in the repo root and in
//!   `src/`, so [`landlock_keeps`] denies only paths whose ancestors no ordinary work creates
//!   entries in: nothing inside the repo, a temp folder or the home folder. It also leaves
//!   `chmod`/`touch -d` open. Used where bubblewrap cannot run, and inside a floor (bubblewrap
//!   cannot nest with `--disable-userns`; Landlock layers stack).
//! - **sandbox-exec** (macOS): `sandbox-exec -p PROFILE -- CMD`, a deny-list profile of the
//!   denied paths ([`super::sbpl::paths_profile`]); chosen where a probe (cached like
//!   bubblewrap's) shows that a profile of the same form runs `true`. Not run by the tests here
//!   (there is no Mac in CI); the profile text is unit-tested.
//! - Windows: none.

use super::Denied;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which mechanism, as `guard doctor` and `guard explain` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Bubblewrap,
    Landlock,
    SandboxExec,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bubblewrap => "bubblewrap",
            Kind::Landlock => "landlock",
            Kind::SandboxExec => "sandbox-exec",
        }
    }
}

/// Set in the floored command's environment (the mechanism's name): a floor inside a floor
/// uses Landlock, which stacks.
pub const INSIDE_VAR: &str = "SESSION_LOCK_FLOOR";

/// Chooses between the mechanisms that are available (`bubblewrap` or `landlock`), for tests and
/// for a machine where one misbehaves. It never switches the floor off.
pub const CHOOSE_VAR: &str = "SESSION_LOCK_FLOOR_MECHANISM";

/// A way to run a program under the floor.
pub trait Mechanism {
    fn kind(&self) -> Kind;
    /// The command that runs `program args` with `denied` unwritable. May restrict the calling
    /// process itself (Landlock), which then must exec the command.
    fn wrap(&self, denied: &[Denied], program: &Path, args: &[String]) -> Result<Command, String>;
}

/// What [`choose`] found.
pub enum Choice {
    Ready(Box<dyn Mechanism>),
    /// No mechanism works here, and why.
    None(String),
}

/// The mechanism for this process: bubblewrap where its probe passes (not inside a floor),
/// else Landlock, else none. `state_home` holds the cached probe.
pub fn choose(state_home: Option<&Path>) -> Choice {
    if cfg!(target_os = "macos") {
        return match sandbox_exec(state_home) {
            Ok(s) => Choice::Ready(Box::new(s)),
            Err(e) => Choice::None(e),
        };
    }
    let wanted = std::env::var(CHOOSE_VAR).unwrap_or_default();
    let nested = std::env::var_os(INSIDE_VAR).is_some_and(|v| !v.is_empty());
    let mut why = Vec::new();
    if wanted != "landlock" && !nested {
        match bubblewrap(state_home) {
            Ok(b) => return Choice::Ready(Box::new(b)),
            Err(e) => why.push(e),
        }
    } else if nested {
        why.push("inside a floor already (bubblewrap does not nest)".into());
    }
    if wanted != "bubblewrap" {
        match landlock_abi() {
            Ok(()) => return Choice::Ready(Box::new(Landlock)),
            Err(e) => why.push(e),
        }
    }
    Choice::None(why.join("; "))
}

/// What `guard doctor` and the hook report without running anything: bubblewrap found (and not
/// known to fail), else Landlock, else why none.
pub fn available(state_home: Option<&Path>) -> Result<Kind, String> {
    if cfg!(target_os = "macos") {
        let program = find_program("sandbox-exec").ok_or("sandbox-exec not found")?;
        return match Probe::cached(state_home, &program) {
            Some(p) if !p.ok => Err(format!("sandbox-exec does not run here: {}", p.detail)),
            _ => Ok(Kind::SandboxExec),
        };
    }
    if !cfg!(target_os = "linux") {
        return Err("no write floor on this platform (the guard's analysis applies)".into());
    }
    let nested = std::env::var_os(INSIDE_VAR).is_some_and(|v| !v.is_empty());
    let mut why = Vec::new();
    if !nested {
        match find_program("bwrap") {
            Some(bwrap) => match Probe::cached(state_home, &bwrap) {
                Some(p) if !p.ok => why.push(format!("bubblewrap does not run here: {}", p.detail)),
                _ => return Ok(Kind::Bubblewrap),
            },
            None => why.push("bubblewrap (bwrap) is not installed".to_string()),
        }
    }
    match landlock_abi() {
        Ok(()) => Ok(Kind::Landlock),
        Err(e) => {
            why.push(e);
            Err(why.join("; "))
        }
    }
}

/// Paths Landlock can deny without breaking ordinary work: none strictly inside the repo, a
/// temp folder or the home folder (each of their ancestors there would refuse new entries).
/// Returns (kept, left to the analysis).
pub fn landlock_keeps(denied: &[Denied], root: Option<&Path>) -> (Vec<Denied>, Vec<Denied>) {
    let mut work: Vec<PathBuf> = vec![
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    work.extend(root.map(Path::to_path_buf));
    work.extend(crate::sessions::home_dir());
    let work: Vec<PathBuf> = work
        .into_iter()
        .map(|w| std::fs::canonicalize(&w).unwrap_or(w))
        .collect();
    denied
        .iter()
        .cloned()
        .partition(|d| !work.iter().any(|w| d.path.starts_with(w) && d.path != *w))
}

/// The first `name` on PATH that is a file.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------------
// bubblewrap

struct Bubblewrap {
    bwrap: PathBuf,
}

/// The hardening every bubblewrap floor gets, as root and as a user.
fn hardening() -> Vec<String> {
    #[cfg(unix)]
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    #[cfg(not(unix))]
    let (uid, gid) = (0, 0);
    [
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--unshare-user",
        "--uid",
        &uid.to_string(),
        "--gid",
        &gid.to_string(),
        "--dev-bind",
        "/",
        "/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl Mechanism for Bubblewrap {
    fn kind(&self) -> Kind {
        Kind::Bubblewrap
    }

    fn wrap(&self, denied: &[Denied], program: &Path, args: &[String]) -> Result<Command, String> {
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(hardening());
        for d in denied {
            cmd.arg("--ro-bind").arg(&d.path).arg(&d.path);
        }
        cmd.arg("--").arg(program).args(args);
        Ok(cmd)
    }
}

/// The probe's arguments: the hardening, everything read-only, `true`.
fn bubblewrap_probe() -> Vec<String> {
    let mut args = hardening();
    args.extend(["--ro-bind", "/", "/", "--", "true"].map(String::from));
    args
}

fn bubblewrap(state_home: Option<&Path>) -> Result<Bubblewrap, String> {
    let bwrap = find_program("bwrap").ok_or("bubblewrap (bwrap) is not installed")?;
    let probe = match Probe::cached(state_home, &bwrap) {
        Some(p) => p,
        None => {
            let p = Probe::run(&bwrap, &bubblewrap_probe());
            p.store(state_home);
            p
        }
    };
    if probe.ok {
        Ok(Bubblewrap { bwrap })
    } else {
        Err(format!("bubblewrap does not run here: {}", probe.detail))
    }
}

/// Whether the hardened bubblewrap runs on this machine, remembered per boot and binary.
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
struct Probe {
    boot: String,
    bwrap: PathBuf,
    modified: u64,
    ok: bool,
    detail: String,
}

impl Probe {
    fn key(bwrap: &Path) -> (String, u64) {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .unwrap_or_default()
            .trim()
            .to_string();
        let modified = std::fs::metadata(bwrap)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        (boot, modified)
    }

    fn file(state_home: &Path) -> PathBuf {
        state_home.join("floor-probe.json")
    }

    fn cached(state_home: Option<&Path>, bwrap: &Path) -> Option<Probe> {
        let text = std::fs::read_to_string(Probe::file(state_home?)).ok()?;
        let p: Probe = serde_json::from_str(&text).ok()?;
        let (boot, modified) = Probe::key(bwrap);
        (p.boot == boot && p.modified == modified && p.bwrap == bwrap).then_some(p)
    }

    /// Runs `bwrap args` (the mechanism's program, whichever it is) and remembers whether it
    /// succeeded.
    fn run(bwrap: &Path, args: &[String]) -> Probe {
        let (boot, modified) = Probe::key(bwrap);
        let out = Command::new(bwrap)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output();
        let (ok, detail) = match out {
            Ok(o) if o.status.success() => (true, String::new()),
            Ok(o) => (false, String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => (false, format!("cannot run {}: {e}", bwrap.display())),
        };
        Probe {
            boot,
            bwrap: bwrap.to_path_buf(),
            modified,
            ok,
            detail,
        }
    }

    fn store(&self, state_home: Option<&Path>) {
        let Some(home) = state_home else { return };
        if std::fs::create_dir_all(home).is_ok()
            && let Ok(text) = serde_json::to_string(self)
        {
            let _ = crate::atomic::write_atomic(&Probe::file(home), text.as_bytes());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// sandbox-exec

struct SandboxExec {
    program: PathBuf,
}

impl Mechanism for SandboxExec {
    fn kind(&self) -> Kind {
        Kind::SandboxExec
    }

    fn wrap(&self, denied: &[Denied], program: &Path, args: &[String]) -> Result<Command, String> {
        let mut cmd = Command::new(&self.program);
        cmd.arg("-p")
            .arg(super::sbpl::paths_profile(denied))
            .arg("--")
            .arg(program)
            .args(args);
        Ok(cmd)
    }
}

/// The probe's arguments: a profile of the form [`super::sbpl::paths_profile`] writes (a denied
/// path that does not exist), running `true`.
fn sandbox_exec_probe() -> Vec<String> {
    let denied = [Denied {
        path: PathBuf::from("/nonexistent/session-lock-floor-probe"),
        owner: super::Owner::Protocol,
    }];
    vec![
        "-p".into(),
        super::sbpl::paths_profile(&denied),
        "--".into(),
        "/usr/bin/true".into(),
    ]
}

fn sandbox_exec(state_home: Option<&Path>) -> Result<SandboxExec, String> {
    let program = find_program("sandbox-exec").ok_or("sandbox-exec not found")?;
    let probe = match Probe::cached(state_home, &program) {
        Some(p) => p,
        None => {
            // Only a success is remembered: without /proc there is no boot to key a failure
            // by, and a failure remembered for good would keep the floor off after a fix.
            let p = Probe::run(&program, &sandbox_exec_probe());
            if p.ok {
                p.store(state_home);
            }
            p
        }
    };
    if probe.ok {
        Ok(SandboxExec { program })
    } else {
        Err(format!("sandbox-exec does not run here: {}", probe.detail))
    }
}

// ---------------------------------------------------------------------------------------------
// Landlock

struct Landlock;

/// Whether this kernel has Landlock ABI 3 (Linux 6.2: truncation covered), without
/// restricting anything.
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Result<(), String> {
    use landlock::{ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V3))
        .and_then(|r| r.create())
        .map(|_| ())
        .map_err(|e| format!("Landlock (ABI 3, Linux 6.2) is not available: {e}"))
}

#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> Result<(), String> {
    Err("Landlock is Linux only".into())
}

impl Mechanism for Landlock {
    fn kind(&self) -> Kind {
        Kind::Landlock
    }

    #[cfg(target_os = "linux")]
    fn wrap(&self, denied: &[Denied], program: &Path, args: &[String]) -> Result<Command, String> {
        if denied.is_empty() {
            return Err(
                "nothing to deny (a Landlock domain without rules would refuse every write)".into(),
            );
        }
        restrict(denied)?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        Ok(cmd)
    }

    #[cfg(not(target_os = "linux"))]
    fn wrap(&self, _: &[Denied], _: &Path, _: &[String]) -> Result<Command, String> {
        Err("Landlock is Linux only".into())
    }
}

/// Restricts this process (and all it starts) so that `denied` cannot be written: every write
/// right is granted beneath each entry of each ancestor of a denied path, but not to the
/// denied paths, the ancestors themselves (see the module doc), or symlinks found there.
#[cfg(target_os = "linux")]
fn restrict(denied: &[Denied]) -> Result<(), String> {
    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus,
    };
    let abi = ABI::V5;
    let all = AccessFs::from_write(abi);
    let file = AccessFs::from_file(abi) & all;
    let denied: Vec<&Path> = denied.iter().map(|d| d.path.as_path()).collect();
    let mut ancestors: Vec<&Path> = denied.iter().flat_map(|d| d.ancestors().skip(1)).collect();
    ancestors.sort();
    ancestors.dedup();
    let fail = |e: &dyn std::fmt::Display| format!("cannot set up Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.create())
        .map_err(|e| fail(&e))?;
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if denied.contains(&path.as_path()) || ancestors.binary_search(&path.as_path()).is_ok()
            {
                continue;
            }
            let Ok(kind) = e.file_type() else { continue };
            let rights = if kind.is_symlink() {
                continue;
            } else if kind.is_dir() {
                all
            } else {
                file
            };
            let Ok(fd) = PathFd::new(&path) else { continue };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(|e| fail(&e))?;
        }
    }
    let status = ruleset.restrict_self().map_err(|e| fail(&e))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced by this kernel".into());
    }
    Ok(())
}
