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
    // Issue 14 item 6: a stable code, the CLI's words beside it, and no error in `text`.
    assert_eq!(out.result["error"], "api_error");
    let error = out.result["errorDetail"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("boom always"),
        "{error}"
    );
    assert_eq!(out.result["text"], "", "the error is not the model's text");
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
    assert_eq!(out.result["error"], "not_found");
    let error = out.result["errorDetail"].as_str().unwrap();
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
    assert!(
        out.result["errorDetail"]
            .as_str()
            .unwrap()
            .contains("chmod 600")
    );
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
            "SESSION_LOCK_CLAUDE_BIN=/",
        ),
        // Issue 14 item 8: a negative timeout, and options that are not one object.
        (
            vec!["--cwd", &cwd, "--prompt", "x", "--timeout-ms", "-5"],
            None,
            2,
            "'-5' is not a timeout: it must be a positive number of milliseconds",
        ),
        (
            vec![],
            Some(json!([cwd, "positional prompt"])),
            2,
            "expected one JSON object of RunAgentOptions, got an array",
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
        let error = out.result["errorDetail"].as_str().unwrap_or("");
        assert!(error.contains(text), "{what}: {error}");
        assert_eq!(out.result["isError"], true, "{what}");
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

/// Issue 14 item 7: resuming a session that does not exist is `session_not_found` (exit 6),
/// found before anything is spawned, whether the id is not a UUID or names no transcript.
#[test]
fn agent_issue14_an_unknown_or_malformed_session_id_is_session_not_found() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::text("must not be asked")]);
    let home = Home::new();
    let unknown = "11111111-2222-4333-8444-555555555555";
    for (id, words) in [
        (
            unknown,
            "no session 11111111-2222-4333-8444-555555555555 to resume",
        ),
        ("not-a-uuid", "sessionId 'not-a-uuid' is not a session id"),
    ] {
        let out = ask(&claude, &home, &model, &repo, "again")
            .args(["--session-id", id])
            .run();
        assert_eq!(out.code, Some(6), "{}", out.describe("exit 6"));
        assert_eq!(out.result["error"], "session_not_found");
        assert_eq!(out.result["isError"], true);
        assert_eq!(out.result["sessionId"], Value::Null, "no phantom session");
        let detail = out.result["errorDetail"].as_str().unwrap();
        assert!(detail.contains(words), "{detail}");
        assert!(out.events_of("started").is_empty(), "nothing spawned");
    }
    assert!(model.log().is_empty(), "the model got no request at all");
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

/// The `sleep <token>…` processes, as `ps` lists them (`pid ppid stat args`, zombies included).
fn ps_matching(token: &str) -> Vec<String> {
    let out = std::process::Command::new("ps")
        .args(["-eo", "pid,ppid,stat,args"])
        .output()
        .expect("ps runs");
    let sleep = format!("sleep {token}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            let args = l.split_whitespace().skip(3).collect::<Vec<_>>().join(" ");
            args.starts_with(&sleep) || (l.contains(&sleep) && l.contains("<defunct>"))
        })
        .map(str::to_string)
        .collect()
}

/// A Bash command that leaves three sleeps behind, each escaping differently: a subshell's
/// background job (re-parented when the subshell exits), `nohup … &`, and a `setsid` double
/// fork (a session of its own). `tail` then decides how long the command itself runs.
fn escaping_command(token: &str, tail: &str) -> String {
    format!(
        "(sleep {token}1 &) ; nohup sleep {token}2 >/dev/null 2>&1 & \
         setsid sh -c 'sleep {token}3 &' </dev/null >/dev/null 2>&1 ; echo started; {tail}"
    )
}

