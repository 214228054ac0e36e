//! `reload-plugin` as a real process against a fake bridge on 127.0.0.1, in a temporary git
//! repository whose typecheck and emit are shell one-liners set in session-lock/config.json.
#![cfg(unix)]

use crate::reload_bridge::FakeBridge;
use crate::support::repo::GitRepo;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A repository with four plugins, and a scratch folder outside it (user data, logs).
struct Fixture {
    repo: GitRepo,
    _outside: tempfile::TempDir,
    root: PathBuf,
    /// Outside the repo: the fake commands log here.
    calls_log: PathBuf,
    /// Outside the repo: the app's user-data folder.
    user_data: PathBuf,
}

impl Fixture {
    /// `typecheck` and `emit` are shell lines; `{log}` in them is the calls log. `extra` holds
    /// more `reloadPlugin` keys.
    fn new(typecheck: &str, emit: &str, extra: Value) -> Fixture {
        let repo = GitRepo::with_files(&[
            (
                "plugins-library/notes/main/index.ts",
                "export const a = 1;\n",
            ),
            ("plugins-library/notes/main/index.js", "exports.a = 1;\n"),
            ("plugins-library/notes/main/lib/util.js", "exports.u = 1;\n"),
            ("plugins-library/notes/ui/index.html", "<p>notes</p>\n"),
            (
                "plugins-library/other/main/index.ts",
                "export const b = 1;\n",
            ),
            ("plugins-library/other/main/index.js", "exports.b = 1;\n"),
            ("plugins-library/third/main/index.js", "exports.c = 1;\n"),
            (
                "plugins-library/ai-chat/main/index.js",
                "exports.chat = 1;\n",
            ),
        ]);
        let outside = tempfile::tempdir().expect("temp dir");
        let calls_log = outside.path().join("calls.log");
        let log = calls_log.to_str().expect("utf-8").to_string();
        let mut reload = json!({
            "typecheck": typecheck.replace("{log}", &log),
            "emit": emit.replace("{log}", &log),
        });
        if let (Some(r), Some(e)) = (reload.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                r.insert(k.clone(), v.clone());
            }
        }
        repo.write(
            "session-lock/config.json",
            &json!({ "reloadPlugin": reload }).to_string(),
        );
        repo.commit_all("reload config");
        Fixture {
            root: repo.path().to_path_buf(),
            user_data: outside.path().join("user-data"),
            calls_log,
            repo,
            _outside: outside,
        }
    }

    /// The usual fixture: a clean typecheck, and an emit that rewrites this plugin's output and
    /// another plugin's (as `tsc -p tsconfig.plugins.json` does).
    fn usual() -> Fixture {
        Fixture::new(
            "echo typecheck >> {log}",
            "echo emit >> {log}; echo '// emitted' >> plugins-library/notes/main/index.js; echo '// emitted' >> plugins-library/other/main/index.js",
            json!({}),
        )
    }

    fn write(&self, rel: &str, text: &str) {
        self.repo.write(rel, text);
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(&self.calls_log).unwrap_or_default()
    }

    fn git_status(&self) -> String {
        let out = self.repo.git(&["status", "--porcelain"]);
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn tool(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_reload-plugin"));
        c.current_dir(&self.root)
            .arg("--repo")
            .arg(&self.root)
            .env_remove("SESSION_LOCK_BRIDGE_URL")
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.tool()
            .arg("--user-data")
            .arg(&self.user_data)
            .args(args)
            .output()
            .expect("run reload-plugin")
    }
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one json document ({e}): {:?}", text(out)))
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn the_pipeline_runs_every_step_and_reports_outside_writes() {
    let fx = Fixture::usual();
    // Another session's work in progress: already modified before the run. The emit rewrites
    // other/ again (reported); third/ is dirty but untouched (not reported).
    fx.write(
        "plugins-library/other/main/index.js",
        "exports.b = 2; // wip\n",
    );
    fx.write(
        "plugins-library/third/main/index.js",
        "exports.c = 2; // wip\n",
    );
    let bridge = FakeBridge::start();

    let out = fx.run(&["notes", "--json", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let r = report(&out);
    assert_eq!(r["ok"], true);
    assert_eq!(r["plugin"], "notes");
    assert!(r["failedStep"].is_null());
    assert_eq!(
        statuses(&r),
        pairs(&[
            ("check", "ok"),
            ("typecheck", "ok"),
            ("emit", "ok"),
            ("copy", "ok"),
            ("toggle-1", "ok"),
            ("toggle-2", "ok"),
            ("broadcast", "ok"),
            ("outside-writes", "ok"),
        ])
    );
    assert_eq!(
        r["outsideWrites"],
        json!(["plugins-library/other/main/index.js"])
    );
    for step in r["steps"].as_array().unwrap() {
        assert!(step["durationMs"].is_u64(), "{step}");
    }
    assert_eq!(fx.calls(), "typecheck\nemit\n", "typecheck before emit");

    // The copy: this plugin's main/, emitted output included, and nothing else.
    let target = fx.user_data.join("plugins/notes/main");
    assert_eq!(
        std::fs::read_to_string(target.join("index.js")).unwrap(),
        "exports.a = 1;\n// emitted\n"
    );
    assert!(target.join("index.ts").exists() && target.join("lib/util.js").exists());
    assert!(!fx.user_data.join("plugins/notes/ui").exists());
    assert!(!fx.user_data.join("plugins/other").exists());

    // The bridge: two toggles, then one broadcast on the plugin's channel.
    let calls = bridge.calls();
    let seen: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.method.as_str(), c.path.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("POST", "/plugins/toggle"),
            ("POST", "/plugins/toggle"),
            ("POST", "/broadcast")
        ]
    );
    assert_eq!(calls[0].body, json!({"id": "notes"}));
    assert_eq!(calls[1].body, json!({"id": "notes"}));
    assert_eq!(calls[2].body["channel"], "plugin:notes:reload");
    assert_eq!(calls[2].body["payload"]["id"], "notes");
    assert_eq!(calls[2].content_type.as_deref(), Some("application/json"));
}

#[test]
fn text_mode_prints_each_step_and_the_files_written_outside() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    let out = fx.run(&["notes", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let (stdout, _) = text(&out);
    for needle in [
        "[check] ok",
        "[typecheck] run `echo typecheck",
        "[typecheck] ok in",
        "[emit] ok in",
        "[copy] ok in",
        "[toggle-1] POST ",
        "[toggle-2] ok in",
        "[broadcast] POST ",
        "\"channel\":\"plugin:notes:reload\"",
        "[outside-writes] 1 file(s) outside plugins-library/notes/ changed",
        "  plugins-library/other/main/index.js",
        "reload-plugin: plugin 'notes' reloaded",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // Steps are printed in pipeline order.
    let at = |s: &str| stdout.find(s).unwrap();
    assert!(at("[typecheck] ok") < at("[emit] ok") && at("[emit] ok") < at("[copy] ok"));
    assert!(at("[toggle-2] ok") < at("[broadcast] ok"));
}

#[test]
fn a_failing_typecheck_stops_before_anything_is_copied() {
    let fx = Fixture::new(
        "echo typecheck >> {log}; echo 'plugins-library/notes/main/index.ts(1,1): error TS2322: nope' >&2; exit 2",
        "echo emit >> {log}",
        json!({}),
    );
    let bridge = FakeBridge::start();
    let out = fx.run(&["notes", "--json", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    let (_, stderr) = text(&out);
    assert!(stderr.contains("step 'typecheck' failed"), "{stderr}");
    assert!(
        stderr.contains("error TS2322"),
        "the command's output passes through: {stderr}"
    );
    let r = report(&out);
    assert_eq!(r["ok"], false);
    assert_eq!(r["failedStep"], "typecheck");
    assert_eq!(
        statuses(&r),
        pairs(&[
            ("check", "ok"),
            ("typecheck", "failed"),
            ("emit", "skipped"),
            ("copy", "skipped"),
            ("toggle-1", "skipped"),
            ("toggle-2", "skipped"),
            ("broadcast", "skipped"),
            ("outside-writes", "ok"),
        ])
    );
    let tc = &r["steps"][1];
    assert_eq!(tc["exitCode"], 2);
    assert!(
        tc["output"].as_str().unwrap().contains("error TS2322"),
        "{tc}"
    );
    assert_eq!(fx.calls(), "typecheck\n", "emit never ran");
    assert!(
        !fx.user_data.exists(),
        "the user-data folder stays untouched"
    );
    assert!(bridge.calls().is_empty(), "the bridge was not called");
}

#[test]
fn the_protected_plugin_is_refused_before_anything_runs() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    for args in [
        vec!["ai-chat", "--bridge", bridge.url.as_str()],
        vec!["ai-chat", "--bridge", bridge.url.as_str(), "--dry-run"],
    ] {
        let out = fx.run(&args);
        assert_eq!(out.status.code(), Some(8), "{:?}", text(&out));
        let (_, stderr) = text(&out);
        assert!(stderr.contains("plugin 'ai-chat' is protected"), "{stderr}");
        assert!(stderr.contains("ends every session"), "{stderr}");
        assert!(stderr.contains("end-of-round restart"), "{stderr}");
    }
    let out = fx.run(&["ai-chat", "--json", "--bridge", &bridge.url]);
    let r = report(&out);
    assert_eq!(r["failedStep"], "check");
    assert_eq!(r["steps"][0]["status"], "refused");
    assert_eq!(fx.calls(), "", "nothing ran");
    assert!(!fx.user_data.exists());
    assert!(bridge.calls().is_empty());
    assert_eq!(fx.git_status(), "");
}

#[test]
fn the_protected_list_comes_from_the_config() {
    let fx = Fixture::new(
        "echo typecheck >> {log}",
        "echo emit >> {log}",
        json!({"protected": ["notes"]}),
    );
    let bridge = FakeBridge::start();
    let out = fx.run(&["notes", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(8), "{:?}", text(&out));
    assert_eq!(fx.calls(), "");
}

#[test]
fn a_bridge_that_is_not_loopback_is_refused_before_anything_runs() {
    let fx = Fixture::usual();
    let out = fx.run(&["notes", "--bridge", "http://example.invalid:3917"]);
    assert_eq!(out.status.code(), Some(8), "{:?}", text(&out));
    assert!(text(&out).1.contains("is not loopback"), "{:?}", text(&out));

    // The same from the environment and from the config.
    let out = fx
        .tool()
        .arg("--user-data")
        .arg(&fx.user_data)
        .arg("notes")
        .env("SESSION_LOCK_BRIDGE_URL", "http://10.1.2.3:80")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(8), "{:?}", text(&out));
    fx.write(
        "session-lock/config.json",
        &json!({"reloadPlugin": {
            "typecheck": format!("echo typecheck >> {}", fx.calls_log.display()),
            "bridgeUrl": "http://[2001:db8::1]:80"
        }})
        .to_string(),
    );
    let out = fx.run(&["notes"]);
    assert_eq!(out.status.code(), Some(8), "{:?}", text(&out));
    assert!(
        text(&out).1.contains("host '2001:db8::1'"),
        "{:?}",
        text(&out)
    );

    // Not http at all, or no bridge anywhere: a usage error.
    let out = fx.run(&["notes", "--bridge", "https://127.0.0.1:3917"]);
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    fx.write("session-lock/config.json", "{}");
    let out = fx.run(&["notes"]);
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    assert!(text(&out).1.contains("no bridge url"), "{:?}", text(&out));

    assert_eq!(fx.calls(), "", "nothing ran");
    assert!(!fx.user_data.exists());
}

#[test]
fn the_bridge_url_may_come_from_the_environment() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    let out = fx
        .tool()
        .arg("--user-data")
        .arg(&fx.user_data)
        .args(["notes", "--json"])
        .env("SESSION_LOCK_BRIDGE_URL", &bridge.url)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_eq!(bridge.calls().len(), 3);
}

#[test]
fn dry_run_shows_the_plan_and_does_nothing() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    let before = fx.git_status();
    let out = fx.run(&["notes", "--dry-run", "--json", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let r = report(&out);
    assert_eq!(r["dryRun"], true);
    let steps = statuses(&r);
    assert_eq!(steps[0], ("check".to_string(), "ok".to_string()));
    assert!(steps[1..].iter().all(|(_, s)| s == "planned"), "{steps:?}");
    assert_eq!(
        r["plan"]["toggleUrl"],
        format!("{}/plugins/toggle", bridge.url)
    );
    assert_eq!(r["plan"]["broadcastBody"]["channel"], "plugin:notes:reload");
    assert_eq!(
        r["plan"]["target"],
        fx.user_data.join("plugins/notes/main").to_str().unwrap()
    );
    assert!(
        r["steps"][1]["command"]
            .as_str()
            .unwrap()
            .starts_with("echo typecheck")
    );

    let text_out = fx.run(&["notes", "--dry-run", "--bridge", &bridge.url]);
    assert_eq!(text_out.status.code(), Some(0));
    let (stdout, _) = text(&text_out);
    assert!(
        stdout.contains("dry run for plugin 'notes'; nothing runs"),
        "{stdout}"
    );
    assert!(stdout.contains("[copy] copy "), "{stdout}");
    assert!(stdout.contains("[broadcast] POST "), "{stdout}");

    assert_eq!(fx.calls(), "", "no command ran");
    assert!(bridge.calls().is_empty(), "no request was sent");
    assert!(!fx.user_data.exists(), "nothing was copied");
    assert_eq!(fx.git_status(), before, "nothing in the repo changed");
}

#[test]
fn issue_15_dry_run_without_a_bridge_shows_the_plan_and_errors_print_once() {
    let fx = Fixture::usual();
    let out = fx.run(&["notes", "--dry-run"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "[check] ok: plugin 'notes' is not protected; no bridge url (nowhere yet: pass --bridge"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("[toggle-1] POST <no bridge>/plugins/toggle"),
        "{stdout}"
    );
    assert!(stdout.contains("[copy] copy "), "{stdout}");
    assert_eq!(fx.calls(), "", "no command ran");

    // Without --dry-run the missing bridge is refused, and the reason is printed once.
    let out = fx.run(&["notes"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    let both = format!("{stdout}{stderr}");
    assert_eq!(both.matches("no bridge url").count(), 1, "{both}");
    assert!(
        stderr.starts_with("reload-plugin: no bridge url"),
        "{stderr}"
    );
}

#[test]
fn a_failing_bridge_call_stops_the_run_and_says_which() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    bridge.answer("/broadcast", 500);
    let out = fx.run(&["notes", "--json", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    let r = report(&out);
    assert_eq!(r["failedStep"], "broadcast");
    assert_eq!(r["steps"][6]["httpStatus"], 500);
    assert!(
        text(&out).1.contains("step 'broadcast' failed"),
        "{:?}",
        text(&out)
    );
    assert_eq!(bridge.calls().len(), 3);
    assert_eq!(
        r["outsideWrites"],
        json!(["plugins-library/other/main/index.js"])
    );

    // A bridge that is not there: the first toggle fails, nothing more is sent.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let out = fx.run(&["notes", "--bridge", &format!("http://127.0.0.1:{port}")]);
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    assert!(
        text(&out)
            .1
            .contains("step 'toggle-1' failed: cannot reach the bridge")
    );
}

#[test]
fn an_unknown_plugin_is_not_found() {
    let fx = Fixture::usual();
    let bridge = FakeBridge::start();
    let out = fx.run(&["nope", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(6), "{:?}", text(&out));
    let out = fx.run(&["../notes", "--bridge", &bridge.url]);
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    assert_eq!(fx.calls(), "");
}

#[test]
fn a_bad_reload_config_names_the_key() {
    let fx = Fixture::usual();
    fx.write(
        "session-lock/config.json",
        r#"{"reloadPlugin": {"toggleBody": {"id": "{id}"}, "protectd": ["x"]}}"#,
    );
    let out = fx.run(&["notes", "--bridge", "http://127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
    assert!(
        text(&out).1.contains("key 'reloadPlugin.protectd'"),
        "{:?}",
        text(&out)
    );
    fx.write(
        "session-lock/config.json",
        r#"{"reloadPlugin": {"typecheck": false}}"#,
    );
    let out = fx.run(&["notes", "--bridge", "http://127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("key 'reloadPlugin.typecheck'"),
        "{:?}",
        text(&out)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn the_default_user_data_folder_follows_xdg_config_home() {
    let fx = Fixture::usual();
    let xdg = tempfile::tempdir().expect("temp dir");
    let out = fx
        .tool()
        .args([
            "notes",
            "--dry-run",
            "--json",
            "--bridge",
            "http://127.0.0.1:9",
        ])
        .env("XDG_CONFIG_HOME", xdg.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_eq!(
        report(&out)["plan"]["target"],
        xdg.path()
            .join("kazuo-ai/plugins/notes/main")
            .to_str()
            .unwrap()
    );
}
