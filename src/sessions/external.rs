//! An external live-sessions file an app publishes (`{"pid": <app pid>, "sessions":
//! [{"sessionId": "…", "cwd": "…"}]}`). Missing, corrupt, or naming a dead app: the answer is
//! "unknown", never "nobody" — before the app publishes it, there is no file at all.

use super::LiveSession;
use std::path::Path;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    pid: u32,
    #[serde(default)]
    proc_start: Option<String>,
    sessions: Vec<Row>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    session_id: String,
    #[serde(default)]
    cwd: String,
}

/// The live sessions the file lists, or why it cannot be trusted.
pub fn read(path: &Path) -> Result<Vec<LiveSession>, String> {
    let text = crate::atomic::read_regular(path, crate::atomic::MAX_READ)
        .map_err(|e| format!("live-sessions file {}: {e}", path.display()))?;
    let file: File = serde_json::from_str(&text)
        .map_err(|e| format!("live-sessions file {} is corrupt: {e}", path.display()))?;
    if !crate::liveness::is_alive(file.pid, file.proc_start.as_deref()) {
        return Err(format!(
            "live-sessions file {} names app pid {}, which is not running",
            path.display(),
            file.pid
        ));
    }
    Ok(file
        .sessions
        .into_iter()
        .map(|r| LiveSession {
            session_id: r.session_id,
            cwd: r.cwd,
            pid: Some(file.pid),
            source: "external",
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_answers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.json");
        assert!(read(&p).unwrap_err().contains("live.json"));
        std::fs::write(&p, "{oops").unwrap();
        assert!(read(&p).unwrap_err().contains("corrupt"));
        let dead = crate::liveness::test_process::exited();
        std::fs::write(&p, format!(r#"{{"pid":{dead},"sessions":[]}}"#)).unwrap();
        assert!(read(&p).unwrap_err().contains("not running"));
        let me = std::process::id();
        std::fs::write(
            &p,
            format!(r#"{{"pid":{me},"sessions":[{{"sessionId":"a","cwd":"/r"}}]}}"#),
        )
        .unwrap();
        assert_eq!(read(&p).unwrap().len(), 1);
    }
}
