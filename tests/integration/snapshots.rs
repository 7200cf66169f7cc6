//! Snapshots of every output format (insta): text and JSON of check, diff and verify, from the
//! shipped example (a real capture of server-everything and a realistic change to it).

use crate::support::{Scratch, example};

fn scratch_with_example() -> Scratch {
    let s = Scratch::new();
    s.copy(&example("session.jsonl"), "session.jsonl");
    s.copy(&example("session-changed.jsonl"), "session-changed.jsonl");
    assert_eq!(s.run(&["lock", "--from", "session.jsonl"]).0, 0);
    s
}

#[test]
fn check_text() {
    let s = scratch_with_example();
    let (code, out, _) = s.run(&["check", "--from", "session-changed.jsonl"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn check_json() {
    let s = scratch_with_example();
    let (code, out, _) = s.run(&[
        "check",
        "--from",
        "session-changed.jsonl",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn check_unchanged_text_and_json() {
    let s = scratch_with_example();
    let (code, out, _) = s.run(&["check", "--from", "session.jsonl"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("check_unchanged_text", out);
    let (code, out, _) = s.run(&["check", "--from", "session.jsonl", "--format", "json"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("check_unchanged_json", out);
}

#[test]
fn diff_text() {
    let s = scratch_with_example();
    let (code, out, _) = s.run(&["diff", "mcp.lock", "session-changed.jsonl"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn verify_text_and_json() {
    let s = scratch_with_example();
    let lock = s.read("mcp.lock");
    s.write(
        "mcp.lock",
        &lock.replacen("bytes = 242", "bytes = 241", 1).replacen(
            "\"Echo Tool\"",
            "\"Echo tool\"",
            1,
        ),
    );
    let (code, out, _) = s.run(&["verify"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("verify_text", out);
    let (code, out, _) = s.run(&["verify", "--format", "json"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("verify_json", out);
}

#[test]
fn error_text() {
    let s = scratch_with_example();
    s.write("bad.json", "{\"tools\": [}");
    let (code, _, err) = s.run(&["check", "--from", "bad.json"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn change_code_list() {
    // The code names are a public contract: this snapshot changes only by adding codes.
    let s = Scratch::new();
    let (code, out, _) = s.run(&["explain", "--list"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
    let (code, out, _) = s.run(&["explain", "permission-escalated"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("permission-escalated (risky)\n"), "{out}");
    let (code, _, err) = s.run(&["explain", "no-such-code"]);
    assert_eq!(code, 2);
    assert!(err.contains("hint: catalock explain --list"), "{err}");
}
