//! Every output format, from the same reports: snapshots of a realistic pull request in each
//! renderer, and validity checks (JSON against the report schema, SARIF against the official
//! SARIF 2.1.0 schema, JUnit through a strict XML parser, workflow commands against GitHub's
//! escaping rules).

use std::path::Path;

use crate::support::{Scratch, root};

/// base.lock = the real server-everything capture; mcp.lock = a realistic multi-change edit.
fn pull_request() -> Scratch {
    let scratch = crate::support::locked_pull_request();
    scratch.write(
        "catalock.toml",
        "[owners]\neverything = \"platform-team\"\n\n[policy.codes]\nhidden-unicode = \"deny\"\n",
    );
    scratch
}

const ALL: [&str; 5] = [
    "--format=json=report.json",
    "--format=markdown=summary.md",
    "--format=github=annotations.txt",
    "--format=sarif=catalock.sarif",
    "--format=junit=junit.xml",
];

/// Runs `args` plus every file format; returns (exit code, stdout).
fn run_all(scratch: &Scratch, args: &[&str]) -> (i32, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(ALL);
    let (code, out, err) = scratch.run(&all);
    assert!(err.is_empty() || code == 2, "{err}");
    (code, out)
}

fn validate_sarif(sarif_text: &str) {
    let schema_path = root().join(
        "tests/servers/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json",
    );
    let text = std::fs::read_to_string(&schema_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/install-test-servers)",
            schema_path.display()
        )
    });
    // rtm.5 carries a malformed `language` pattern (an unbalanced `]`) that SARIF 2.1.0
    // Errata 01 corrected; use the corrected form so the schema compiles.
    let text = text.replace(
        r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#,
        r#""^[a-zA-Z]{2}(-[a-zA-Z]{2})?$""#,
    );
    assert!(
        text.contains(r#""^[a-zA-Z]{2}(-[a-zA-Z]{2})?$""#),
        "the errata fix applies"
    );
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let sarif: serde_json::Value = serde_json::from_str(sarif_text).expect("SARIF is JSON");
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF invalid:\n{}", errors.join("\n"));
}

fn validate_report(text: &str) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/report.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let report: serde_json::Value = serde_json::from_str(text).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Well-formed XML whose counts add up.
fn validate_junit(text: &str) -> (usize, usize) {
    let document = roxmltree::Document::parse(text).expect("JUnit is well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let failures = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .count();
    let errors = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("error")))
        .count();
    assert_eq!(
        root.attribute("tests"),
        Some(cases.len().to_string().as_str()),
        "{text}"
    );
    assert_eq!(
        root.attribute("failures"),
        Some(failures.to_string().as_str()),
        "{text}"
    );
    assert_eq!(
        root.attribute("errors"),
        Some(errors.to_string().as_str()),
        "{text}"
    );
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    );
    (failures, errors)
}