/// Issue 14 item 2: nothing the turn started outlives it, however it ends: normally, at its
/// timeout, or on SIGTERM to run-agent. `--keep-background` keeps them.
#[test]
fn agent_issue14_no_process_of_the_turn_outlives_the_run() {
    use rustix::process::{Pid, Signal, kill_process};
    let claude = require_claude!();
    let repo = GitRepo::new();
    let home = Home::new();
    // Unique sleep lengths name this test's processes for `ps` (`sleep 3014.<pid><n>1`).
    let base = format!("3014.{}", std::process::id());
    for (n, ending) in ["normal", "timeout", "sigterm", "keep"].iter().enumerate() {
        let token = format!("{base}{n}");
        let tail = if *ending == "normal" || *ending == "keep" {
            "true"
        } else {
            "sleep 600"
        };
        let model = FakeModel::start(vec![
            Turn::tool_use(
                "Bash",
                json!({"command": escaping_command(&token, tail), "description": "start"}),
            ),
            Turn::text("started them"),
        ]);
        let mut run = ask(&claude, &home, &model, &repo, "start some sleeps");
        match *ending {
            "timeout" => run = run.args(["--timeout-ms", "6000"]),
            "keep" => run = run.args(["--keep-background"]),
            _ => {}
        }
        let running = run.spawn();
        if *ending == "sigterm" {
            let t0 = std::time::Instant::now();
            while ps_matching(&token).len() < 3 && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(ps_matching(&token).len(), 3, "the three sleeps started");
            kill_process(Pid::from_raw(running.pid() as i32).unwrap(), Signal::TERM).unwrap();
        }
        let out = running.wait();
        let expect = match *ending {
            "timeout" => Some(5),
            "sigterm" => Some(1),
            _ => Some(0),
        };
        assert_eq!(out.code, expect, "{ending}: {}", out.describe(""));
        let left = ps_matching(&token);
        if *ending == "keep" {
            // The Bash command runs in a session of its own, so all three are background
            // processes of the turn, and all three are kept.
            assert_eq!(left.len(), 3, "kept: {left:?}");
            for line in left {
                let pid: i32 = line.split_whitespace().next().unwrap().parse().unwrap();
                let _ = kill_process(Pid::from_raw(pid).unwrap(), Signal::KILL);
            }
        } else {
            assert!(left.is_empty(), "{ending}: left running: {left:?}");
        }
    }
}

/// `run-agent <args>` as a second process of the same user, sharing the state home `state`.
fn second_process(state: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::agent_harness::RUN_AGENT)
        .args(args)
        .env("SESSION_LOCK_HOME", state)
        .output()
        .expect("run-agent runs")
}

/// Issue 14 item 4: another process lists the run and interrupts it by its tab id; the run
/// ends `interrupted` the way a timeout ends it, and nothing of it is left running.
#[test]
fn agent_issue14_interrupt_by_tab_id_from_a_second_process() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let home = Home::new();
    let state = tempfile::tempdir().unwrap();
    let token = format!("3017.{}", std::process::id());
    let model = FakeModel::start(vec![
        Turn::tool_use(
            "Bash",
            json!({"command": escaping_command(&token, "sleep 600"), "description": "work"}),
        ),
        Turn::text("never reached"),
    ]);
    let running = ask(&claude, &home, &model, &repo, "work for a while")
        .env("SESSION_LOCK_HOME", state.path())
        .args(["--tab-id", "review:42"])
        .spawn();
    let t0 = std::time::Instant::now();
    while ps_matching(&token).len() < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let listed = second_process(state.path(), &["list", "--json"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).expect("list --json is JSON");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["tabId"], "review:42");
    assert_eq!(runs[0]["pid"], running.pid());

    let stopped = second_process(state.path(), &["interrupt", "review:42"]);
    let said = String::from_utf8_lossy(&stopped.stdout);
    assert_eq!(stopped.status.code(), Some(0), "{said}");
    assert!(said.contains("interrupted review:42"), "{said}");
    let out = running.wait();
    assert_eq!(out.code, Some(1), "{}", out.describe("exit 1"));
    assert_eq!(out.result["error"], "interrupted");
    assert_eq!(out.result["isError"], true);
    assert_eq!(out.events_of("stopping")[0]["reason"], "interrupted");
    assert!(ps_matching(&token).is_empty(), "{:?}", ps_matching(&token));
    let cli = out.events_of("started")[0]["pid"].as_u64().unwrap() as u32;
    assert!(gone_soon(cli), "the CLI {cli} survived");

    // Gone from the list; interrupting it again says so (exit 6).
    let listed = second_process(state.path(), &["list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");
    let again = second_process(state.path(), &["interrupt", "review:42"]);
    assert_eq!(again.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&again.stderr).contains("no run with tabId 'review:42'"));
}

