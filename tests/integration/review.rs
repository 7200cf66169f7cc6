//! Review mode and the gate's judgement: `check --base`/`--baseline`, the policy,
//! approvals bound to digests (and going stale), deprecations, owners, and git bases in
//! real repositories, shallow clones included.

use std::path::Path;

use crate::support::{Scratch, capture, fixtures, git};

const BY: &str = "Ana Reviewer <ana@example.com>";

fn changed_capture() -> std::path::PathBuf {
    fixtures().join("review/everything-changed.json")
}

/// A scratch dir with base.lock (the real server-everything capture) and mcp.lock (the
/// changed capture), plus a catalock.toml naming the owner.
fn pull_request() -> Scratch {
    let scratch = crate::support::locked_pull_request();
    scratch.write(
        "catalock.toml",
        "# servers we ship\n[[server]]\nname = \"everything\"\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\"]\nowner = \"platform-team\"\n",
    );
    scratch
}

/// `catalock approve everything --all` against base.lock.
fn approve_all(scratch: &Scratch, reason: &str) -> (i32, String, String) {
    scratch.run(&[
        "approve",
        "everything",
        "--all",
        "--reason",
        reason,
        "--by",
        BY,
        "--baseline",
        "base.lock",
    ])
}

fn review_json(scratch: &Scratch, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["check", "--baseline", "base.lock", "--format", "json"];
    args.extend_from_slice(extra);
    let (code, out, err) = scratch.run(&args);
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, report)
}