/// GitHub's workflow-command escaping: one command per line, nothing raw that would end it.
fn validate_github(text: &str) {
    for line in text.lines() {
        let rest = ["::error", "::warning", "::notice"]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .unwrap_or_else(|| panic!("not a workflow command: {line}"));
        let (properties, message) = rest.split_once("::").unwrap_or_else(|| panic!("{line}"));
        for property in properties.trim_start().split(',').filter(|p| !p.is_empty()) {
            let (_, value) = property.split_once('=').unwrap_or_else(|| panic!("{line}"));
            assert!(!value.contains(':') && !value.contains(','), "{line}");
        }
        assert!(!message.contains('\r'), "{line}");
        assert!(!line.contains('\u{200B}'), "{line}");
    }
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_review_in_every_format() {
    let scratch = pull_request();
    let (code, text) = run_all(&scratch, &["check", "--baseline", "base.lock"]);
    assert_eq!(code, 1);
    let dir = scratch.dir.path();
    validate_report(&read(dir, "report.json"));
    validate_sarif(&read(dir, "catalock.sarif"));
    validate_github(&read(dir, "annotations.txt"));
    let (failures, errors) = validate_junit(&read(dir, "junit.xml"));
    assert_eq!((failures, errors), (3, 0), "{}", read(dir, "junit.xml"));
    insta::assert_snapshot!("format_review_text", text);
    insta::assert_snapshot!("format_review_markdown", read(dir, "summary.md"));
    insta::assert_snapshot!("format_review_github", read(dir, "annotations.txt"));
    insta::assert_snapshot!("format_review_sarif", read(dir, "catalock.sarif"));
    insta::assert_snapshot!("format_review_junit", read(dir, "junit.xml"));
}

#[test]
fn drift_diff_verify_and_errors_in_every_format() {
    let scratch = pull_request();
    for args in [
        vec!["check", "--from", "old.json"],
        vec!["check", "--from", "new.json"],
        vec!["diff", "base.lock", "mcp.lock"],
        vec!["verify"],
        vec!["check", "--from", "missing.json"],
    ] {
        let (code, _) = run_all(&scratch, &args);
        let dir = scratch.dir.path();
        validate_report(&read(dir, "report.json"));
        validate_sarif(&read(dir, "catalock.sarif"));
        validate_github(&read(dir, "annotations.txt"));
        let (failures, errors) = validate_junit(&read(dir, "junit.xml"));
        match code {
            0 => assert_eq!((failures, errors), (0, 0), "{args:?}"),
            1 => assert!(failures > 0, "{args:?}"),
            _ => assert_eq!(errors, 1, "{args:?}"),
        }
    }
}

#[test]
fn only_one_format_goes_to_stdout() {
    let scratch = pull_request();
    let (code, _, err) = scratch.run(&["verify", "--format", "json", "--format", "sarif"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("only one --format can go to standard output"),
        "{err}"
    );
    let (code, _, err) = scratch.run(&["verify", "--format", "yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown format \"yaml\""), "{err}");
}

#[test]
fn server_text_never_becomes_a_workflow_command() {
    let scratch = pull_request();
    let mut capture: serde_json::Value = serde_json::from_str(&scratch.read("new.json")).unwrap();
    let echo = capture[0]["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "echo")
        .unwrap();
    echo["description"] = "Echoes.\n::error::pwned\n  ::add-mask::x".into();
    scratch.write("evil.json", &capture.to_string());
    let (code, _, err) = scratch.run(&["lock", "--from", "evil.json", "--name", "everything"]);
    assert_eq!(code, 0, "{err}");
    for args in [
        vec!["check", "--baseline", "base.lock"],
        vec!["check", "--baseline", "base.lock", "--format", "github"],
        vec!["show", "everything/echo"],
        vec!["diff", "base.lock", "mcp.lock"],
    ] {
        let (_, out, _) = scratch.run(&args);
        for line in out.lines() {
            let body = line.trim_start();
            assert!(
                !body.starts_with("::") || (args.contains(&"github") && !body.contains("pwned\n")),
                "{args:?}: {line}"
            );
            assert!(
                !body.starts_with("::error::pwned") && !body.starts_with("::add-mask"),
                "{args:?}: {line}"
            );
        }
    }
}

#[test]
fn a_review_survives_a_server_that_cannot_be_reached() {
    let scratch = pull_request();
    let config = scratch.read("catalock.toml");
    scratch.write(
        "catalock.toml",
        &format!("{config}\n[[server]]\nname = \"everything\"\ncommand = \"node\"\nenv = {{ TOKEN = \"${{CATALOCK_SURELY_UNSET}}\" }}\n"),
    );
    let (code, out, err) = scratch.run(&["check", "--baseline", "base.lock"]);
    assert_eq!(code, 2, "{out}{err}");
    let all = format!("{out}{err}");
    assert!(
        all.contains("changes since base.lock: 3 breaking, 3 risky, 1 safe in 4 tools"),
        "{all}"
    );
    assert!(
        all.contains(
            "drift could not be checked: server `everything` uses ${CATALOCK_SURELY_UNSET}"
        ),
        "{all}"
    );
}

#[test]
fn annotations_name_the_lockfile_from_the_repository_root() {
    let scratch = pull_request();
    let sub = scratch.path("services/everything");
    std::fs::create_dir_all(&sub).unwrap();
    for file in ["base.lock", "mcp.lock"] {
        std::fs::rename(scratch.path(file), sub.join(file)).unwrap();
    }
    crate::support::git(scratch.dir.path(), &["init", "-q"]);
    let output = assert_cmd::Command::cargo_bin("catalock")
        .unwrap()
        .current_dir(&sub)
        .env("CATALOCK_TODAY", "2026-11-29")
        .args([
            "check",
            "--baseline",
            "base.lock",
            "--format",
            "github",
            "--format",
            "sarif=out.sarif",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("::error file=services/everything/mcp.lock,line="),
        "{text}"
    );
    let sarif = std::fs::read_to_string(sub.join("out.sarif")).unwrap();
    assert!(
        sarif.contains("\"uri\": \"services/everything/mcp.lock\""),
        "{sarif}"
    );
}
