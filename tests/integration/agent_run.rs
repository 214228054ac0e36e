//! run-agent through its binary with the real Claude Code CLI and the fake model: one turn, a
//! resume, an API error, a timeout, env profiles, and what it answers without a CLI at all.

use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_harness::{RunAgent, gone_soon, write_mode};
use crate::support::claude::{Claude, Home, require_claude};
use crate::support::fake_model::{Block, FakeModel, MessagesRequest, Turn};
use crate::support::repo::GitRepo;

fn path_str(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// run-agent asking `prompt` of `model`, with `repo` as its cwd.
fn ask(claude: &Claude, home: &Home, model: &FakeModel, repo: &GitRepo, prompt: &str) -> RunAgent {
    RunAgent::new(Some(claude), home, &model.base_url()).args([
        "--cwd",
        &path_str(repo.path()),
        "--prompt",
        prompt,
    ])
}

/// A model whose one answer streams for about a minute: a run to stop midway.
fn slow_model() -> FakeModel {
    FakeModel::start(vec![
        Turn::text("slow ".repeat(300)).trickle(Duration::from_millis(200)),
    ])
}

#[test]
fn agent_plain_turn_collects_every_main_text_block() {
    let claude = require_claude!();
    let repo = GitRepo::with_files(&[("notes.txt", "alpha beta\n")]);
    let model = FakeModel::start(vec![
        Turn::blocks(vec![
            Block::text("Looking at the notes."),
            Block::tool_use("Read", json!({"file_path": repo.join("notes.txt")})),
        ]),
        Turn::blocks(vec![
            Block::text("They say alpha."),
            Block::text("And beta."),
        ]),
    ]);
    let home = Home::new();
    let out = ask(&claude, &home, &model, &repo, "-- what do the notes say?")
        .args(["--plugin-id", "review", "--notify-plugin-id", "watcher"])
        .run();
    out.assert_ok();
    let r = &out.result;
    assert_eq!(
        r["text"],
        "Looking at the notes.\n\nThey say alpha.\n\nAnd beta.",
        "{}",
        out.describe("text")
    );
    assert_eq!(r["isError"], false);
    assert!(r["tabId"].as_str().unwrap().starts_with("run:review:"));
    let sid = r["sessionId"].as_str().expect("a session id");
    assert_eq!(sid.len(), 36, "a uuid: {sid}");
    assert!(r["costUsd"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r.get("error").is_none());

    // The prompt reached the model as written (a leading `--` is no flag), with the default model.
    let first = &model.requests()[0];
    assert!(
        first
            .user_texts()
            .join("\n")
            .contains("-- what do the notes say?")
    );
    assert_eq!(first["model"], "claude-sonnet-5-5");
    assert!(model.tool_results()[0].content.contains("alpha beta"));

    // Events: started → session → … → result → done, all labelled.
    let kinds: Vec<&str> = out
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"done"), "{kinds:?}");
    for k in ["session", "text", "toolUse", "toolResult", "result"] {
        assert!(kinds.contains(&k), "{k} missing: {kinds:?}");
    }
    for e in &out.events {
        assert_eq!(e["tabId"], r["tabId"]);
        assert_eq!(e["notify"], "plugin:watcher:event");
    }
    let pid = out.events[0]["pid"].as_u64().unwrap() as u32;
    assert!(gone_soon(pid), "the CLI {pid} is gone");
}

#[test]
fn agent_resumes_with_the_returned_session_id() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![
        Turn::text("The first answer."),
        Turn::text("The second answer."),
    ]);
    let home = Home::new();
    let cwd = path_str(repo.path());
    let first = RunAgent::new(Some(&claude), &home, &model.base_url())
        .json(&json!({"cwd": cwd, "prompt": "first question", "tabId": "mine"}))
        .run();
    first.assert_ok();
    assert_eq!(first.result["tabId"], "mine");
    let sid = first.result["sessionId"].as_str().unwrap().to_string();

    let second = RunAgent::new(Some(&claude), &home, &model.base_url())
        .args([
            "--cwd",
            &cwd,
            "--prompt",
            "second question",
            "--session-id",
            &sid,
        ])
        .run();
    second.assert_ok();
    assert_eq!(second.result["sessionId"], sid.as_str());
    assert_eq!(second.result["text"], "The second answer.");
    let request = model.last_request().unwrap();
    let users = request.user_texts().join("\n");
    assert!(users.contains("first question"), "{users}");
    assert!(users.contains("second question"), "{users}");
    let said: Vec<String> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(said.join("").contains("The first answer."), "{said:?}");
}

