//! One `old`/`new` fixture pair per change code (tests/fixtures/changes/<code>/): each must
//! produce exactly its code (plus the companions its `expected` file lists), and every code
//! must have a pair, so a new rule cannot land untested.

use std::collections::BTreeSet;
use std::path::Path;

use assert_cmd::Command;

use crate::support::{Scratch, fixtures};

fn side(dir: &Path, name: &str) -> String {
    for ext in ["json", "lock"] {
        let path = dir.join(format!("{name}.{ext}"));
        if path.exists() {
            return path.file_name().unwrap().to_string_lossy().into_owned();
        }
    }
    panic!("{} has no {name}.json or {name}.lock", dir.display());
}

/// The codes `catalock diff` reports for one fixture pair.
fn codes_of(dir: &Path) -> BTreeSet<String> {
    let output = Command::cargo_bin("catalock")
        .unwrap()
        .current_dir(dir)
        .env("CATALOCK_TODAY", "2026-11-29")
        .args(["diff", "--name", "fixture", "--format", "json"])
        .arg(side(dir, "old"))
        .arg(side(dir, "new"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e})", dir.display()));
    assert!(
        report.get("error").is_none(),
        "{}: {}",
        dir.display(),
        report["error"]
    );
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap().iter())
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_code_has_a_fixture_pair_that_produces_exactly_it() {
    let root = fixtures().join("changes");
    let mut failures = Vec::new();
    for code in catalock::codes::CODES {
        let dir = root.join(code.name);
        if !dir.is_dir() {
            failures.push(format!(
                "{}: no fixture pair in {}",
                code.name,
                dir.display()
            ));
            continue;
        }
        let mut want: BTreeSet<String> = match std::fs::read_to_string(dir.join("expected")) {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(_) => BTreeSet::new(),
        };
        want.insert(code.name.to_string());
        let got = codes_of(&dir);
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", code.name));
        }
    }
    // And no fixture for a code that does not exist (a renamed code leaves one behind).
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if catalock::codes::code(&name).is_none() {
            failures.push(format!("{name}: fixture for an unknown code"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn identical_sides_produce_no_change() {
    let dir = fixtures().join("changes/tool-removed");
    let scratch = Scratch::new();
    scratch.copy(&dir.join("old.json"), "a.json");
    scratch.copy(&dir.join("old.json"), "b.json");
    let (code, out, _) = scratch.run(&["diff", "a.json", "b.json", "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["servers"], serde_json::json!([]));
}

#[test]
fn explain_knows_every_code() {
    let scratch = Scratch::new();
    for code in catalock::codes::CODES {
        let (status, out, err) = scratch.run(&["explain", code.name]);
        assert_eq!(status, 0, "{err}");
        assert!(
            out.starts_with(&format!("{} ({})", code.name, code.severity.name())),
            "{out}"
        );
    }
}
