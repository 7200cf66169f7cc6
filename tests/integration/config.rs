//! Servers named in `catalock.toml` or an MCP client config: locked and checked together, in
//! parallel, each under its own entry, with `${VAR}` expanded only at run time.

use crate::support::{Scratch, capture, everything_stdio, fixture_server};

fn toml_list(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[test]
fn catalock_toml_locks_every_server_and_profiles_separately() {
    let s = Scratch::new();
    let everything = everything_stdio();
    let catalog = capture("memory", "tools-list.json").display().to_string();
    s.write(
        "catalock.toml",
        &format!(
            r#"
[[server]]
name = "everything"
command = "node"
args = {args}

[[server]]
name = "everything-sampling"
command = "node"
args = {args}
client-capabilities = {{ sampling = {{}} }}

[[server]]
name = "memory"
command = {fixture:?}
args = ["--catalog", {catalog:?}, "--slow-ms", "${{CATALOCK_TEST_DELAY}}"]
env = {{ API_TOKEN = "${{CATALOCK_TEST_SECRET}}" }}
"#,
            args = toml_list(&everything[1..]),
            fixture = fixture_server(),
        ),
    );
    let run = |args: &[&str]| {
        let output = s
            .cmd(args)
            .env("CATALOCK_TEST_DELAY", "50")
            .env("CATALOCK_TEST_SECRET", "very-secret-value")
            .output()
            .unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    let (code, out, err) = run(&["lock"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("added server `everything`: 13 tools"), "{out}");
    assert!(
        out.contains("added server `everything-sampling`: 14 tools"),
        "{out}"
    );
    assert!(out.contains("added server `memory`: 9 tools"), "{out}");
    let lock = s.read("mcp.lock");
    assert!(
        !lock.contains("very-secret-value"),
        "a secret reached the lockfile"
    );
    assert!(
        lock.contains(r#""--slow-ms", "${CATALOCK_TEST_DELAY}""#),
        "args are recorded as written:\n{lock}"
    );
    assert!(lock.contains(r#"client-capabilities = '{"sampling":{}}'"#));
    let (code, out, err) = run(&["check"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = run(&["check", "--name", "memory"]);
    assert_eq!(code, 0, "{out}");
    // A missing variable names the variable, not a value, and nothing runs.
    let (code, _, err) = s.run(&["check"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("uses ${CATALOCK_TEST_")
            && err.contains("which is not set")
            && !err.contains("very-secret"),
        "{err}"
    );
}

#[test]
fn mcp_client_configs_are_read_and_detected() {
    let s = Scratch::new();
    let everything = everything_stdio();
    let catalog = capture("memory", "tools-list.json").display().to_string();
    s.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {
            "everything": {"command": "node", "args": &everything[1..]},
            "Memory Server": {"command": fixture_server(), "args": ["--catalog", catalog]}
        }})
        .to_string(),
    );
    let (code, out, err) = s.run(&["lock"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("added server `Memory-Server`: 9 tools")
            && out.contains("2 servers from ./.mcp.json"),
        "{out}"
    );
    // VS Code's shape, named explicitly.
    std::fs::create_dir_all(s.path(".vscode")).unwrap();
    s.write(".vscode/mcp.json", &serde_json::json!({"servers": {"mem": {"type": "stdio", "command": fixture_server(), "args": ["--catalog", catalog]}}}).to_string());
    let (code, out, err) = s.run(&[
        "lock",
        "--mcp-config",
        ".vscode/mcp.json",
        "--lockfile",
        "vscode.lock",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(s.read("vscode.lock").contains("name = \"mem\""));
    // A failing server fails the run and writes nothing.
    s.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"broken": {"command": "no-such-binary-anywhere"}}})
            .to_string(),
    );
    let before = s.read("mcp.lock");
    let (code, _, err) = s.run(&["lock"]);
    assert_eq!(code, 2);
    assert!(err.contains("server `broken`: cannot start"), "{err}");
    assert_eq!(s.read("mcp.lock"), before);
}

#[test]
fn ten_servers_lock_in_parallel() {
    let s = Scratch::new();
    let catalog = capture("memory", "tools-list.json").display().to_string();
    let mut config = String::new();
    for i in 0..10 {
        config.push_str(&format!(
            "[[server]]\nname = \"s{i}\"\ncommand = {:?}\nargs = [\"--catalog\", {catalog:?}, \"--slow-ms\", \"300\"]\n\n",
            fixture_server()
        ));
    }
    s.write("catalock.toml", &config);
    let (code, out, err) = s.run(&["lock", "--jobs", "10"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("10 servers from"), "{out}");
    assert_eq!(s.read("mcp.lock").matches("[[server]]").count(), 10);
}

#[test]
fn mcp_config_keys_that_share_a_lockfile_name_are_refused() {
    let s = Scratch::new();
    s.write(
        ".mcp.json",
        r#"{"mcpServers": {"my server": {"command": "a"}, "my-server": {"command": "b"}}}"#,
    );
    let (code, _, err) = s.run(&["lock"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("two servers would both be named `my-server` in the lockfile"),
        "{err}"
    );
}
