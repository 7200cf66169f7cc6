//! Bad input: a one-line cause, the next command, exit 2, never a panic, nothing overwritten.

use crate::support::{Scratch, capture};

/// Runs a command expected to fail with exit 2; returns stderr.
fn fails(s: &Scratch, args: &[&str]) -> String {
    let (code, out, err) = s.run(args);
    assert_eq!(code, 2, "{args:?}: expected exit 2\n{out}{err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one cause line and one hint line: {err}");
    assert!(
        lines[0].starts_with("error: ") && lines[1].starts_with("hint: "),
        "{err}"
    );
    err
}

#[test]
fn malformed_json_names_line_and_column() {
    let s = Scratch::new();
    s.write(
        "bad.json",
        "{\"tools\": [\n  {\"name\": \"a\", \"inputSchema\": {}},\n  {\"name\": \"b\",}\n]}\n",
    );
    let err = fails(&s, &["lock", "--from", "bad.json"]);
    assert!(
        err.contains("bad.json is not valid JSON: key must be a string at line 3 column 16"),
        "{err}"
    );
}

#[test]
fn malformed_jsonl_line_is_named() {
    let s = Scratch::new();
    let good = std::fs::read_to_string(capture("memory", "tools-list.responses.jsonl")).unwrap();
    s.write(
        "bad.jsonl",
        &format!(
            "{}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[}}\n",
            good.trim()
        ),
    );
    let err = fails(&s, &["lock", "--from", "bad.jsonl"]);
    assert!(err.contains("at line 2 column"), "{err}");
}

#[test]
fn duplicate_tool_names_are_refused_with_both_places() {
    let s = Scratch::new();
    s.write("dup.json", "[{\"tools\":[{\"name\":\"a\",\"inputSchema\":{}}],\"nextCursor\":\"2\"},\n{\"tools\":[{\"name\":\"a\",\"inputSchema\":{}}]}]");
    let err = fails(&s, &["lock", "--from", "dup.json"]);
    assert!(err.contains("duplicate tool name \"a\": at dup.json line 1 column 12 and at dup.json line 2 column 11"), "{err}");
}

#[test]
fn duplicate_object_keys_are_refused() {
    let s = Scratch::new();
    s.write("dup.json", "{\"tools\":[{\"name\":\"a\",\"description\":\"safe\",\n\"description\":\"rm -rf\",\"inputSchema\":{}}]}");
    let err = fails(&s, &["lock", "--from", "dup.json"]);
    assert!(
        err.contains("duplicate object key \"description\" at line 2 column 13"),
        "{err}"
    );
    s.write("dup2.json", "{\"tools\":[],\"tools\":[]}");
    let err = fails(&s, &["lock", "--from", "dup2.json"]);
    assert!(err.contains("duplicate object key \"tools\""), "{err}");
}

#[test]
fn non_object_and_nameless_tools_are_refused() {
    let s = Scratch::new();
    for (text, expected) in [
        (
            "{\"tools\":[{\"name\":\"a\",\"inputSchema\":{}}, 42]}",
            "tool #2 at t.json line 1 column 42 is a number, not an object",
        ),
        (
            "{\"tools\":[{\"inputSchema\":{}}]}",
            "tool #1 at t.json line 1 column 11 has no \"name\"",
        ),
        (
            "{\"tools\":[{\"name\":7}]}",
            "has a \"name\" that is not a string",
        ),
        ("{\"tools\":{}}", "\"tools\" is an object, not an array"),
        (
            "\"tools\"",
            "the document is a string; expected an object or an array",
        ),
        ("{\"prompts\":[]}", "holds no tools/list result"),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}",
            "JSON-RPC error response (code -32601: \"Method not found\")",
        ),
        (
            "{\"tools\":[],\"nextCursor\":\"page-2\"}",
            "is incomplete: every tools/list page in it has a nextCursor (last \"page-2\")",
        ),
        ("   \n", "t.json is empty"),
        ("{\"foo\":1}", "an object with keys foo is not a tools/list"),
    ] {
        s.write("t.json", text);
        let err = fails(&s, &["lock", "--from", "t.json"]);
        assert!(err.contains(expected), "{text}: {err}");
    }
    std::fs::write(s.path("t.json"), b"{\"tools\":[{\"name\":\"\xff\"}]}").unwrap();
    let err = fails(&s, &["lock", "--from", "t.json"]);
    assert!(
        err.contains("is not UTF-8 text (invalid byte at offset 19)"),
        "{err}"
    );
}