fn statuses(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["review"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap().iter())
        .map(|c| {
            (
                c["subject"].as_str().unwrap().to_string(),
                c["code"].as_str().unwrap().to_string(),
                c["verdict"]["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn review_text_and_json_snapshots() {
    let scratch = pull_request();
    let (code, out, _) = scratch.run(&["check", "--baseline", "base.lock", "--from", "new.json"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("review_text", out);
    let (_, report) = review_json(&scratch, &["--from", "new.json"]);
    insta::assert_json_snapshot!("review_json", report["review"]);
}

#[test]
fn diff_of_a_realistic_change_text_and_json() {
    let scratch = Scratch::new();
    scratch.copy(&capture("everything", "tools-list.json"), "old.json");
    scratch.copy(&changed_capture(), "new.json");
    let (code, out, _) = scratch.run(&["diff", "old.json", "new.json", "--name", "everything"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("classified_diff_text", out);
    let (_, out, _) = scratch.run(&[
        "diff",
        "old.json",
        "new.json",
        "--name",
        "everything",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    insta::assert_json_snapshot!("classified_diff_json", report["servers"][0]["changes"]);
}

#[test]
fn approvals_round_trip_and_go_stale_when_the_contract_moves_again() {
    let scratch = pull_request();
    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 1);
    assert_eq!(report["review"]["failing"], 6, "{report:#}");
    let pending: Vec<_> = statuses(&report)
        .into_iter()
        .filter(|(_, _, s)| s == "needs-approval")
        .collect();
    assert!(
        pending
            .iter()
            .any(|(t, c, _)| t == "echo" && c == "permission-escalated")
    );
    // The added tool is safe and passes on its own.
    assert!(statuses(&report).contains(&(
        "delete-resource".into(),
        "tool-added".into(),
        "allowed".into()
    )));

    let comment = "# servers we ship\n";
    let (code, out, err) = scratch.run(&[
        "approve",
        "everything/echo",
        "--reason",
        "limit matches the UI",
        "--by",
        BY,
        "--baseline",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("approved everything/echo: sha256:"), "{out}");
    let config = scratch.read("catalock.toml");
    assert!(config.starts_with(comment), "comments kept: {config}");
    assert!(config.contains("subject = \"echo\""), "{config}");
    assert!(config.contains(&format!("by = \"{BY}\"")), "{config}");
    assert!(config.contains("date = \"2026-11-29\""), "{config}");

    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 1);
    assert_eq!(report["review"]["failing"], 2, "{report:#}");

    let (code, out, err) = approve_all(&scratch, "2.0 release");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("everything/get-environment") && out.contains("everything/get-tiny-image"),
        "{out}"
    );
    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["review"]["failing"], 0);

    // The server changes echo again: the approval covered the old transition only.
    let mut tools: serde_json::Value = serde_json::from_str(&scratch.read("new.json")).unwrap();
    let echo = tools[0]["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "echo")
        .unwrap();
    echo["description"] = "Echoes back the input string, and logs it.".into();
    scratch.write("new2.json", &tools.to_string());
    let (code, _, err) = scratch.run(&["lock", "--from", "new2.json", "--name", "everything"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = scratch.run(&["check", "--baseline", "base.lock", "--from", "new2.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("approval for everything/echo is stale: approved sha256:"),
        "{out}"
    );
    assert!(
        out.contains(
            "to approve: catalock approve everything/echo --reason '…' --baseline base.lock"
        ),
        "{out}"
    );
    // Re-approving replaces the stale record instead of piling up another.
    let (code, _, err) = scratch.run(&[
        "approve",
        "everything/echo",
        "--reason",
        "logging is fine",
        "--by",
        BY,
        "--baseline",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        scratch
            .read("catalock.toml")
            .matches("subject = \"echo\"")
            .count(),
        1
    );
    let (code, _) = review_json(&scratch, &["--from", "new2.json"]);
    assert_eq!(code, 0);
}

#[test]
fn drift_fails_a_review_even_when_every_change_is_approved() {
    let scratch = pull_request();
    let (code, _, err) = approve_all(&scratch, "ok");
    assert_eq!(code, 0, "{err}");
    // The lockfile says new.json, but the server serves old.json: drift.
    let (code, out, _) = scratch.run(&["check", "--baseline", "base.lock", "--from", "old.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("review against base.lock: passes; drift: "),
        "{out}"
    );
}

#[test]
fn policy_deny_warn_ignore_and_expired_ignores() {
    let scratch = pull_request();
    let config = scratch.read("catalock.toml");
    scratch.write(
        "catalock.toml",
        &format!(
            "{config}\n[policy]\nsafe = \"warn\"\n[policy.codes]\nhidden-unicode = \"deny\"\n\n[[policy.override]]\nserver = \"everything\"\ntool = \"get-tiny-image\"\nbreaking = \"allow\"\n\n[[policy.ignore]]\nserver = \"everything\"\ncode = \"tool-renamed\"\nreason = \"clients alias the old name\"\nexpires = 2027-03-01\n"
        ),
    );
    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 1);
    let got = statuses(&report);
    for want in [
        ("echo", "hidden-unicode", "denied"),
        ("echo", "description-changed", "needs-approval"),
        ("get-tiny-image", "tool-removed", "allowed"),
        ("get-environment", "tool-renamed", "ignored"),
        ("delete-resource", "tool-added", "warned"),
    ] {
        let want = (want.0.to_string(), want.1.to_string(), want.2.to_string());
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    // A denied change cannot be approved away.
    approve_all(&scratch, "x");
    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 1);
    assert_eq!(report["review"]["failing"], 1, "{report:#}");

    // The same ignore past its expiry fails the review by itself.
    let text = scratch
        .read("catalock.toml")
        .replace("2027-03-01", "2026-11-01");
    scratch.write(
        "catalock.toml",
        &text.replace("hidden-unicode = \"deny\"", "hidden-unicode = \"allow\""),
    );
    let (code, out, _) = scratch.run(&["check", "--baseline", "base.lock", "--from", "new.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: the ignore of tool-renamed for everything expired on 2026-11-01 (clients alias the old name)"),
        "{out}"
    );
}

#[test]
fn owner_missing_warns_by_default_and_can_be_denied() {
    let scratch = pull_request();
    let text = scratch
        .read("catalock.toml")
        .replace("owner = \"platform-team\"\n", "");
    scratch.write("catalock.toml", &text);
    approve_all(&scratch, "x");
    let (code, report) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 0, "{report:#}");
    assert!(statuses(&report).contains(&(
        "@server".into(),
        "owner-missing".into(),
        "warned".into()
    )));
    scratch.write(
        "catalock.toml",
        &format!(
            "{}\n[policy.codes]\nowner-missing = \"deny\"\n",
            scratch.read("catalock.toml")
        ),
    );
    let (code, _) = review_json(&scratch, &["--from", "new.json"]);
    assert_eq!(code, 1);
}

#[test]
fn deprecation_makes_removal_after_its_date_safe() {
    let scratch = pull_request();
    // A date that has passed gives no notice at all: refused.
    let (code, _, err) = scratch.run(&[
        "deprecate",
        "everything/get-tiny-image",
        "--remove-after",
        "2026-10-31",
        "--by",
        BY,
        "--lockfile",
        "base.lock",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("is not after today (2026-11-29)"), "{err}");
    let (code, out, err) = scratch.run(&[
        "deprecate",
        "everything/get-tiny-image",
        "--remove-after",
        "2026-12-31",
        "--reason",
        "use get-resource-links",
        "--by",
        BY,
        "--lockfile",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("deprecated everything/get-tiny-image"),
        "{out}"
    );
    // After the date, the removal is safe.
    let output = scratch
        .cmd(&[
            "check",
            "--baseline",
            "base.lock",
            "--format",
            "json",
            "--from",
            "new.json",
        ])
        .env("CATALOCK_TODAY", "2027-01-15")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(statuses(&report).contains(&(
        "get-tiny-image".into(),
        "deprecated-tool-removed".into(),
        "allowed".into()
    )));
    // Before it, the removal is still breaking; deprecating again moves the date.
    let (code, _, _) = scratch.run(&[
        "deprecate",
        "everything/get-tiny-image",
        "--remove-after",
        "2027-01-31",
        "--by",
        BY,
        "--lockfile",
        "base.lock",
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        scratch
            .read("catalock.toml")
            .matches("[[deprecation]]")
            .count(),
        1
    );
    let (_, report) = review_json(&scratch, &["--from", "new.json"]);
    assert!(statuses(&report).contains(&(
        "get-tiny-image".into(),
        "tool-removed".into(),
        "needs-approval".into()
    )));
    // Unknown tools and bad dates are refused, and nothing is written.
    let before = scratch.read("catalock.toml");
    let (code, _, err) = scratch.run(&[
        "deprecate",
        "everything/nope",
        "--remove-after",
        "2027-01-31",
        "--by",
        BY,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("has no tool `nope`"), "{err}");
    let (code, _, err) = scratch.run(&[
        "deprecate",
        "everything/echo",
        "--remove-after",
        "next week",
        "--by",
        BY,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a date"), "{err}");
    assert_eq!(scratch.read("catalock.toml"), before);
}

#[test]
fn base_ref_in_a_real_repository_and_a_shallow_clone() {
    let scratch = pull_request();
    let repo = scratch.path("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::copy(scratch.path("base.lock"), repo.join("mcp.lock")).unwrap();
    // Policy only: no [[server]] to start, so the review runs without a live server.
    std::fs::write(repo.join("catalock.toml"), "# the default policy\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    let base_sha = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-qb", "feature"]);
    std::fs::copy(scratch.path("mcp.lock"), repo.join("mcp.lock")).unwrap();
    git(&repo, &["commit", "-qam", "server 2.0"]);

    let run = |dir: &Path, args: &[&str]| {
        let output = assert_cmd::Command::cargo_bin("catalock")
            .unwrap()
            .current_dir(dir)
            .env("CATALOCK_TODAY", "2026-11-29")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let (code, out, err) = run(&repo, &["check", "--base", "main"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("review against main:mcp.lock: 6 changes fail the policy"),
        "{out}"
    );
    assert!(out.contains("drift not checked"), "{out}");
    assert!(
        out.contains("to approve: catalock approve everything/echo --reason '…' --base main"),
        "{out}"
    );

    // CI's checkout: depth 1 of the pull request, base commit not fetched.
    let clone = scratch.path("clone");
    git(
        scratch.dir.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "feature",
            &format!("file://{}", repo.display()),
            "clone",
        ],
    );
    let (code, _, err) = run(&clone, &["check", "--base", &base_sha]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("git fetch"), "{err}");
    assert!(err.contains(&base_sha[..7]), "{err}");
    git(&clone, &["fetch", "-q", "--depth=1", "origin", &base_sha]);
    let (code, out, err) = run(&clone, &["check", "--base", &base_sha]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("6 changes fail the policy"), "{out}");
    let (code, _, err) = run(
        &clone,
        &[
            "approve",
            "everything",
            "--all",
            "--reason",
            "2.0",
            "--by",
            BY,
            "--base",
            &base_sha,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&clone, &["check", "--base", &base_sha]);
    assert_eq!(code, 0, "{out}{err}");

    // A lockfile the base does not have: every server is new, and safe.
    let (code, out, _) = run(
        &clone,
        &["check", "--base", &base_sha, "--lockfile", "other.lock"],
    );
    assert_eq!(code, 2, "{out}");
    let (code, _, err) = run(
        &scratch.path("clone"),
        &["check", "--base", "no-such-branch"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("no-such-branch"), "{err}");
}

/// A capture with a handshake announcing `version`.
fn versioned(scratch: &Scratch, name: &str, version: &str, description: &str) -> String {
    let text = serde_json::json!([
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "calver", "version": version}}},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "ping", "description": description, "inputSchema": {"type": "object"}}]}}
    ]);
    scratch.write(name, &text.to_string());
    name.to_string()
}

#[test]
fn versions_that_are_not_semver_are_ordered_by_when_they_were_locked() {
    let scratch = Scratch::new();
    // build-10 sorts before build-9 as text; lock order says it is newer.
    for (file, version, text) in [
        ("a.json", "build-9", "Ping."),
        ("b.json", "build-10", "Ping!"),
    ] {
        versioned(&scratch, file, version, text);
        let (code, _, err) = scratch.run(&["lock", "--from", file]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(
        scratch
            .read("mcp.lock")
            .contains("previous-versions = [\"build-9\"]\n"),
        "{}",
        scratch.read("mcp.lock")
    );
    assert_eq!(scratch.run(&["verify"]).0, 0);
    // Going back to a version locked earlier is flagged; a never-seen one is not.
    versioned(&scratch, "c.json", "build-9", "Ping?");
    let (_, out, _) = scratch.run(&["diff", "mcp.lock", "c.json", "--format", "json"]);
    assert!(out.contains("\"code\": \"version-backwards\""), "{out}");
    versioned(&scratch, "d.json", "build-11", "Ping?");
    let (_, out, _) = scratch.run(&["diff", "mcp.lock", "d.json", "--format", "json"]);
    assert!(!out.contains("version-"), "{out}");
}

/// Locks `base` into base.lock and `head` into mcp.lock (captures given as JSON values).
fn two_locks(scratch: &Scratch, base: &serde_json::Value, head: &serde_json::Value) {
    scratch.write("base.json", &base.to_string());
    scratch.write("head.json", &head.to_string());
    for (from, lockfile) in [("base.json", "base.lock"), ("head.json", "mcp.lock")] {
        let (code, _, err) = scratch.run(&[
            "lock",
            "--from",
            from,
            "--name",
            "s",
            "--lockfile",
            lockfile,
        ]);
        assert_eq!(code, 0, "{err}");
    }
}

fn capture_with(
    version: &str,
    instructions: Option<&str>,
    tools: serde_json::Value,
) -> serde_json::Value {
    let mut init = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": version}});
    if let Some(text) = instructions {
        init["instructions"] = text.into();
    }
    serde_json::json!([
        {"jsonrpc": "2.0", "id": 1, "result": init},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}}
    ])
}

fn ping() -> serde_json::Value {
    serde_json::json!([{"name": "ping", "description": "Ping.", "inputSchema": {"type": "object"}}])
}

#[test]
fn a_server_approval_covers_one_version_change_only() {
    let scratch = Scratch::new();
    two_locks(
        &scratch,
        &capture_with("1.0.0", None, ping()),
        &capture_with("0.9.0", None, ping()),
    );
    let (code, report) = review_json(&scratch, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert!(statuses(&report).contains(&(
        "@server".into(),
        "version-backwards".into(),
        "needs-approval".into()
    )));
    let (code, _, err) = scratch.run(&[
        "approve",
        "s/@server",
        "--reason",
        "rollback",
        "--by",
        BY,
        "--baseline",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(review_json(&scratch, &[]).0, 0);
    // Another version, same contract: the approval was for 0.9.0, not for whatever comes next.
    scratch.write(
        "head.json",
        &capture_with("0.1.0", None, ping()).to_string(),
    );
    scratch.run(&["lock", "--from", "head.json", "--name", "s"]);
    let (code, out, _) = scratch.run(&["check", "--baseline", "base.lock"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("approval for s/@server is stale"), "{out}");
}

#[test]
fn drift_includes_the_reported_version() {
    let scratch = Scratch::new();
    two_locks(
        &scratch,
        &capture_with("1.0.0", None, ping()),
        &capture_with("1.0.0", None, ping()),
    );
    scratch.write(
        "live.json",
        &capture_with("2.0.0", None, ping()).to_string(),
    );
    let (code, out, _) = scratch.run(&["check", "--from", "live.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("no contract changes, but serverInfo.version differs from the lockfile"),
        "{out}"
    );
    assert!(
        out.contains("to accept: catalock lock --from live.json --name s"),
        "{out}"
    );
}

#[test]
fn hidden_characters_in_names_and_newly_locked_parts_are_found() {
    let scratch = Scratch::new();
    let tools = serde_json::json!([
        {"name": "ping", "description": "Ping.", "inputSchema": {"type": "object"}},
        {"name": "de\u{200B}lete", "description": "Delete.", "inputSchema": {"type": "object"}}
    ]);
    // The base locked tools only; the head adds a handshake whose instructions hide text.
    scratch.write(
        "tools.json",
        &serde_json::json!({"tools": ping()}).to_string(),
    );
    let (code, _, err) = scratch.run(&[
        "lock",
        "--from",
        "tools.json",
        "--name",
        "s",
        "--lockfile",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    scratch.write(
        "head.json",
        &capture_with("1.0.0", Some("Be brief.\u{202E}"), tools).to_string(),
    );
    let (code, _, err) = scratch.run(&["lock", "--from", "head.json", "--name", "s"]);
    assert_eq!(code, 0, "{err}");
    let (code, report) = review_json(&scratch, &[]);
    assert_eq!(code, 1);
    let got = statuses(&report);
    for want in [
        ("de\u{200B}lete", "tool-added"),
        ("de\u{200B}lete", "hidden-unicode"),
        ("@instructions", "instructions-changed"),
        ("@instructions", "hidden-unicode"),
    ] {
        assert!(
            got.iter().any(|(s, c, _)| s == want.0 && c == want.1),
            "{want:?} in {got:?}"
        );
    }
    // The text report never prints the invisible character, and its spelling approves.
    let (_, out, _) = scratch.run(&["check", "--baseline", "base.lock"]);
    assert!(
        !out.contains('\u{200B}') && !out.contains('\u{202E}'),
        "{out}"
    );
    assert!(out.contains("tool `de<U+200B>lete`"), "{out}");
    let (code, out, err) = scratch.run(&[
        "approve",
        "s/de<U+200B>lete",
        "--reason",
        "ok",
        "--by",
        BY,
        "--baseline",
        "base.lock",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("approved s/de<U+200B>lete"), "{out}");
}

#[test]
fn a_misspelt_code_in_the_policy_is_an_error() {
    let scratch = pull_request();
    let config = scratch.read("catalock.toml");
    scratch.write(
        "catalock.toml",
        &format!("{config}\n[policy.codes]\ndescripton-changed = \"deny\"\n"),
    );
    let (code, _, err) = scratch.run(&["check", "--baseline", "base.lock"]);
    assert_eq!(code, 2);
    assert!(err.contains("names \"descripton-changed\", which is not a change code (did you mean description-changed?)"), "{err}");
    assert!(err.contains("hint: catalock explain --list"), "{err}");
}
