//! Robustness against misbehaving servers, with our own fixture server
//! (`tests/fixture_server/`): each fault gets a clear error (exit 2) and an untouched lockfile,
//! or, where the specification allows it, the right answer.

use crate::support::{Scratch, fixture_stdio, with_server};

fn lock_with(s: &Scratch, extra: &[&str], fixture: &[&str]) -> (i32, String, String) {
    let mut args = vec!["lock", "--name", "fixture"];
    args.extend_from_slice(extra);
    s.run_owned(&with_server(&args, &fixture_stdio(fixture)))
}

fn fails_with(s: &Scratch, extra: &[&str], fixture: &[&str], expected: &str) {
    let before = std::fs::read(s.path("mcp.lock")).ok();
    let (code, out, err) = lock_with(s, extra, fixture);
    assert_eq!(code, 2, "{fixture:?}: {out}{err}");
    assert!(
        err.contains(expected),
        "{fixture:?}: expected {expected:?} in\n{err}"
    );
    assert_eq!(
        std::fs::read(s.path("mcp.lock")).ok(),
        before,
        "{fixture:?}: the lockfile changed"
    );
}

#[test]
fn every_era_and_page_size_gives_the_same_contract() {
    let s = Scratch::new();
    let (code, out, err) = lock_with(&s, &[], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let reference = s.read("mcp.lock");
    let digest = |lock: &str| {
        lock.lines()
            .find(|l| l.starts_with("server-digest"))
            .unwrap()
            .to_string()
    };
    for (extra, fixture) in [
        (vec![], vec!["--era", "legacy"]),
        (vec![], vec!["--era", "modern"]),
        (vec!["--protocol", "2024-11-05"], vec!["--era", "legacy"]),
        (vec![], vec!["--page-size", "3"]),
        (vec![], vec!["--page-size", "4", "--empty-cursor"]),
        (vec![], vec!["--silent-on-discover"]),
        (vec![], vec!["--ping-first"]),
        (vec![], vec!["--garbage-lines"]),
        (vec![], vec!["--stderr-noise", "20000"]),
    ] {
        let s2 = Scratch::new();
        let (code, out, err) = lock_with(&s2, &extra, &fixture);
        assert_eq!(code, 0, "{fixture:?}: {out}{err}");
        assert_eq!(
            digest(&s2.read("mcp.lock")),
            digest(&reference),
            "{fixture:?}"
        );
    }
}

#[test]
fn a_silent_legacy_server_is_probed_briefly() {
    let s = Scratch::new();
    let started = std::time::Instant::now();
    let (code, out, err) = lock_with(
        &s,
        &["--probe-timeout", "0.3"],
        &["--silent-on-discover", "--era", "legacy"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(out.contains("no answer to server/discover"), "{out}");
}

#[test]
fn lying_crashing_hanging_and_flooding_servers_are_clear_errors() {
    let s = Scratch::new();
    fails_with(
        &s,
        &[],
        &["--page-size", "3", "--repeat-cursor"],
        "repeated the tools/list cursor \"p2\"",
    );
    fails_with(
        &s,
        &["--max-pages", "20"],
        &["--page-size", "3", "--endless"],
        "had more than 20 pages of tools/list",
    );
    fails_with(
        &s,
        &[],
        &["--page-size", "5", "--duplicate-across-pages"],
        "duplicate tool name",
    );
    fails_with(&s, &[], &["--crash-after", "1"], "exited with status 3");
    fails_with(&s, &[], &["--crash-after", "1"], "fixture: crashing");
    fails_with(
        &s,
        &["--timeout", "0.5"],
        &["--hang-on", "tools/list"],
        "did not answer tools/list in time",
    );
    fails_with(
        &s,
        &["--max-message-bytes", "100000"],
        &["--oversized", "200000"],
        "sent a message longer than 100000 bytes",
    );
    fails_with(
        &s,
        &[],
        &["--malformed"],
        "malformed JSON-RPC while answering tools/list",
    );
    fails_with(
        &s,
        &["--strict"],
        &["--garbage-lines"],
        "wrote a line that is not JSON-RPC to stdout",
    );
    fails_with(
        &s,
        &["--strict"],
        &["--era", "legacy", "--legacy-version", "2025-11-05"],
        "protocol version \"2025-11-05\"",
    );
}

#[test]
fn unknown_legacy_versions_are_a_warning_by_default() {
    let s = Scratch::new();
    let (code, out, err) = lock_with(
        &s,
        &[],
        &["--era", "legacy", "--legacy-version", "2025-11-05"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("protocol version \"2025-11-05\", which catalock does not know"),
        "{out}"
    );
}

#[test]
fn catalock_only_discovers_and_answers_server_requests() {
    let s = Scratch::new();
    let record = s.path("record.jsonl");
    let record_arg = record.display().to_string();
    let (code, out, err) = lock_with(&s, &[], &["--ping-first", "--record", &record_arg]);
    assert_eq!(code, 0, "{out}{err}");
    let sent = std::fs::read_to_string(&record).unwrap();
    let messages: Vec<serde_json::Value> = sent
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    for method in &methods {
        assert!(
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/list",
                "prompts/list",
                "resources/templates/list"
            ]
            .contains(method),
            "catalock sent {method}"
        );
    }
    // The ping got {} and the sampling request got -32601.
    assert!(
        messages
            .iter()
            .any(|m| m["result"] == serde_json::json!({})),
        "{sent}"
    );
    assert!(
        messages.iter().any(|m| m["error"]["code"] == -32601),
        "{sent}"
    );
    // The probe carried the modern request metadata.
    let probe = messages
        .iter()
        .find(|m| m["method"] == "server/discover")
        .unwrap();
    assert_eq!(
        probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        probe["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "catalock"
    );
}

#[test]
fn no_process_is_left_behind() {
    let s = Scratch::new();
    // A server that ignores stdin EOF and SIGTERM and has a grandchild: catalock must still
    // end the whole process group. The fixture's stderr goes to a file (the wrapper execs, so
    // the process group is the same) to learn the grandchild's pid.
    let log = s.path("fixture.stderr");
    let mut cmd: Vec<String> = [
        "lock",
        "--name",
        "fixture",
        "--env",
        &format!("CHILD_LOG={}", log.display()),
        "--",
        "sh",
        "-c",
        "exec \"$0\" \"$@\" 2>>\"$CHILD_LOG\"",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    cmd.extend(fixture_stdio(&[
        "--ignore-stdin-eof",
        "--ignore-sigterm",
        "--spawn-child",
    ]));
    let (code, out, err) = s.run_owned(&cmd);
    assert_eq!(code, 0, "{out}{err}");
    let stderr = std::fs::read_to_string(&log).unwrap();
    let pid: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("fixture: child pid "))
        .unwrap_or_else(|| panic!("no child pid in {stderr}"))
        .trim()
        .parse()
        .unwrap();
    // Reaped or gone: neither running nor sleeping.
    let (alive, state) = alive(pid);
    assert!(!alive, "the grandchild {pid} outlived catalock: {state:?}");
}

/// A tiny legacy stdio server in Python: `discover` is how it answers `server/discover`,
/// `ids` how it echoes request ids.
fn python_legacy(discover: &str, string_ids: bool) -> Vec<String> {
    let script = format!(
        r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    rid = str(m["id"]) if {string_ids} else m["id"]
    if m["method"] == "server/discover":
        print(json.dumps({discover}), flush=True)
    elif m["method"] == "initialize":
        print(json.dumps({{"jsonrpc":"2.0","id":rid,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"py","version":"1"}}}}}}), flush=True)
    elif m["method"] == "tools/list":
        print(json.dumps({{"jsonrpc":"2.0","id":rid,"result":{{"tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}]}}}}), flush=True)
"#,
        string_ids = if string_ids { "True" } else { "False" },
    );
    vec!["python3".to_string(), "-c".to_string(), script]
}

#[test]
fn a_null_id_error_to_the_probe_means_legacy_and_string_ids_are_matched() {
    let s = Scratch::new();
    let null_id =
        r#"{"jsonrpc":"2.0","id":None,"error":{"code":-32600,"message":"Invalid request"}}"#;
    let (code, out, err) = s.run_owned(&with_server(
        &["lock", "--name", "py"],
        &python_legacy(null_id, false),
    ));
    assert_eq!(code, 0, "{out}{err}");
    assert!(s.read("mcp.lock").contains("era = \"legacy\""));
    let (code, out, err) = s.run_owned(&with_server(
        &[
            "lock",
            "--name",
            "py2",
            "--protocol",
            "legacy",
            "--timeout",
            "5",
        ],
        &python_legacy(null_id, true),
    ));
    assert_eq!(code, 0, "string ids must be matched: {out}{err}");
}

#[test]
fn malformed_arguments_never_echo_a_secret() {
    let s = Scratch::new();
    let (code, _, err) = s.run(&[
        "lock",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--header",
        "Authorization=Bearer sk-SECRET123",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("a --header argument is not NAME: VALUE") && !err.contains("sk-SECRET"),
        "{err}"
    );
    let (code, _, err) = s.run(&["lock", "--env", "sk-SECRETENV", "--", "true"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("an --env argument is not KEY=VALUE") && !err.contains("sk-SECRET"),
        "{err}"
    );
}

#[test]
fn config_secrets_never_name_a_server_in_errors() {
    let s = Scratch::new();
    s.write(
        "catalock.toml",
        "[[server]]\nname = \"local\"\ncommand = \"/nonexistent/${CATALOCK_CMD_SECRET}\"\n",
    );
    let output = s
        .cmd(&["lock"])
        .env("CATALOCK_CMD_SECRET", "sk-CMDSECRET")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        err.contains("server `local`: cannot start \"local\"") && !err.contains("sk-CMDSECRET"),
        "{err}"
    );
}

#[test]
fn interrupting_catalock_takes_its_servers_down() {
    let s = Scratch::new();
    let pidfile = s.path("server.pid");
    let mut args: Vec<String> = [
        "lock",
        "--name",
        "fixture",
        "--env",
        &format!("PIDFILE={}", pidfile.display()),
        "--",
        "sh",
        "-c",
        "echo $$ > \"$PIDFILE\"; exec \"$0\" \"$@\"",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(fixture_stdio(&[
        "--hang-on",
        "tools/list",
        "--ignore-stdin-eof",
    ]));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("catalock"))
        .args(&args)
        .current_dir(s.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let server: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (alive, state) = alive(server);
    assert!(
        !alive,
        "the server {server} outlived an interrupted catalock: {state:?}"
    );
    assert!(!s.path("mcp.lock").exists());
}

/// Whether process `pid` still runs (a zombie does not count), with its `/proc` state.
fn alive(pid: impl std::fmt::Display) -> (bool, Option<String>) {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let running = state.as_deref().is_some_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    });
    (running, state)
}