#[test]
fn agent_api_error_is_a_failed_run_with_the_clis_text() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::error(500, "boom always").repeat(5)]);
    let home = Home::new();
    let out = ask(&claude, &home, &model, &repo, "fail please").run();
    assert_eq!(out.code, Some(1), "{}", out.describe("exit 1"));
    assert_eq!(out.result["ok"], false);
    assert_eq!(out.result["isError"], true);
    let error = out.result["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("boom always"),
        "{error}"
    );
    assert!(out.stderr.contains(error), "the reason on stderr too");
    assert!(out.result["sessionId"].is_string());
}

#[test]
fn agent_timeout_stops_the_cli_and_leaves_no_process() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = slow_model();
    let home = Home::new();
    let out = ask(&claude, &home, &model, &repo, "stream slowly")
        .args(["--timeout-ms", "4000"])
        .run();
    assert_eq!(out.code, Some(5), "{}", out.describe("exit 5"));
    assert_eq!(out.result["ok"], false);
    assert_eq!(out.result["error"], "timeout");
    assert_eq!(out.result["isError"], true);
    assert!(out.duration < Duration::from_secs(20), "{:?}", out.duration);
    let stopping = out.events_of("stopping");
    assert_eq!(stopping.len(), 1, "{}", out.describe("one stopping event"));
    assert_eq!(stopping[0]["reason"], "timeout");
    assert_eq!(stopping[0]["signal"], "SIGINT");
    let pid = out.events_of("started")[0]["pid"].as_u64().unwrap() as u32;
    assert!(gone_soon(pid), "the CLI {pid} survived the timeout");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the CLI {pid} was reaped"
    );
}

const SECRET: &str = "sk-profile-SECRET-7f3a9c1e55d04b2a";

