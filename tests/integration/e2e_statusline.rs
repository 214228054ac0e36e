//! The status line and the committed launcher in a REAL interactive Claude Code session under
//! tmux, against the fake model: a repo wired by plain `guard install` (no `--guard`, so the
//! hooks, the MCP server and the status line all run through session-lock/guard-hook and find
//! the suite on PATH), the status line showing the session's state as it changes.

use crate::support::claude::require_claude;
use crate::support::fake_model::{FakeModel, Turn};
use crate::support::lifecycle::{Repo, bin};
use crate::support::tmux::Pane;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[test]
fn the_status_line_shows_the_stream_an_interactive_session_claims() {
    let claude = require_claude!();
    if !crate::support::tmux::available() {
        return;
    }
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.lock("ui", "bob", &["src/ui/**"], 1, 3 * 60_000);
    let mut c = repo.tool("guard");
    c.arg("install");
    let (code, out, err) = repo.run(c);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("status line: added to .claude/settings.local.json"),
        "{out}"
    );

    // What a person did once: onboarding done, this folder trusted, the key approved.
    let home = repo.base.join("cli-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".claude.json"),
        json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
            "projects": {repo.root.to_string_lossy(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
        })
        .to_string(),
    )
    .unwrap();
    let model = FakeModel::start(vec![
        Turn::tool_use(
            "Bash",
            json!({"command": "claim api", "description": "claim"}),
        )
        .when("CLAIM-PROMPT"),
        Turn::text("Claimed it.").when("CLAIM-PROMPT").repeat(3),
    ]);
    let suite = Path::new(bin("guard")).parent().unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", suite.display());
    let env = [
        ("PATH", path),
        ("HOME", home.display().to_string()),
        ("SESSION_LOCK_HOME", repo.home.display().to_string()),
        ("ANTHROPIC_BASE_URL", model.base_url()),
        ("ANTHROPIC_API_KEY", "dummy".to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
        ("CLAUDE_CODE_MAX_RETRIES", "0".to_string()),
    ];
    let command = format!(
        "env -u CLAUDECODE -u CLAUDE_PROJECT_DIR -u CLAUDE_CODE_SESSION_ID '{}' --permission-mode default --allowedTools Bash",
        claude.bin().display()
    );
    let pane = Pane::start(&command, &repo.root, &env, 200, 50);

    // At start: no stream yet, the other stream with its heartbeat age; no question about the
    // MCP server (its approval is in the person's settings).
    let (ok, screen) = pane.wait_for(Duration::from_secs(60), |s| {
        s.contains("session-lock: no stream claimed (claim <stream>) · others: ui 3m")
    });
    assert!(ok, "the status line at start:\n{screen}");
    assert!(!screen.contains("New MCP server found"), "{screen}");

    pane.keys(&["CLAIM-PROMPT claim the api stream"]);
    let (ok, screen) = pane.wait_for(Duration::from_secs(20), |s| {
        s.contains("CLAIM-PROMPT claim")
    });
    assert!(ok, "{screen}");
    pane.keys(&["Enter"]);
    let (ok, screen) = pane.wait_for(Duration::from_secs(60), |s| {
        s.contains("Claimed it.") && s.contains("session-lock: you hold api · others: ui 3m")
    });
    assert!(ok, "after the claim:\n{screen}");
    let lock = repo
        .lock_json("api")
        .expect("the hook, run through the launcher, wrote the lock");
    assert!(lock["sessionId"].as_str().is_some_and(|s| !s.is_empty()));

    // The messaging server of .mcp.json, started through the launcher, gave its tools by the
    // time the person asked (a request the client makes at start may come before the server
    // has answered).
    let asked = model
        .requests()
        .into_iter()
        .find(|r| r.to_string().contains("CLAIM-PROMPT"))
        .expect("the model was asked to claim");
    assert!(
        asked
            .to_string()
            .contains("mcp__session-lock__send_session_message"),
        "the MCP tools reached the model"
    );
}
