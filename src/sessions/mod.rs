//! Who is running: Claude Code's own registry of live sessions, the suite's registry (kept by
//! the guard), and an optional external live-sessions file. Used by the git rules ("does anyone
//! else work in this tree?"), by `status`, and by messaging.

pub mod caller;
pub mod claude;
pub mod external;
pub mod registry;

use std::path::{Path, PathBuf};

/// The per-user state folder: `SESSION_LOCK_HOME`, else the platform's user state dir
/// ([`crate::platform::Host::state_home`]).
pub fn state_home() -> Option<PathBuf> {
    crate::platform::this().state_home()
}

/// The user's home folder (`HOME`, or `USERPROFILE` on Windows).
pub fn home_dir() -> Option<PathBuf> {
    crate::platform::this().home()
}

/// One live session somebody reported.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSession {
    pub session_id: String,
    pub cwd: String,
    pub pid: Option<u32>,
    /// Which source saw it: `claude`, `suite` or `external`.
    pub source: &'static str,
}

/// The answer to "does anyone else work in this tree?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presence {
    /// A source could not be trusted; the reason says which and why. Git rules block.
    Unknown(String),
    /// Nobody but the caller.
    Alone,
    /// These others.
    Others(Vec<LiveSession>),
}

/// True when `cwd` is the repo root or below it (path components, the repo's case rules).
fn within(paths: &crate::paths::RepoPaths, cwd: &str) -> bool {
    !matches!(paths.locate(cwd, cwd), crate::paths::RepoPath::Outside)
}

/// Asks every source who works in the tree at `root`, besides `my_session`.
pub fn presence(
    root: &Path,
    my_session: &str,
    external_file: Option<&Path>,
    case_insensitive: bool,
) -> Presence {
    if my_session.is_empty() {
        return Presence::Unknown("the hook payload carries no session_id".into());
    }
    // Built once: it resolves the root on disk, and every listed session is checked against it.
    let paths = crate::paths::RepoPaths::new(root, case_insensitive);
    let mut others: Vec<LiveSession> = Vec::new();
    let mut seen_me = false;
    let mut consider = |s: LiveSession, seen_me: &mut bool| {
        if s.session_id == my_session {
            *seen_me = true;
        } else if within(&paths, &s.cwd) && !others.iter().any(|o| o.session_id == s.session_id) {
            others.push(s);
        }
    };
    for s in claude::live_sessions() {
        consider(s, &mut seen_me);
    }
    if let Some(home) = state_home() {
        for s in registry::live_sessions(&home) {
            consider(s, &mut seen_me);
        }
    }
    if let Some(file) = external_file {
        match external::read(file) {
            Ok(list) => {
                for s in list {
                    consider(s, &mut seen_me);
                }
            }
            Err(reason) => return Presence::Unknown(reason),
        }
        // The external file lists only its app's sessions; a terminal session is not in it,
        // and that is fine: the registries above saw it.
    }
    if !seen_me {
        return Presence::Unknown(format!(
            "no session registry lists this session ({}), so the others cannot be told apart from it",
            crate::state::short_id(my_session)
        ));
    }
    if others.is_empty() {
        Presence::Alone
    } else {
        Presence::Others(others)
    }
}