fn profiles(dir: &std::path::Path, base_url: &str, mode: u32) -> std::path::PathBuf {
    let file = dir.join("env-profiles.json");
    let doc = json!({"profiles": [{"id": "work", "description": "fake gateway",
        "env": {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": SECRET}}]});
    write_mode(&file, &doc.to_string(), mode);
    file
}

#[test]
fn agent_unknown_env_profile_fails_before_anything_runs() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::text("must not be asked")]);
    let home = Home::new();
    let file = profiles(home.path(), &model.base_url(), 0o600);
    let out = ask(&claude, &home, &model, &repo, "hi")
        .env("SESSION_LOCK_ENV_PROFILES", &file)
        .args(["--env-profile-id", "wrok"])
        .run();
    assert_eq!(out.code, Some(6), "{}", out.describe("exit 6"));
    assert_eq!(out.result["ok"], false);
    assert_eq!(out.result["sessionId"], Value::Null);
    let error = out.result["error"].as_str().unwrap();
    assert!(
        error.contains("'wrok'") && error.contains("env-profiles.json"),
        "{error}"
    );
    assert!(out.events_of("started").is_empty(), "nothing spawned");
    assert!(model.log().is_empty(), "the model got no request at all");

    // A profile file others can read is refused the same way, before anything runs.
    write_mode(&file, &std::fs::read_to_string(&file).unwrap(), 0o644);
    let out = ask(&claude, &home, &model, &repo, "hi")
        .env("SESSION_LOCK_ENV_PROFILES", &file)
        .args(["--env-profile-id", "work"])
        .run();
    assert_eq!(out.code, Some(8), "{}", out.describe("exit 8"));
    assert!(out.result["error"].as_str().unwrap().contains("chmod 600"));
    assert!(model.log().is_empty());
    assert!(!out.all_output().contains(SECRET));
}

#[test]
fn agent_env_profile_decides_endpoint_and_credential_and_never_shows_it() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    // The model repeats the key back: the answer must not carry it out.
    let model = FakeModel::start(vec![Turn::text(format!("Your key is {SECRET}, right?"))]);
    let home = Home::new();
    let file = profiles(home.path(), &model.base_url(), 0o600);
    // The inherited endpoint is dead and the inherited key is another: only the profile works.
    let out = RunAgent::new(Some(&claude), &home, "http://127.0.0.1:9")
        .env("ANTHROPIC_API_KEY", "inherited-other-account-key")
        .env("ANTHROPIC_AUTH_TOKEN", "inherited-token")
        .env("SESSION_LOCK_ENV_PROFILES", &file)
        .args([
            "--cwd",
            &path_str(repo.path()),
            "--prompt",
            "hi",
            "--env-profile-id",
            " work ",
        ])
        .run();
    out.assert_ok();
    let log = model.log();
    let request = log
        .iter()
        .find(|r| r.target.starts_with("/v1/messages"))
        .unwrap();
    assert_eq!(
        request.header("x-api-key"),
        Some(SECRET),
        "the profile's credential was used"
    );
    assert!(
        request.header("authorization").is_none(),
        "no inherited token"
    );
    assert_eq!(out.result["text"], "Your key is [redacted], right?");
    assert!(
        !out.all_output().contains(SECRET),
        "{}",
        out.describe("secret leaked")
    );
}

#[test]
fn agent_answers_without_a_cli_for_bad_input() {
    let repo = GitRepo::new();
    let home = Home::new();
    let cwd = path_str(repo.path());
    let cases: Vec<(Vec<&str>, Option<Value>, i32, &str)> = vec![
        (vec!["--cwd", &cwd], None, 2, "prompt is required"),
        (vec!["--prompt", "x"], None, 2, "cwd is required"),
        (
            vec!["--cwd", &cwd, "--prompt", "  "],
            None,
            2,
            "prompt is empty",
        ),
        (
            vec!["--cwd", "/nonexistent/dir/x", "--prompt", "x"],
            None,
            6,
            "cwd does not exist",
        ),
        (
            vec!["--cwd", &cwd, "--prompt", "x", "--timeout-ms", "abc"],
            None,
            2,
            "invalid value",
        ),
        (
            vec!["--cwd", &cwd, "--prompt", "x"],
            None,
            6,
            "SESSION_LOCK_CLAUDE_BIN",
        ),
        (
            vec![],
            Some(json!({"cwd": cwd, "promt": "typo"})),
            2,
            "unknown field `promt`",
        ),
        (
            vec![],
            Some(json!({"cwd": cwd, "prompt": "x", "readOnlyScopeRoots": ["/nonexistent/root"]})),
            6,
            "does not resolve",
        ),
    ];
    for (args, json_opts, code, text) in cases {
        let mut run = RunAgent::new(None, &home, "http://127.0.0.1:9").args(&args);
        if let Some(j) = &json_opts {
            run = run.json(j);
        }
        let out = run.run();
        let what = format!("{args:?} {json_opts:?}");
        assert_eq!(out.code, Some(code), "{what}: {}", out.describe(""));
        assert_eq!(out.result["ok"], false, "{what}");
        let error = out.result["error"].as_str().unwrap_or("");
        assert!(error.contains(text), "{what}: {error}");
        assert!(
            out.result["tabId"]
                .as_str()
                .unwrap()
                .starts_with("run:external:")
        );
    }
}

#[test]
fn agent_version_and_doctor_name_the_cli() {
    let claude = require_claude!();
    let home = Home::new();
    let out = std::process::Command::new(crate::agent_harness::RUN_AGENT)
        .arg("--version")
        .env("SESSION_LOCK_CLAUDE_BIN", claude.bin())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.starts_with("run-agent "), "{text}");
    assert!(text.contains(&claude.bin().display().to_string()), "{text}");
    assert!(
        text.contains(crate::support::claude::pinned_version()),
        "{text}"
    );
    let out = std::process::Command::new(crate::agent_harness::RUN_AGENT)
        .arg("doctor")
        .env("SESSION_LOCK_CLAUDE_BIN", claude.bin())
        .env("SESSION_LOCK_HOME", home.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("env profiles: "), "{text}");
    let out = std::process::Command::new(crate::agent_harness::RUN_AGENT)
        .arg("doctor")
        .env("SESSION_LOCK_CLAUDE_BIN", home.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
}

#[test]
fn agent_unknown_resume_id_fails_with_the_clis_words() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::text("must not be asked")]);
    let home = Home::new();
    let unknown = "11111111-2222-4333-8444-555555555555";
    let out = ask(&claude, &home, &model, &repo, "again")
        .args(["--session-id", unknown])
        .run();
    assert_eq!(out.code, Some(1), "{}", out.describe("exit 1"));
    assert_eq!(out.result["isError"], true);
    let error = out.result["error"].as_str().unwrap();
    assert!(
        error.contains("No conversation found") && error.contains(unknown),
        "{error}"
    );
    assert!(
        model
            .log()
            .iter()
            .all(|r| !r.target.starts_with("/v1/messages"))
    );
}

