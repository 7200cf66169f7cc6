//! The GitHub Action: `actionlint` on action.yml (through a workflow that uses it) and the
//! example workflows, and the action's step run in bash with a simulated GitHub environment
//! (event payload, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY) against the real server-everything.

use std::path::Path;
use std::process::Command;

use crate::support::{Scratch, everything_stdio, fixtures, git, root};

#[test]
fn actionlint_passes_on_the_action_and_the_workflows() {
    let actionlint = root().join("tests/servers/.venv/bin/actionlint");
    assert!(actionlint.exists(), "run scripts/install-test-servers");
    let output = Command::new(&actionlint)
        .current_dir(root())
        .args([
            ".github/workflows/catalock.yml",
            "docs/examples/catalock.yml",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // And it does read action.yml: a misspelt input is caught.
    let scratch = Scratch::new();
    git(scratch.dir.path(), &["init", "-q"]);
    std::fs::copy(root().join("action.yml"), scratch.path("action.yml")).unwrap();
    std::fs::create_dir_all(scratch.path(".github/workflows")).unwrap();
    let workflow = std::fs::read_to_string(root().join(".github/workflows/catalock.yml"))
        .unwrap()
        .replace("fail-on:", "fail-onn:");
    std::fs::write(scratch.path(".github/workflows/bad.yml"), workflow).unwrap();
    let output = Command::new(&actionlint)
        .current_dir(scratch.dir.path())
        .arg(".github/workflows/bad.yml")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("input \"fail-onn\" is not defined"));
}

struct Run {
    code: i32,
    stdout: String,
    outputs: String,
    summary: String,
}

/// The action's step in `repo`, as the runner would run it.
fn run_step(scratch: &Scratch, repo: &Path, base_sha: &str, fail_on: &str) -> Run {
    let event = scratch.write(
        "event.json",
        &serde_json::json!({"pull_request": {"number": 7, "base": {"sha": base_sha, "ref": "main"}}}).to_string(),
    );
    let outputs = scratch.write("github_output", "");
    let summary = scratch.write("step_summary", "");
    let temp = scratch.path("runner_temp");
    std::fs::create_dir_all(&temp).unwrap();
    let output = Command::new("bash")
        .arg(root().join("scripts/action/check.sh"))
        .current_dir(repo)
        .env("CATALOCK_BIN", assert_cmd::cargo::cargo_bin("catalock"))
        .env("CATALOCK_TODAY", "2026-11-29")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("RUNNER_TEMP", &temp)
        .env("INPUT_COMMAND", everything_stdio().join(" "))
        .env("INPUT_FAIL_ON", fail_on)
        .env("INPUT_FORMATS", "sarif=catalock.sarif junit=catalock.xml")
        .env("INPUT_CONFIG", "")
        .env("INPUT_LOCKFILE", "")
        .env("INPUT_BASE", "")
        .env("INPUT_URL", "")
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        outputs: scratch.read("github_output"),
        summary: scratch.read("step_summary"),
    }
}

#[test]
fn the_action_step_in_a_simulated_pull_request() {
    let scratch = Scratch::new();
    let repo = scratch.path("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    // The base commit locked a different contract (the changed capture); the pull request
    // relocks from the live server, so the review has changes to judge and there is no drift.
    std::fs::copy(
        fixtures().join("review/everything-changed.json"),
        repo.join("old.json"),
    )
    .unwrap();
    let lock = |args: &[String]| {
        let output = assert_cmd::Command::cargo_bin("catalock")
            .unwrap()
            .current_dir(&repo)
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    lock(&[
        "lock".into(),
        "--from".into(),
        "old.json".into(),
        "--name".into(),
        "everything".into(),
    ]);
    std::fs::write(
        repo.join("catalock.toml"),
        "[owners]\neverything = \"platform-team\"\n",
    )
    .unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    let mut live = vec![
        "lock".to_string(),
        "--name".into(),
        "everything".into(),
        "--".into(),
    ];
    live.extend(everything_stdio());
    lock(&live);
    git(&repo, &["commit", "-qam", "relock from the live server"]);

    let run = run_step(&scratch, &repo, &base, "changes");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("::error file=mcp.lock,line="),
        "{}",
        run.stdout
    );
    // The pull request changes the contract (no drift, but a review with changes).
    assert!(run.outputs.contains("changed=true\n"), "{}", run.outputs);
    assert!(run.outputs.contains("exit-code=1\n"), "{}", run.outputs);
    assert!(
        run.outputs
            .lines()
            .any(|l| l.starts_with("unapproved=") && l != "unapproved=0"),
        "{}",
        run.outputs
    );
    assert!(
        run.outputs
            .lines()
            .any(|l| l.starts_with("breaking=") && l != "breaking=0"),
        "{}",
        run.outputs
    );
    assert!(
        run.outputs.contains("server-digest=sha256:"),
        "{}",
        run.outputs
    );
    assert!(run.summary.starts_with("### catalock"), "{}", run.summary);
    assert!(
        run.summary.contains("catalock approve everything/"),
        "{}",
        run.summary
    );
    assert!(repo.join("catalock.sarif").exists() && repo.join("catalock.xml").exists());

    // A second run in the same job never reads the first one's reports: a broken run
    // reports nothing rather than stale counts.
    let broken = Command::new("bash")
        .arg(root().join("scripts/action/check.sh"))
        .current_dir(&repo)
        .env("CATALOCK_BIN", assert_cmd::cargo::cargo_bin("catalock"))
        .env("GITHUB_OUTPUT", scratch.path("github_output2"))
        .env("RUNNER_TEMP", scratch.path("runner_temp"))
        .env("INPUT_FORMATS", "sarif:no-equals-sign")
        .output()
        .unwrap();
    assert_eq!(broken.status.code(), Some(2));
    let outputs = std::fs::read_to_string(scratch.path("github_output2")).unwrap();
    assert!(
        outputs.contains("breaking=0\n") && outputs.contains("exit-code=2\n"),
        "{outputs}"
    );

    // fail-on: never reports the same and passes.
    let run = run_step(&scratch, &repo, &base, "never");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.outputs.contains("exit-code=1\n"), "{}", run.outputs);
}
