//! Live discovery over stdio against real servers: the npm reference server
//! `@modelcontextprotocol/server-everything` (TypeScript SDK, legacy era only) and a server on
//! the Python `mcp` 2.x SDK (both eras), installed at pinned versions by
//! `scripts/install-test-servers`.

use crate::support::{Scratch, everything_stdio, python_stdio, with_server};

fn entry_line<'a>(lock: &'a str, key: &str) -> &'a str {
    lock.lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} in\n{lock}"))
}

#[test]
fn everything_locks_over_stdio_like_its_capture_and_deterministically() {
    let s = Scratch::new();
    let (code, out, err) = s.run_owned(&with_server(&["lock"], &everything_stdio()));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("added server `everything`: 13 tools"),
        "{out}"
    );
    let first = s.read("mcp.lock");
    // The same server as the committed capture of the same version: the same contract.
    let example = std::fs::read_to_string(crate::support::root().join("mcp.lock.example")).unwrap();
    assert_eq!(
        entry_line(&first, "server-digest"),
        entry_line(&example, "server-digest")
    );
    assert_eq!(entry_line(&first, "era"), "era = \"legacy\"");
    assert_eq!(
        entry_line(&first, "protocol-version"),
        "protocol-version = \"2025-11-25\""
    );
    assert_eq!(entry_line(&first, "transport"), "transport = \"stdio\"");
    assert_eq!(
        entry_line(&first, "client-capabilities"),
        "client-capabilities = \"{}\""
    );
    // Run again: byte-identical, and check passes.
    std::fs::remove_file(s.path("mcp.lock")).unwrap();
    assert_eq!(
        s.run_owned(&with_server(&["lock"], &everything_stdio())).0,
        0
    );
    assert_eq!(s.read("mcp.lock"), first);
    let (code, out, err) = s.run_owned(&with_server(&["check"], &everything_stdio()));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no contract changes"), "{out}");
}

#[test]
fn declared_capabilities_shape_the_catalog_and_check_asks_the_same_question() {
    let s = Scratch::new();
    let caps = r#"{"roots":{},"sampling":{}}"#;
    let (code, out, err) = s.run_owned(&with_server(
        &["lock", "--client-capabilities", caps],
        &everything_stdio(),
    ));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("15 tools"), "{out}");
    assert!(
        s.read("mcp.lock")
            .contains(r#"client-capabilities = '{"roots":{},"sampling":{}}'"#)
    );
    // check declares what lock declared, without being told.
    let (code, out, _) = s.run_owned(&with_server(&["check"], &everything_stdio()));
    assert_eq!(code, 0, "{out}");
    // Declaring less is a different question with a different answer: a readable failure.
    let (code, out, _) = s.run_owned(&with_server(
        &["check", "--client-capabilities", "{}"],
        &everything_stdio(),
    ));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("breaking  tool-removed: `get-roots-list` is gone"),
        "{out}"
    );
    assert!(
        out.contains("breaking  tool-removed: `trigger-sampling-request` is gone"),
        "{out}"
    );
    assert!(
        out.contains(
            "to accept: catalock lock --client-capabilities '{}' --name everything -- node "
        ),
        "{out}"
    );
}

#[test]
fn python_sdk_server_is_modern_and_both_eras_give_one_contract() {
    let s = Scratch::new();
    let (code, out, err) = s.run_owned(&with_server(
        &["lock", "--lockfile", "modern.lock"],
        &python_stdio(),
    ));
    assert_eq!(code, 0, "{out}{err}");
    let modern = s.read("modern.lock");
    assert_eq!(entry_line(&modern, "era"), "era = \"modern\"");
    assert_eq!(
        entry_line(&modern, "protocol-version"),
        "protocol-version = \"2026-07-28\""
    );
    assert!(
        modern.contains("prompt-count = 1") && modern.contains("resource-template-count = 1"),
        "{modern}"
    );
    let (code, out, err) = s.run_owned(&with_server(
        &["lock", "--lockfile", "legacy.lock", "--protocol", "legacy"],
        &python_stdio(),
    ));
    assert_eq!(code, 0, "{out}{err}");
    let legacy = s.read("legacy.lock");
    assert_eq!(entry_line(&legacy, "era"), "era = \"legacy\"");
    assert_eq!(
        entry_line(&modern, "server-digest"),
        entry_line(&legacy, "server-digest"),
        "eras must not change the contract"
    );
    let (code, out, _) = s.run_owned(&with_server(
        &["check", "--lockfile", "modern.lock"],
        &python_stdio(),
    ));
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_changed_python_server_fails_check_with_a_readable_diff() {
    let s = Scratch::new();
    assert_eq!(s.run_owned(&with_server(&["lock"], &python_stdio())).0, 0);
    let (code, out, _) = s.run_owned(&with_server(
        &["check", "--env", "FIXTURE_VARIANT=changed"],
        &python_stdio(),
    ));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("safe      tool-added: new tool"), "{out}");
    assert!(
        out.contains("risky     description-changed /description"),
        "{out}"
    );
    assert!(
        out.contains("risky     version-not-bumped: the contract changed but serverInfo.version is still \"1.0.0\""),
        "{out}"
    );
    // The environment value is a secret as far as catalock knows: it appears nowhere.
    assert!(
        !out.contains("FIXTURE_VARIANT") && !s.read("mcp.lock").contains("FIXTURE_VARIANT"),
        "{out}"
    );
}

#[test]
fn a_server_that_cannot_start_or_dies_is_a_clear_error() {
    let s = Scratch::new();
    let (code, _, err) = s.run(&["lock", "--", "no-such-mcp-server-binary"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(
            "error: cannot start \"no-such-mcp-server-binary\": No such file or directory"
        ),
        "{err}"
    );
    let (code, _, err) = s.run(&[
        "lock",
        "--",
        "sh",
        "-c",
        "echo 'boom: no config' >&2; exit 3",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("server \"sh\" exited with status 3")
            && err.contains("its stderr ended: boom: no config"),
        "{err}"
    );
    assert!(!s.path("mcp.lock").exists(), "nothing written");
}