#[test]
fn agent_signal_to_run_agent_interrupts_the_cli_and_leaves_no_process() {
    use rustix::process::{Pid, Signal, kill_process};
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = slow_model();
    let home = Home::new();
    let running = ask(&claude, &home, &model, &repo, "stream slowly").spawn();
    assert!(
        model.wait_for_requests(1, Duration::from_secs(30)),
        "the CLI asked the model"
    );
    let cli = running.events()[0]["pid"].as_u64().unwrap() as u32;
    kill_process(Pid::from_raw(running.pid() as i32).unwrap(), Signal::TERM).unwrap();
    let out = running.wait();
    assert_eq!(out.code, Some(1), "{}", out.describe("exit 1"));
    assert_eq!(out.result["error"], "interrupted");
    assert_eq!(out.events_of("stopping")[0]["reason"], "interrupted");
    assert!(out.duration < Duration::from_secs(20), "{:?}", out.duration);
    assert!(gone_soon(cli), "the CLI {cli} survived");
}

/// Issue 14 item 3: a prompt far over Linux's 128 KiB per-argument limit runs, and reaches the
/// model byte for byte: it goes on the CLI's stdin, never in its argv.
#[test]
fn agent_issue14_a_5_mib_prompt_goes_on_stdin_and_reaches_the_model_intact() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::text("Read it all.")]);
    let home = Home::new();
    // Numbered lines (a cut or a reorder shows), a leading `-` (no flag), shell quotes. Mostly
    // 3-byte characters: the CLI estimates tokens from the string's length and refuses, before
    // any request, a prompt over its context window (between 2.1 and 3.1 million characters);
    // 5 MiB of these lines is about 1.9 million.
    let mut prompt = String::from("- review this diff, 'every' \"line\" of $HOME `x`:\n");
    let mut n = 0;
    while prompt.len() < 5 * 1024 * 1024 {
        prompt.push_str(&format!(
            "+ 行 {n:07} 差分の行です。変更を確認してください、最後まで。\n"
        ));
        n += 1;
    }
    prompt.push_str("END OF DIFF");
    let out = RunAgent::new(Some(&claude), &home, &model.base_url())
        .json(&json!({"cwd": path_str(repo.path()), "prompt": prompt}))
        .run();
    out.assert_ok();
    assert_eq!(out.result["text"], "Read it all.");
    // The CLI puts context blocks of its own (a reminder) beside the prompt's block.
    let first = &model.requests()[0];
    let blocks: Vec<String> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect();
    let longest = blocks.iter().map(String::len).max().unwrap_or(0);
    assert!(
        blocks.contains(&prompt),
        "the prompt reached the model unchanged ({longest} of {} bytes in its longest block)",
        prompt.len()
    );
}
