//! Every capture shape users save gives the same contract.

use crate::support::{Scratch, capture, tools_of};

const SERVERS: [&str; 5] = ["everything", "filesystem", "memory", "notion", "playwright"];

/// The `[[server.tool]]` blocks of a lockfile, for comparing contracts across shapes (the
/// `source` line names the file and legitimately differs).
fn tool_blocks(lockfile: &str) -> String {
    let start = lockfile.find("[[server.tool]]").expect("a tool");
    lockfile[start..].to_string()
}

fn lock_as(s: &Scratch, file: &str, lockfile: &str) -> String {
    let (code, out, err) = s.run(&[
        "lock",
        "--from",
        file,
        "--name",
        "x",
        "--lockfile",
        lockfile,
    ]);
    assert_eq!(code, 0, "lock {file}: {out}{err}");
    s.read(lockfile)
}

#[test]
fn every_shape_gives_the_same_contract() {
    for server in SERVERS {
        let s = Scratch::new();
        let pages = capture(server, "tools-list.json");
        let tools = tools_of(&pages);
        let result = serde_json::json!({ "tools": tools });
        let response = serde_json::json!({ "jsonrpc": "2.0", "id": 7, "result": result });
        s.copy(&pages, "pages.json");
        s.copy(
            &capture(server, "tools-list.responses.jsonl"),
            "responses.jsonl",
        );
        s.write(
            "result.json",
            &serde_json::to_string_pretty(&result).unwrap(),
        );
        s.write("response.json", &response.to_string());
        s.write(
            "responses.json",
            &serde_json::Value::Array(vec![response.clone()]).to_string(),
        );
        s.write(
            "bare.json",
            &serde_json::Value::Array(tools.clone()).to_string(),
        );
        // A JSONL transcript with the request, a notification and a CRLF line ending.
        s.write(
            "transcript.jsonl",
            &format!(
                "{}\r\n{}\n\n{}\n",
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
                response
            ),
        );
        let reference = tool_blocks(&lock_as(&s, "pages.json", "pages.lock"));
        for file in [
            "responses.jsonl",
            "result.json",
            "response.json",
            "responses.json",
            "bare.json",
            "transcript.jsonl",
        ] {
            let lock = file.replace('.', "-") + ".lock";
            assert_eq!(
                tool_blocks(&lock_as(&s, file, &lock)),
                reference,
                "{server}: {file} differs from pages.json"
            );
        }
    }
}

#[test]
fn stdin_is_read_with_dash() {
    let s = Scratch::new();
    let pages = std::fs::read(capture("memory", "tools-list.json")).unwrap();
    s.cmd(&["lock", "--from", "-", "--name", "memory"])
        .write_stdin(pages)
        .assert()
        .success();
    let lock = s.read("mcp.lock");
    assert!(lock.contains("source = \"capture: stdin\""), "{lock}");
    assert!(lock.contains("tool-count = 9"), "{lock}");
}

#[test]
fn tool_order_and_key_order_do_not_change_the_lockfile() {
    let s = Scratch::new();
    let tools = tools_of(&capture("notion", "tools-list.json"));
    s.write("a.json", &serde_json::json!({ "tools": tools }).to_string());
    let mut reversed = tools.clone();
    reversed.reverse();
    // serde_json without preserve_order writes keys sorted; rebuild each tool with reversed
    // key order by hand.
    let reordered: Vec<String> = reversed
        .iter()
        .map(|t| {
            let members: Vec<String> = t
                .as_object()
                .unwrap()
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v))
                .collect();
            format!("{{{}}}", members.join(","))
        })
        .collect();
    s.write(
        "b.json",
        &format!(
            "{{\"nextCursor\":null,\"tools\":[{}]}}",
            reordered.join(",")
        ),
    );
    let a = lock_as(&s, "a.json", "a.lock");
    let b = lock_as(&s, "b.json", "b.lock");
    assert_eq!(a.replace("a.json", "X"), b.replace("b.json", "X"));
}

#[test]
fn relocking_is_byte_identical_and_does_not_rewrite() {
    let s = Scratch::new();
    s.lock_everything();
    let first = s.read("mcp.lock");
    let modified = std::fs::metadata(s.path("mcp.lock"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.lock_everything();
    assert_eq!(s.read("mcp.lock"), first);
    assert_eq!(
        std::fs::metadata(s.path("mcp.lock"))
            .unwrap()
            .modified()
            .unwrap(),
        modified,
        "an unchanged relock must not touch the file"
    );
    assert!(
        !first.contains(s.dir.path().to_str().unwrap()),
        "no machine paths in the lockfile"
    );
}

#[test]
fn prompts_templates_and_instructions_are_locked() {
    let s = Scratch::new();
    s.lock_everything();
    let lock = s.read("mcp.lock");
    for expected in [
        "prompt-count = 4",
        "resource-template-count = 2",
        "[[server.prompt]]\nname = \"args-prompt\"",
        "uri-template = \"demo://resource/dynamic/text/{resourceId}\"",
        "instructions = '''\n# Everything Server",
        "protocol-version = \"2025-11-25\"",
        "name = \"everything\"",
    ] {
        assert!(lock.contains(expected), "missing {expected:?} in\n{lock}");
    }
}

#[test]
fn several_servers_share_one_lockfile() {
    let s = Scratch::new();
    for server in ["memory", "filesystem"] {
        s.copy(
            &capture(server, "tools-list.json"),
            &format!("{server}.json"),
        );
        s.copy(
            &capture(server, "initialize.json"),
            &format!("{server}-init.json"),
        );
        let (code, _, err) = s.run(&[
            "lock",
            "--from",
            &format!("{server}-init.json"),
            "--from",
            &format!("{server}.json"),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let lock = s.read("mcp.lock");
    assert!(
        lock.contains("name = \"secure-filesystem-server\""),
        "{lock}"
    );
    assert!(lock.contains("name = \"memory-server\""));
    // Servers are sorted by name, and each checks against its own entry.
    assert!(lock.find("secure-filesystem-server").unwrap() > lock.find("memory-server").unwrap());
    assert_eq!(
        s.run(&["check", "--from", "memory.json", "--name", "memory-server"])
            .0,
        0
    );
    // A capture without serverInfo cannot pick among several entries by itself.
    let (code, _, err) = s.run(&["check", "--from", "memory.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("has no server `memory`")
            && err.contains("memory-server, secure-filesystem-server"),
        "{err}"
    );
    assert_eq!(
        s.run(&[
            "check",
            "--from",
            "filesystem.json",
            "--name",
            "secure-filesystem-server"
        ])
        .0,
        0
    );
    assert_eq!(
        s.run(&[
            "check",
            "--from",
            "memory.json",
            "--name",
            "secure-filesystem-server"
        ])
        .0,
        1
    );
}
