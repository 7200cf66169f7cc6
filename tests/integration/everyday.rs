//! Everyday commands: `show`, `digest`, `completions`, `man`, and the pre-commit hooks file.

use crate::support::{Scratch, root};

#[test]
fn show_lists_servers_tools_and_one_tool_in_each_format() {
    let scratch = crate::support::locked_pull_request();
    let (code, out, err) = scratch.run(&["show", "--lockfile", "base.lock"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("show_servers", out);
    let (code, out, _) = scratch.run(&[
        "show",
        "everything",
        "--lockfile",
        "base.lock",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("show_tools_markdown", out);
    let (code, out, _) = scratch.run(&["show", "everything/echo", "--lockfile", "base.lock"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("show_tool", out);
    let (code, out, _) = scratch.run(&[
        "show",
        "everything/echo",
        "--lockfile",
        "base.lock",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let tool: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tool["name"], "echo");
    let (code, _, err) = scratch.run(&["show", "everything/nope", "--lockfile", "base.lock"]);
    assert_eq!(code, 2);
    assert!(err.contains("has no tool `nope` (it has: echo,"), "{err}");
    let (code, _, err) = scratch.run(&["show", "nobody", "--lockfile", "base.lock"]);
    assert_eq!(code, 2);
    assert!(err.contains("has no server `nobody`"), "{err}");
}

#[test]
fn digest_prints_what_releases_cite() {
    let scratch = crate::support::locked_pull_request();
    let lock = scratch.read("mcp.lock");
    let recorded = lock
        .lines()
        .find_map(|l| l.strip_prefix("server-digest = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("server-digest line");
    let (code, out, _) = scratch.run(&["digest"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!("{recorded}  everything  (13 tools, 1102 tokens)\n")
    );
    let (code, out, _) = scratch.run(&["digest", "everything", "--server-json"]);
    assert_eq!(code, 0);
    let meta: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        meta["_meta"]["io.catalock/digest"]["server-digest"],
        recorded
    );
    assert_eq!(
        meta["_meta"]["io.catalock/digest"]["algorithm"],
        "catalock-digest-v1"
    );
}

#[test]
fn completions_and_man_page() {
    let scratch = Scratch::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, err) = scratch.run(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for command in ["lock", "check", "approve", "deprecate", "show"] {
            assert!(out.contains(command), "{shell} completions lack {command}");
        }
    }
    let (code, out, _) = scratch.run(&["man"]);
    assert_eq!(code, 0);
    assert!(out.contains(".TH catalock 1"), "{out}");
    assert!(out.contains("approve"), "{out}");
}

#[test]
fn pre_commit_hooks_run_real_commands() {
    let hooks = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    let entries: Vec<&str> = hooks
        .lines()
        .filter_map(|l| l.trim().strip_prefix("entry: "))
        .collect();
    assert_eq!(entries, ["catalock check", "catalock verify"]);
    // Each entry is a real command line: it parses and verify passes on a good lockfile.
    let scratch = crate::support::locked_pull_request();
    for entry in &entries {
        let mut args: Vec<&str> = entry.split(' ').skip(1).collect();
        args.push("--help");
        assert_eq!(scratch.run(&args).0, 0, "{entry}");
    }
    assert_eq!(scratch.run(&["verify"]).0, 0);
}

#[test]
fn init_turns_an_mcp_config_into_catalock_toml_a_lockfile_and_a_workflow() {
    let scratch = Scratch::new();
    let server = crate::support::fixture_stdio(&[]);
    scratch.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"notes": {
            "command": server[0], "args": server[1..],
            "env": {"NOTES_TOKEN": "s3cr3t-value"}
        }}})
        .to_string(),
    );
    // The server gets its secret from the environment, as the config now says.
    let output = scratch
        .cmd(&["init"])
        .env("NOTES_TOKEN", "s3cr3t-value")
        .output()
        .unwrap();
    let (code, out, err) = (
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("wrote catalock.toml (1 server from .mcp.json)"),
        "{out}"
    );
    let config = scratch.read("catalock.toml");
    assert!(config.contains("name = \"notes\""), "{config}");
    assert!(
        config.contains("\"NOTES_TOKEN\" = \"${NOTES_TOKEN}\""),
        "{config}"
    );
    assert!(config.contains("# owner = \"your-team\""), "{config}");
    for file in [
        "catalock.toml",
        "mcp.lock",
        ".github/workflows/catalock.yml",
    ] {
        assert!(
            !scratch.read(file).contains("s3cr3t-value"),
            "{file} holds the secret"
        );
    }
    assert!(scratch.read("mcp.lock").contains("name = \"notes\""));
    assert_eq!(
        scratch.read(".github/workflows/catalock.yml"),
        catalock::init::WORKFLOW
    );

    // Nothing is overwritten without --force.
    let before = scratch.read("catalock.toml");
    let (code, _, err) = scratch.run(&["init"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("catalock.toml, mcp.lock, .github/workflows/catalock.yml already exist"),
        "{err}"
    );
    assert!(err.contains("catalock init --force"), "{err}");
    assert_eq!(scratch.read("catalock.toml"), before);
}

#[test]
fn init_finds_a_node_server_package_and_says_when_there_is_none() {
    let scratch = Scratch::new();
    let (code, _, err) = scratch.run(&["init", "--no-lock"]);
    assert_eq!(code, 2);
    assert!(err.contains("found no MCP server here"), "{err}");
    scratch.write(
        "package.json",
        r#"{"name": "@acme/weather-mcp", "bin": {"weather-mcp": "dist/index.js"}, "dependencies": {"@modelcontextprotocol/sdk": "^1.20.0"}}"#,
    );
    let (code, out, err) = scratch.run(&["init", "--no-lock"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 server from package.json"), "{out}");
    let config = scratch.read("catalock.toml");
    assert!(config.contains("name = \"weather-mcp\"\n# owner = \"your-team\"\ncommand = \"node\"\nargs = [\"dist/index.js\"]"), "{config}");
    assert!(!scratch.path("mcp.lock").exists());
}

#[test]
fn colour_only_on_request_or_a_terminal() {
    let scratch = crate::support::locked_pull_request();
    let args = ["check", "--baseline", "base.lock"];
    let plain = scratch.cmd(&args).env_remove("NO_COLOR").output().unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains('\u{1b}'));
    let forced = scratch
        .cmd(&args)
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    let forced = String::from_utf8_lossy(&forced.stdout).into_owned();
    assert!(
        forced.contains("\u{1b}[1m\u{1b}[31mbreaking\u{1b}[0m"),
        "{forced}"
    );
    let no_color = scratch
        .cmd(&args)
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&no_color.stdout).contains('\u{1b}'));
    // A text report written to a file never has styles.
    scratch
        .cmd(&[
            "check",
            "--baseline",
            "base.lock",
            "--format",
            "text=report.txt",
        ])
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(!scratch.read("report.txt").contains('\u{1b}'));
}
