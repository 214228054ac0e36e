//! Things the user (and the model) must hear about once per session, not on every call: a
//! corrupt lock that the guard keeps protecting, a config that could not be loaded (the
//! protocol's defaults apply), a heartbeat that could not be written, a lock that went stale
//! or was taken over.
//!
//! A notice is shown at most once per session and key: `<state home>/notices/<session>.json`
//! lists the keys already shown. That file is read only when there is a notice to give, so the
//! hot path does not pay for it.

use std::path::{Path, PathBuf};

/// One notice: `key` says what it is about (shown once per session), `text` is for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub key: String,
    pub text: String,
}

impl Notice {
    pub fn new(key: impl Into<String>, text: impl Into<String>) -> Notice {
        Notice {
            key: key.into(),
            text: text.into(),
        }
    }
}

/// The most keys remembered per session (the oldest are dropped).
const MAX_KEYS: usize = 200;

fn file(home: &Path, session_id: &str) -> Option<PathBuf> {
    crate::sessions::registry::file_in(&home.join("notices"), session_id, "json")
}

/// The notices this session has not been shown yet; they are recorded as shown. Without a
/// state home or a session id every notice is new.
pub fn unseen(home: Option<&Path>, session_id: &str, notices: Vec<Notice>) -> Vec<Notice> {
    if notices.is_empty() {
        return notices;
    }
    let Some(path) = home.and_then(|h| file(h, session_id)) else {
        return notices;
    };
    let mut seen: Vec<String> = crate::atomic::read_regular(&path, crate::atomic::MAX_READ)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let fresh: Vec<Notice> = notices
        .into_iter()
        .filter(|n| !seen.contains(&n.key))
        .collect();
    if !fresh.is_empty() {
        seen.extend(fresh.iter().map(|n| n.key.clone()));
        let cut = seen.len().saturating_sub(MAX_KEYS);
        seen.drain(..cut);
        if let Some(dir) = path.parent()
            && crate::atomic::create_dirs(dir).is_ok()
            && let Ok(text) = serde_json::to_string(&seen)
        {
            let _ = crate::atomic::write_atomic(&path, text.as_bytes());
        }
    }
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_shown_once_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let n = || vec![Notice::new("corrupt:api", "api.lock is corrupt")];
        assert_eq!(unseen(Some(dir.path()), "s1", n()).len(), 1);
        assert!(unseen(Some(dir.path()), "s1", n()).is_empty());
        assert_eq!(
            unseen(Some(dir.path()), "s2", n()).len(),
            1,
            "another session"
        );
        assert_eq!(unseen(None, "s1", n()).len(), 1, "no state home: always");
    }
}