/// Issue 14 item 1: a background Agent finishes right after the main answer and the CLI runs a
/// notification turn for it whose text streams before the first result. `text` is the prompt's
/// answer only and `costUsd` leaves the extra turn out, in every one of 20 runs.
#[test]
fn agent_issue14_a_background_tasks_turn_never_leaks_into_text() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let home = Home::new();
    for round in 0..20 {
        let model = FakeModel::start(vec![
            Turn::blocks(vec![
                Block::text("MAIN-ONE"),
                Block::tool_use(
                    "Agent",
                    json!({"description": "bg task", "prompt": "SUBAGENT-TASK look around",
                        "subagent_type": "general-purpose"}),
                ),
            ])
            .when("MAIN-PROMPT"),
            // The subagent answers once the main thread has given its final answer.
            Turn::text("SUBAGENT REPORT")
                .when("SUBAGENT-TASK")
                .delay(Duration::from_millis(800)),
            Turn::blocks(vec![
                Block::text("MAIN-TWO"),
                Block::text("MAIN-THREE final"),
            ])
            .when("MAIN-PROMPT"),
            Turn::text("NOTIFICATION-ANSWER-TO-BACKGROUND-TASK").when("MAIN-PROMPT"),
        ]);
        let out = ask(&claude, &home, &model, &repo, "MAIN-PROMPT: look around").run();
        out.assert_ok();
        let what = format!("round {round}: {}", out.describe(""));
        assert_eq!(
            out.result["text"], "MAIN-ONE\n\nMAIN-TWO\n\nMAIN-THREE final",
            "{what}"
        );
        let results = out.events_of("result");
        let total = results[0]["costUsd"].as_f64().unwrap();
        let cost = out.result["costUsd"].as_f64().unwrap();
        // The notification turn ran (and was answered), and its cost is not the prompt's.
        let notified = out
            .events_of("text")
            .iter()
            .any(|e| e["text"] == "NOTIFICATION-ANSWER-TO-BACKGROUND-TASK");
        assert!(notified, "{what}");
        assert!(
            cost > 0.0 && cost < total,
            "cost {cost} of total {total}: {what}"
        );
    }
}

/// Issue 14 item 5: with no SESSION_LOCK_CLAUDE_BIN and no `claude` on PATH, the pinned CLI in
/// the install script's cache is found; `doctor` says where it looked and what it found.
#[test]
fn agent_issue14_the_pinned_cli_is_found_by_default_and_doctor_says_where_it_looked() {
    let claude = require_claude!();
    let cache = tempfile::tempdir().unwrap();
    let version = crate::support::claude::pinned_version();
    let bin_dir = cache
        .path()
        .join(format!("claude-code-{version}/node_modules/.bin"));
    std::fs::create_dir_all(&bin_dir).unwrap();
    let pinned = bin_dir.join("claude");
    std::os::unix::fs::symlink(claude.bin(), &pinned).unwrap();
    let doctor = |cache: &std::path::Path, arg: &str| {
        std::process::Command::new(crate::agent_harness::RUN_AGENT)
            .arg(arg)
            .env_remove("SESSION_LOCK_CLAUDE_BIN")
            .env("PATH", "/usr/bin:/bin")
            .env("SESSION_LOCK_CACHE", cache)
            // No installer's `~/.local/bin/claude` or `~/.claude/local/claude` either.
            .env("HOME", cache)
            .output()
            .unwrap()
    };
    let out = doctor(cache.path(), "doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let pinned = pinned.display().to_string();
    assert!(
        text.contains(&format!("claude: {pinned} ({version}")),
        "{text}"
    );
    assert!(text.contains("  PATH: claude is not on it"), "{text}");
    assert!(
        text.contains(&format!("  pinned cache: {pinned} (found)")),
        "{text}"
    );
    let out = doctor(cache.path(), "--version");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&pinned));

    if cfg!(target_os = "macos")
        && ["/opt/homebrew/bin/claude", "/usr/local/bin/claude"]
            .iter()
            .any(|p| std::path::Path::new(p).exists())
    {
        eprintln!(
            "skipped: the not-found half: this Mac has a Homebrew claude, which is looked at"
        );
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let out = doctor(empty.path(), "doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{text}");
    assert!(text.contains("claude: not found"), "{text}");
    assert!(
        text.contains("pinned cache: ") && text.contains("(not there)"),
        "{text}"
    );
}
