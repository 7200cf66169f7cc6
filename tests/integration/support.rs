//! Shared helpers: a scratch directory per test, fixture paths, and running the binary.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn capture(server: &str, file: &str) -> PathBuf {
    fixtures().join("captures").join(server).join(file)
}

pub fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/everything")
        .join(file)
}

/// A temporary working directory; commands run inside it so paths in output are relative.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Copies a file into the scratch directory under `name`.
    pub fn copy(&self, from: &Path, name: &str) -> PathBuf {
        let to = self.path(name);
        std::fs::copy(from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        to
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let to = self.path(name);
        std::fs::write(&to, text).expect("write");
        to
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("read")
    }

    /// `catalock ARGS` run in the scratch directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("catalock").expect("binary");
        cmd.current_dir(self.dir.path())
            .env("NO_COLOR", "1")
            // Deprecations, ignores and approvals are dated: fix "today".
            .env("CATALOCK_TODAY", "2026-11-29")
            .args(args);
        cmd
    }

    /// Runs and returns (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.cmd(args).output().expect("run catalock");
        (
            output.status.code().expect("exit code"),
            String::from_utf8(output.stdout).expect("utf-8 stdout"),
            String::from_utf8(output.stderr).expect("utf-8 stderr"),
        )
    }

    /// Locks the everything server from its four captures into `mcp.lock`.
    pub fn lock_everything(&self) {
        for file in [
            "initialize.json",
            "tools-list.json",
            "prompts-list.json",
            "resources-templates-list.json",
        ] {
            self.copy(&capture("everything", file), file);
        }
        let (code, _, err) = self.run(&[
            "lock",
            "--from",
            "initialize.json",
            "--from",
            "tools-list.json",
            "--from",
            "prompts-list.json",
            "--from",
            "resources-templates-list.json",
        ]);
        assert_eq!(code, 0, "{err}");
    }
}

/// The tools of a `tools/list` capture (an array of result pages), as JSON values.
pub fn tools_of(path: &Path) -> Vec<serde_json::Value> {
    let pages: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    pages
        .iter()
        .flat_map(|p| p["tools"].as_array().expect("tools").clone())
        .collect()
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `node .../server-everything/dist/index.js`, installed by `scripts/install-test-servers`.
pub fn everything_stdio() -> Vec<String> {
    let script = root()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "server-everything is not installed: run scripts/install-test-servers (scripts/test does)"
    );
    vec![
        "node".to_string(),
        script.display().to_string(),
        "stdio".to_string(),
    ]
}

/// The Python `mcp` SDK server in `tests/servers/python_server.py`, on stdio.
pub fn python_stdio() -> Vec<String> {
    let python = root().join("tests/servers/.venv/bin/python");
    assert!(
        python.exists(),
        "the Python test server's venv is missing: run scripts/install-test-servers (scripts/test does)"
    );
    vec![
        python.display().to_string(),
        root()
            .join("tests/servers/python_server.py")
            .display()
            .to_string(),
        "stdio".to_string(),
    ]
}

/// `args` followed by `-- COMMAND...`.
pub fn with_server(args: &[&str], server: &[String]) -> Vec<String> {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.push("--".to_string());
    all.extend(server.iter().cloned());
    all
}

impl Scratch {
    pub fn run_owned(&self, args: &[String]) -> (i32, String, String) {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&refs)
    }
}

/// The fixture server binary (built with `--features fixture-server`; scripts/test does).
pub fn fixture_server() -> String {
    match option_env!("CARGO_BIN_EXE_mcp-fixture-server") {
        Some(path) => path.to_string(),
        None => panic!(
            "the fixture server is not built: run the tests with --features fixture-server (scripts/test does)"
        ),
    }
}

/// `mcp-fixture-server --catalog <everything capture> ARGS...` as a stdio command.
pub fn fixture_stdio(args: &[&str]) -> Vec<String> {
    let mut all = vec![
        fixture_server(),
        "--catalog".to_string(),
        capture("everything", "tools-list.json")
            .display()
            .to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// A server process listening on HTTP, killed (with its group) when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
}

impl HttpServer {
    /// Starts `command` and waits for a line on stderr that holds `127.0.0.1:PORT`.
    pub fn start(command: &[String], env: &[(&str, &str)], path: &str) -> HttpServer {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(&command[0]);
        cmd.args(&command[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start HTTP server");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(at) = line.find("127.0.0.1:") {
                    let port: String = line[at + 10..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    if !port.is_empty() {
                        let _ = tx.send(port);
                    }
                }
            }
        });
        let port = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the HTTP server did not say where it listens");
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}{path}"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// A scratch dir with base.lock (the real server-everything capture) and mcp.lock (a
/// realistic multi-change edit of it, tests/fixtures/review/everything-changed.json), both
/// locked as server `everything`; callers add their own catalock.toml.
pub fn locked_pull_request() -> Scratch {
    let scratch = Scratch::new();
    scratch.copy(&capture("everything", "tools-list.json"), "old.json");
    scratch.copy(
        &fixtures().join("review/everything-changed.json"),
        "new.json",
    );
    for (from, lockfile) in [("old.json", "base.lock"), ("new.json", "mcp.lock")] {
        let (code, _, err) = scratch.run(&[
            "lock",
            "--from",
            from,
            "--name",
            "everything",
            "--lockfile",
            lockfile,
        ]);
        assert_eq!(code, 0, "{err}");
    }
    scratch
}

/// `git ARGS` in `dir`, isolated from the machine's git config; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=Ci Bot",
            "-c",
            "user.email=ci@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}
