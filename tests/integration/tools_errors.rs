//! Failures people read: `--json` failures are one JSON object on stdout, clap's own errors
//! start with the tool's name, and errors name the real file.

use crate::support::lifecycle::Repo;
use serde_json::Value;

fn run(repo: &Repo, tool: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool(tool);
    c.args(args);
    repo.run(c)
}

/// The one JSON object a failed `--json` run prints.
#[track_caller]
fn json_failure(out: &str, error: &str, code: i32) -> Value {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stdout: {out}");
    let v: Value = serde_json::from_str(lines[0]).expect("a JSON object");
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"], error, "{v}");
    assert_eq!(v["code"], code, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    v
}

#[test]
fn json_failures_are_one_object_with_a_stable_error_code() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let (code, out, err) = run(&repo, "claim", &["api", "--json"]);
    assert_eq!(code, 6, "{err}");
    json_failure(&out, "not-found", 6);
    assert!(err.starts_with("claim: "), "{err}");

    let (code, out, _) = run(&repo, "release", &["api", "--json"]);
    assert_eq!(code, 6);
    let v = json_failure(&out, "not-found", 6);
    assert!(
        v["message"].as_str().unwrap().contains("not claimed"),
        "{v}"
    );

    let (code, out, _) = run(&repo, "wait-milestone", &["9", "--json"]);
    assert_eq!(code, 6);
    json_failure(&out, "not-found", 6);

    let (code, out, _) = run(
        &repo,
        "wait-milestone",
        &["api", "--timeout", "99999", "--json"],
    );
    assert_eq!(code, 8);
    json_failure(&out, "refused", 8);

    let (code, out, _) = run(
        &repo,
        "build-renderer",
        &["--json", "--", "/nonexistent/build"],
    );
    assert_eq!(code, 1);
    json_failure(&out, "failure", 1);
}

#[test]
fn clap_errors_start_with_the_tool_name() {
    let repo = Repo::new();
    for tool in [
        "claim",
        "release",
        "status",
        "wait-milestone",
        "build-renderer",
        "reload-plugin",
        "guard",
    ] {
        let (code, out, err) = run(&repo, tool, &["--no-such-flag"]);
        assert_eq!(code, 2, "{tool}: {err}");
        assert!(
            err.starts_with(&format!("{tool}: unexpected argument '--no-such-flag'")),
            "{tool}: {err}"
        );
        assert!(out.is_empty(), "{tool}: {out}");
    }
    let (code, out, err) = run(&repo, "status", &["--json", "--timeout", "x"]);
    assert_eq!(code, 2, "{err}");
    json_failure(&out, "usage", 2);
    assert!(err.starts_with("status: "), "{err}");
    // --help still prints as it did, exit 0.
    let (code, out, _) = run(&repo, "claim", &["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Examples:"), "{out}");
}

#[test]
fn archive_errors_name_the_real_file() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 0);
    repo.write("session-lock/api.done", "{\"stream\":\"api\"}");
    // history/ cannot be made: a file stands where the folder goes.
    repo.write("session-lock/history", "not a folder");
    let (code, _, err) = run(&repo, "status", &["--archive"]);
    assert_eq!(code, 1, "{err}");
    let history = repo.path("session-lock/history");
    assert!(
        err.starts_with("status: cannot archive the round: cannot create ")
            && err.contains(&history.display().to_string()),
        "{err}"
    );
}

#[test]
fn guard_in_a_terminal_or_with_help_shows_usage_and_examples() {
    let repo = Repo::new();
    let (code, out, _) = run(&repo, "guard", &["--help"]);
    assert_eq!(code, 0);
    for needle in [
        "Examples:",
        "guard install",
        "guard doctor",
        "guard log --since 1h",
        "guard uninstall",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    let (_, out, _) = run(&repo, "guard", &["explain", "--help"]);
    assert!(
        out.contains("Exit codes: 0 the verdict is allow; 1 the verdict is block"),
        "{out}"
    );
}

#[test]
fn default_commands_never_download_and_name_the_key_to_set() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let (code, _, err) = run(&repo, "build-renderer", &[]);
    assert_eq!(code, 6, "{err}");
    assert!(
        err.starts_with(
            "build-renderer: `npx --no-install vite build` runs vite, which this repo does not have"
        ) && err.contains("set build.command in session-lock/config.json"),
        "{err}"
    );
    assert!(!repo.exists("node_modules"), "nothing was installed");

    // The protocol's app layout: a solution tsconfig.json over the node and web projects; the
    // release checks derived from it typecheck both, with the project's own tsc.
    repo.write(
        "tsconfig.json",
        r#"{"files": [], "references": [{"path": "./tsconfig.node.json"}, {"path": "./tsconfig.web.json"}]}"#,
    );
    repo.write("tsconfig.node.json", "{}");
    repo.write("tsconfig.web.json", "{}");
    repo.commit(
        &["tsconfig.json", "tsconfig.node.json", "tsconfig.web.json"],
        "ts",
    );
    repo.claim("alice", "api");
    let mut c = repo.tool_as("release", "alice");
    c.arg("api");
    let (code, _, err) = repo.run(c);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("npx --no-install tsc --noEmit -p tsconfig.node.json")
            && err.contains("runs tsc, which this repo does not have")
            && err.contains("set releaseChecks"),
        "{err}"
    );
    assert!(
        !err.contains("release: running npx"),
        "the check did not run: {err}"
    );
}

#[test]
fn output_tails_are_shown_without_terminal_codes() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.config(&serde_json::json!({"releaseChecks": ["printf '\\033[31mTS2304: no x\\033[0m\\n'; exit 2"]}));
    repo.claim("alice", "api");
    let mut c = repo.tool_as("release", "alice");
    c.args(["api", "--json"]);
    let (code, out, _) = repo.run(c);
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["checks"][0]["tail"], "TS2304: no x", "{v}");
}

#[test]
fn guard_typed_in_a_terminal_prints_usage_at_once() {
    crate::require_tmux!();
    let repo = Repo::new();
    let pane = crate::support::tmux::Pane::start(
        crate::support::lifecycle::bin("guard"),
        &repo.root,
        &[],
        200,
        50,
    );
    // Well before the hook's 5 s deadline.
    let (ok, screen) = pane.wait_for(std::time::Duration::from_secs(3), |s| {
        crate::support::tmux::Pane::exit_code(s).is_some()
    });
    assert!(ok, "{screen}");
    assert_eq!(
        crate::support::tmux::Pane::exit_code(&screen),
        Some(2),
        "{screen}"
    );
    assert!(
        screen.contains("stdin is a terminal") && screen.contains("Examples:"),
        "{screen}"
    );
    assert!(!screen.contains("allowing"), "{screen}");
}