#[test]
fn failed_lock_leaves_the_lockfile_untouched() {
    let s = Scratch::new();
    s.lock_everything();
    let before = s.read("mcp.lock");
    s.write(
        "bad.json",
        "{\"tools\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
    );
    fails(&s, &["lock", "--from", "bad.json", "--name", "everything"]);
    assert_eq!(s.read("mcp.lock"), before);
}

#[test]
fn broken_lockfiles_are_refused_and_never_overwritten() {
    for (name, text, expected) in [
        (
            "toml-error",
            "version = 1\n[[server]\nname = 'x'\n",
            "mcp.lock:2:",
        ),
        (
            "conflict",
            "version = 1\n<<<<<<< HEAD\n[[server]]\n=======\n>>>>>>> main\n",
            "mcp.lock:2: merge-conflict markers",
        ),
        (
            "future",
            "version = 2\ndigest-algorithm = \"catalock-digest-v2\"\n",
            "has format version 2; this catalock",
        ),
        (
            "not-ours",
            "[package]\nname = \"x\"\n",
            "has no `version`; it is not a catalock lockfile",
        ),
        (
            "unknown-key",
            "version = 1\ndigest-algorithm = \"catalock-digest-v1\"\ncatalog-revision-algorithm = \"ram-tool-catalog-v1\"\ntokenizer = \"o200k_base\"\nsurprise = 1\n",
            "unknown field `surprise`",
        ),
        (
            "algorithm",
            "version = 1\ndigest-algorithm = \"md5\"\ncatalog-revision-algorithm = \"ram-tool-catalog-v1\"\ntokenizer = \"o200k_base\"\n",
            "digest-algorithm is \"md5\"",
        ),
    ] {
        let s = Scratch::new();
        s.copy(&capture("memory", "tools-list.json"), "tools.json");
        s.write("mcp.lock", text);
        for args in [
            vec!["lock", "--from", "tools.json"],
            vec!["check", "--from", "tools.json"],
            vec!["verify"],
            vec!["diff", "mcp.lock", "tools.json"],
        ] {
            let err = fails(&s, &args);
            assert!(err.contains(expected), "{name} {args:?}: {err}");
        }
        assert_eq!(s.read("mcp.lock"), text, "{name}: the lockfile was changed");
    }
}

#[test]
fn missing_files_and_usage_errors() {
    let s = Scratch::new();
    let err = fails(&s, &["check", "--from", "nope.json"]);
    assert!(err.contains("mcp.lock does not exist"), "{err}");
    s.copy(&capture("memory", "tools-list.json"), "tools.json");
    assert_eq!(s.run(&["lock", "--from", "tools.json"]).0, 0);
    let err = fails(&s, &["check", "--from", "nope.json"]);
    assert!(
        err.contains("cannot read nope.json: No such file or directory"),
        "{err}"
    );
    let err = fails(&s, &["check"]);
    assert!(
        err.contains("check needs a captured catalog (--from FILE) or a server to start (-- COMMAND [ARGS...])"),
        "{err}"
    );
    let err = fails(&s, &["lock", "--from", "tools.json", "--name", "has space"]);
    assert!(err.contains("hint: pass --name has-space"), "{err}");
    let (code, _, err) = s.run(&["frobnicate"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn corrupt_entry_in_another_server_blocks_lock() {
    let s = Scratch::new();
    s.lock_everything();
    let lock = s.read("mcp.lock");
    let edited = lock.replacen("\"Echo Tool\"", "\"Echo Tool!\"", 1);
    s.write("mcp.lock", &edited);
    s.copy(&capture("memory", "tools-list.json"), "memory.json");
    let err = fails(&s, &["lock", "--from", "memory.json", "--name", "memory"]);
    assert!(err.contains("server `everything`, tool echo"), "{err}");
    assert_eq!(s.read("mcp.lock"), edited);
    // Relocking the corrupt entry itself repairs it.
    s.lock_everything();
    assert_eq!(s.read("mcp.lock"), lock);
}
