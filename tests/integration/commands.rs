//! lock / check / diff / verify / fmt behaviour and exit codes (0 same, 1 different, 2 trouble).

use crate::support::{Scratch, capture, example};

/// The everything capture with one change applied to the `echo` tool.
fn changed_everything(s: &Scratch, change: impl Fn(&mut serde_json::Value)) -> String {
    let mut pages: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(capture("everything", "tools-list.json")).unwrap(),
    )
    .unwrap();
    let echo = pages[0]["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "echo")
        .unwrap();
    change(echo);
    s.write("changed.json", &pages.to_string());
    "changed.json".to_string()
}

#[test]
fn check_passes_on_the_locked_capture_and_fails_on_a_change() {
    let s = Scratch::new();
    s.lock_everything();
    let (code, out, _) = s.run(&["check", "--from", "tools-list.json"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("no contract changes"), "{out}");
    // A tools-only capture says nothing about prompts: not compared, and said so.
    assert!(
        out.contains("prompts: captured only on the before side, so not compared"),
        "{out}"
    );

    let file = changed_everything(&s, |echo| {
        echo["description"] = "Echoes back the input string twice".into()
    });
    let (code, out, _) = s.run(&["check", "--from", &file]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("risky     description-changed /description: 5 -> 6 words"),
        "{out}"
    );
    assert!(
        out.contains("        Echoes back the input string{+ twice+}\n"),
        "{out}"
    );
    assert!(
        out.contains("to accept: catalock lock --from changed.json --name everything"),
        "{out}"
    );
}

#[test]
fn the_accept_command_accepts() {
    let s = Scratch::new();
    s.lock_everything();
    let file = changed_everything(&s, |echo| {
        echo["annotations"]["readOnlyHint"] = false.into()
    });
    let (code, out, _) = s.run(&["check", "--from", &file]);
    assert_eq!(code, 1);
    assert!(
        out.contains("permission-escalated /annotations/readOnlyHint: readOnlyHint true -> false"),
        "{out}"
    );
    let accept = out
        .lines()
        .find_map(|l| l.strip_prefix("to accept: catalock "))
        .expect("accept line");
    let args: Vec<&str> = accept.split(' ').collect();
    assert_eq!(s.run(&args).0, 0);
    assert_eq!(s.run(&["check", "--from", &file]).0, 0);
}

#[test]
fn each_section_reports_its_own_change() {
    type Change = fn(&mut serde_json::Value);
    let cases: [(&str, &str, Change); 4] = [
        ("surface", "input-constraint-tightened", |t| {
            t["inputSchema"]["properties"]["message"]["maxLength"] = 10.into()
        }),
        ("behavior", "execution-changed", |t| {
            t["execution"]["taskSupport"] = "optional".into()
        }),
        ("behavior", "meta-changed", |t| {
            t["_meta"] = serde_json::json!({"ui": {"resourceUri": "ui://x"}})
        }),
        ("permissions", "permission-escalated", |t| {
            t["annotations"]["openWorldHint"] = true.into()
        }),
    ];
    for (section, code, change) in cases {
        let s = Scratch::new();
        s.lock_everything();
        let file = changed_everything(&s, change);
        let (status, out, _) = s.run(&["check", "--from", &file, "--format", "json"]);
        assert_eq!(status, 1, "{out}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let server = &report["servers"][0];
        let echo = server["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "echo")
            .expect(&out);
        let sections: Vec<&str> = echo["sections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["section"].as_str().unwrap())
            .filter(|s| *s != "economy")
            .collect();
        assert_eq!(sections, [section], "{code}");
        let codes: Vec<&str> = server["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, [code], "{section}");
    }
}

#[test]
fn stating_a_default_hint_is_not_a_change() {
    let s = Scratch::new();
    let tool = |annotations: &str| {
        format!(
            r#"{{"tools":[{{"name":"search","inputSchema":{{"type":"object"}}{annotations}}}]}}"#
        )
    };
    s.write("bare.json", &tool(""));
    s.write(
        "defaults.json",
        &tool(r#","annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}"#),
    );
    s.write("empty.json", &tool(r#","annotations":{}"#));
    s.write("titled.json", &tool(r#","annotations":{"title":null}"#));
    s.write(
        "flipped.json",
        &tool(r#","annotations":{"readOnlyHint":true}"#),
    );
    assert_eq!(s.run(&["lock", "--from", "bare.json", "--name", "s"]).0, 0);
    for same in ["defaults.json", "empty.json"] {
        let (code, out, _) = s.run(&["check", "--from", same]);
        assert_eq!(code, 0, "{same}: {out}");
        assert!(
            out.contains("differs only in ways no client can observe"),
            "{same}: {out}"
        );
    }
    let (code, out, _) = s.run(&["check", "--from", "titled.json"]);
    assert_eq!(
        code, 1,
        "annotations.title = null is a real (behavior) change: {out}"
    );
    assert!(
        out.contains("cosmetic  title-changed /annotations/title: added: null"),
        "{out}"
    );
    let (code, out, _) = s.run(&["check", "--from", "flipped.json"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("permission-relaxed /annotations/readOnlyHint: readOnlyHint false -> true"),
        "{out}"
    );
}

#[test]
fn diff_accepts_lockfiles_and_captures_on_either_side() {
    let s = Scratch::new();
    s.copy(&example("session.jsonl"), "old.jsonl");
    s.copy(&example("session-changed.jsonl"), "new.jsonl");
    assert_eq!(
        s.run(&["lock", "--from", "old.jsonl", "--lockfile", "old.lock"])
            .0,
        0
    );
    assert_eq!(
        s.run(&["lock", "--from", "new.jsonl", "--lockfile", "new.lock"])
            .0,
        0
    );
    for (old, new) in [
        ("old.lock", "new.lock"),
        ("old.lock", "new.jsonl"),
        ("old.jsonl", "new.lock"),
        ("old.jsonl", "new.jsonl"),
    ] {
        let (code, out, err) = s.run(&["diff", old, new]);
        assert_eq!(code, 1, "{old} {new}: {out}{err}");
        assert!(
            out.contains("safe      tool-added: new tool"),
            "{old} {new}: {out}"
        );
        assert!(
            out.contains("breaking  tool-removed: `get-tiny-image` is gone"),
            "{old} {new}: {out}"
        );
        assert!(
            out.starts_with("2 breaking, 3 risky, 1 safe in 5 tools and the server (1 server)"),
            "{old} {new}: {out}"
        );
    }
    let (code, out, _) = s.run(&["diff", "old.lock", "old.jsonl"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(s.run(&["diff", "new.lock", "new.lock"]).0, 0);
}

#[test]
fn verify_names_the_line_of_a_hand_edited_entry() {
    let s = Scratch::new();
    s.lock_everything();
    assert_eq!(s.run(&["verify"]).0, 0);
    let lock = s.read("mcp.lock");
    let edited = lock.replacen(
        "description = \"Returns all environment variables",
        "description = \"Returns no environment variables",
        1,
    );
    assert_ne!(edited, lock);
    s.write("mcp.lock", &edited);
    let tool_line = edited[..edited.find("name = \"get-env\"").unwrap()]
        .lines()
        .count();
    let (code, out, _) = s.run(&["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "line {tool_line}: server `everything`: tool get-env: surface is sha256:"
        )),
        "{out}"
    );
    assert!(out.contains("[digest-mismatch]"), "{out}");
    // check and diff refuse a lockfile that does not match its digests.
    let (code, _, err) = s.run(&["check", "--from", "tools-list.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "mcp.lock:{tool_line}: server `everything`, tool get-env: surface is"
        )),
        "{err}"
    );
    assert!(
        err.contains("hint: run `catalock verify --lockfile mcp.lock`"),
        "{err}"
    );
    assert_eq!(s.run(&["diff", "mcp.lock", "tools-list.json"]).0, 2);
}

#[test]
fn verify_catches_edited_digests_counts_and_tokens() {
    for (from, to, code) in [
        ("tool-count = 13", "tool-count = 12", "count-mismatch"),
        ("tokens = 57\n", "tokens = 58\n", "digest-mismatch"),
        (
            "catalog-revision = \"sha256:0",
            "catalog-revision = \"sha256:1",
            "digest-mismatch",
        ),
        (
            "server-digest = \"sha256:8",
            "server-digest = \"sha256:9",
            "digest-mismatch",
        ),
    ] {
        let s = Scratch::new();
        s.lock_everything();
        let lock = s.read("mcp.lock");
        if !lock.contains(from) {
            // The digest prefixes above fit the fixture; fail loudly if it changes.
            panic!("fixture lockfile lacks {from:?}");
        }
        s.write("mcp.lock", &lock.replacen(from, to, 1));
        let (exit, out, _) = s.run(&["verify"]);
        assert_eq!(exit, 1, "{from}: {out}");
        assert!(out.contains(&format!("[{code}]")), "{from}: {out}");
    }
}

#[test]
fn reformatted_lockfile_is_valid_but_not_canonical_and_fmt_restores_it() {
    let s = Scratch::new();
    s.lock_everything();
    let canonical = s.read("mcp.lock");
    // Valid TOML, same content: a key re-quoted and a comment added.
    let edited = canonical.replacen("tool-count = 13", "\"tool-count\" = 13 # thirteen", 1);
    s.write("mcp.lock", &edited);
    let (code, out, _) = s.run(&["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("[not-canonical]")
            && out.contains("to accept: catalock fmt --lockfile mcp.lock"),
        "{out}"
    );
    assert_eq!(
        s.run(&["check", "--from", "tools-list.json"]).0,
        0,
        "a non-canonical but sound lockfile is still trusted"
    );
    assert_eq!(s.run(&["fmt", "--check"]).0, 1);
    assert_eq!(s.run(&["fmt"]).0, 0);
    assert_eq!(s.read("mcp.lock"), canonical);
    assert_eq!(s.run(&["fmt", "--check"]).0, 0);
}

#[test]
fn json_output_is_one_document_with_the_exit_code() {
    let s = Scratch::new();
    s.lock_everything();
    let file = changed_everything(&s, |echo| echo["title"] = "Echo".into());
    let (code, out, _) = s.run(&["check", "--from", &file, "--format", "json"]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["outcome"], "changed");
    assert_eq!(report["exit_code"], 1);
    assert_eq!(
        report["servers"][0]["tools"][0]["sections"][0]["fields"][0]["field"],
        "title"
    );
    // Errors are JSON documents too, on stdout.
    let (code, out, _) = s.run(&["check", "--from", "missing.json", "--format", "json"]);
    assert_eq!(code, 2);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["outcome"], "error");
    assert_eq!(report["error"]["kind"], "input");
}

#[test]
fn lockfile_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    s.lock_everything();
    let mode = |s: &Scratch| {
        std::fs::metadata(s.path("mcp.lock"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&s), 0o644);
    std::fs::set_permissions(s.path("mcp.lock"), std::fs::Permissions::from_mode(0o664)).unwrap();
    let file = changed_everything(&s, |echo| echo["title"] = "Echo".into());
    assert_eq!(
        s.run(&["lock", "--from", &file, "--name", "everything"]).0,
        0
    );
    assert_eq!(mode(&s), 0o664);
    let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}
