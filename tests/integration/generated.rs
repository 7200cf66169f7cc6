//! Committed files that are generated must be current: the JSON Schemas and the example
//! lockfile. Run with `CATALOCK_BLESS=1` to regenerate them, then review the diff.

use std::path::Path;

use crate::support::{Scratch, example};

fn check_current(relative: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("CATALOCK_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    similar_asserts::assert_eq!(
        committed,
        generated,
        "{relative} is stale: run `CATALOCK_BLESS=1 cargo test --test integration generated` and commit it"
    );
}

#[test]
fn lockfile_schema_is_current() {
    check_current(
        "schemas/mcp-lock.schema.json",
        &catalock::schema::lockfile_schema(),
    );
}

#[test]
fn report_schema_is_current() {
    check_current(
        "schemas/report.schema.json",
        &catalock::schema::report_schema(),
    );
}

#[test]
fn example_lockfile_is_current() {
    let s = Scratch::new();
    s.copy(&example("session.jsonl"), "session.jsonl");
    assert_eq!(
        s.run(&[
            "lock",
            "--from",
            "session.jsonl",
            "--lockfile",
            "mcp.lock.example"
        ])
        .0,
        0
    );
    check_current("mcp.lock.example", &s.read("mcp.lock.example"));
}

#[test]
fn example_lockfile_matches_its_schema() {
    // The schema describes the TOML as parsed into JSON; validate every key and type.
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp.lock.example"))
            .unwrap();
    let value: toml::Value = toml::from_str(&text).unwrap();
    let json = serde_json::to_value(&value).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(&catalock::schema::lockfile_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn json_reports_match_their_schema() {
    let s = Scratch::new();
    s.copy(&example("session.jsonl"), "a.jsonl");
    s.copy(&example("session-changed.jsonl"), "b.jsonl");
    assert_eq!(s.run(&["lock", "--from", "a.jsonl"]).0, 0);
    let schema: serde_json::Value =
        serde_json::from_str(&catalock::schema::report_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for args in [
        vec!["check", "--from", "b.jsonl", "--format", "json"],
        vec!["check", "--from", "a.jsonl", "--format", "json"],
        vec!["diff", "mcp.lock", "b.jsonl", "--format", "json"],
        vec!["verify", "--format", "json"],
        vec!["check", "--from", "missing.jsonl", "--format", "json"],
    ] {
        let (_, out, _) = s.run(&args);
        let report: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"));
        let errors: Vec<String> = validator
            .iter_errors(&report)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{args:?}: {errors:#?}");
    }
}
