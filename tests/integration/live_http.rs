//! Live discovery over streamable HTTP: the fixture server (JSON and SSE answers, both eras,
//! 401 with protected-resource metadata), server-everything (legacy sessions, SSE) and the
//! Python SDK server (modern).

use crate::support::{HttpServer, Scratch, capture, fixture_server, root};

fn fixture_http(args: &[&str]) -> HttpServer {
    let mut command = vec![
        fixture_server(),
        "--catalog".to_string(),
        capture("everything", "tools-list.json")
            .display()
            .to_string(),
        "--http".to_string(),
        "127.0.0.1:0".to_string(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    HttpServer::start(&command, &[], "/mcp")
}

fn digest(lock: &str) -> String {
    lock.lines()
        .find(|l| l.starts_with("server-digest"))
        .unwrap()
        .to_string()
}

#[test]
fn http_and_stdio_give_the_same_contract_in_both_eras_json_or_sse() {
    let s = Scratch::new();
    let stdio = crate::support::with_server(
        &["lock", "--name", "fixture", "--lockfile", "stdio.lock"],
        &crate::support::fixture_stdio(&[]),
    );
    assert_eq!(s.run_owned(&stdio).0, 0);
    let reference = digest(&s.read("stdio.lock"));
    for (fixture, protocol, era) in [
        (vec![], "auto", "modern"),
        (vec!["--sse"], "auto", "modern"),
        (vec!["--era", "legacy"], "auto", "legacy"),
        (vec!["--era", "legacy", "--sse"], "legacy", "legacy"),
        (vec!["--page-size", "4", "--sse"], "modern", "modern"),
    ] {
        let server = fixture_http(&fixture);
        let (code, out, err) = s.run(&[
            "lock",
            "--name",
            "fixture",
            "--lockfile",
            "http.lock",
            "--protocol",
            protocol,
            "--url",
            &server.url,
        ]);
        assert_eq!(code, 0, "{fixture:?}: {out}{err}");
        let lock = s.read("http.lock");
        assert_eq!(digest(&lock), reference, "{fixture:?}");
        assert!(lock.contains(&format!("era = \"{era}\"")), "{fixture:?}");
        assert!(lock.contains("transport = \"http\""));
        let (code, out, _) = s.run(&[
            "check",
            "--name",
            "fixture",
            "--lockfile",
            "http.lock",
            "--url",
            &server.url,
        ]);
        assert_eq!(code, 0, "{fixture:?}: {out}");
    }
}

#[test]
fn authorization_demands_are_explained_and_the_token_never_shown() {
    let s = Scratch::new();
    let server = fixture_http(&["--auth-token", "s3cret-token"]);
    let (code, _, err) = s.run(&["lock", "--url", &server.url]);
    assert_eq!(code, 2);
    assert!(
        err.contains("answered HTTP 401: authorization required"),
        "{err}"
    );
    assert!(err.contains("scope \"tools:read\""), "{err}");
    assert!(
        err.contains("authorization server https://auth.example.com"),
        "{err}"
    );
    assert!(err.contains("--header 'Authorization: Bearer …'"), "{err}");
    let (code, _, err) = s.run(&[
        "lock",
        "--url",
        &server.url,
        "--header",
        "Authorization: Bearer wrong-token",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the credential sent was refused") && !err.contains("wrong-token"),
        "{err}"
    );
    let (code, out, err) = s.run(&[
        "lock",
        "--name",
        "fixture",
        "--url",
        &server.url,
        "--header",
        "Authorization: Bearer s3cret-token",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let lock = s.read("mcp.lock");
    assert!(
        !lock.contains("s3cret") && !out.contains("s3cret"),
        "the token leaked"
    );
    // What the server demands is recorded, never the credential.
    assert!(
        lock.contains(r#"authorization = '{"authorization_servers":["https://auth.example.com"],"scheme":"Bearer","scope":"tools:read","scopes_supported":["tools:read"]}'"#),
        "{lock}"
    );
}

#[test]
fn server_everything_over_streamable_http_matches_its_stdio_contract() {
    let s = Scratch::new();
    let script = root()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let preload = root().join("tests/servers/loopback-only.cjs");
    let command = vec![
        "node".to_string(),
        "--require".to_string(),
        preload.display().to_string(),
        script.display().to_string(),
        "streamableHttp".to_string(),
    ];
    let server = HttpServer::start(&command, &[("PORT", "0")], "/mcp");
    let (code, out, err) = s.run(&["lock", "--url", &server.url]);
    assert_eq!(code, 0, "{out}{err}");
    let lock = s.read("mcp.lock");
    assert!(lock.contains("era = \"legacy\""), "{lock}");
    let example = std::fs::read_to_string(root().join("mcp.lock.example")).unwrap();
    assert_eq!(
        digest(&lock),
        digest(&example),
        "HTTP and stdio give one contract"
    );
    let (code, out, _) = s.run(&["check", "--url", &server.url]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn python_sdk_server_over_http_is_modern_and_matches_stdio() {
    let s = Scratch::new();
    let python = root().join("tests/servers/.venv/bin/python");
    let script = root().join("tests/servers/python_server.py");
    let command = vec![
        python.display().to_string(),
        script.display().to_string(),
        "http".to_string(),
        "0".to_string(),
    ];
    let server = HttpServer::start(&command, &[], "/mcp");
    let (code, out, err) = s.run(&["lock", "--lockfile", "http.lock", "--url", &server.url]);
    assert_eq!(code, 0, "{out}{err}");
    let http = s.read("http.lock");
    assert!(http.contains("era = \"modern\""), "{http}");
    let (code, out, err) = s.run_owned(&crate::support::with_server(
        &["lock", "--lockfile", "stdio.lock"],
        &crate::support::python_stdio(),
    ));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(digest(&http), digest(&s.read("stdio.lock")));
}

#[test]
fn server_everything_over_the_2024_11_05_http_sse_transport_is_found_by_fallback() {
    let s = Scratch::new();
    let script = root()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let preload = root().join("tests/servers/loopback-only.cjs");
    let command = vec![
        "node".to_string(),
        "--require".to_string(),
        preload.display().to_string(),
        script.display().to_string(),
        "sse".to_string(),
    ];
    let server = HttpServer::start(&command, &[("PORT", "0")], "/sse");
    let (code, out, err) = s.run(&["lock", "--url", &server.url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2024-11-05 HTTP+SSE transport (deprecated)"),
        "{out}"
    );
    let example = std::fs::read_to_string(root().join("mcp.lock.example")).unwrap();
    assert_eq!(
        digest(&s.read("mcp.lock")),
        digest(&example),
        "HTTP+SSE, streamable HTTP and stdio give one contract"
    );
    let (code, out, _) = s.run(&["check", "--url", &server.url]);
    assert_eq!(code, 0, "{out}");
}
