//! `mcp-fixture-server`: a scriptable MCP server that catalock's tests start as a real process.
//!
//! It serves a catalog file over stdio (newline-delimited JSON-RPC 2.0) or, with `--http`,
//! over streamable HTTP at `/mcp`, in the legacy era (`initialize`, protocol 2024-11-05 …
//! 2025-11-25), the modern era (2026-07-28: per-request `_meta`, `server/discover`) or both,
//! and injects faults on request. Build: `cargo build --features fixture-server`.
//!
//! Catalog (`--catalog FILE`, JSON), one of:
//! - a `tools/list` result `{"tools":[...]}`;
//! - `{"tools":[...], "prompts":[...], "resources":[...], "resourceTemplates":[...],
//!   "instructions":"...", "serverInfo":{...}, "capabilities":{...}}`, every key optional
//!   (default serverInfo `{"name":"fixture","version":"1.0.0"}`; default capabilities declare
//!   `tools`, `prompts` and `resources` only for the lists present);
//! - a JSON array of such objects (captured pages), whose lists are concatenated.
//!
//! `resources/list` and `resources/templates/list` both exist when either list is in the
//! catalog (the missing one is empty). Methods for absent lists get -32601.
//!
//! List items (tools, prompts, …) are served with exactly the file's text (whitespace outside
//! strings removed), so unknown keys, key order, duplicate keys and number spellings survive.
//!
//! Flags:
//! - `--catalog FILE`            the catalog (required).
//! - `--era legacy|modern|both`  protocol era (default `both`: `server/discover` and requests
//!   carrying the modern `_meta` are answered the modern way, the rest the legacy way).
//! - `--legacy-version V`        force the `protocolVersion` answered to `initialize`.
//! - `--page-size N`             items per list page (default: everything in one page).
//! - `--ttl-ms N`, `--cache-scope public|private`   modern result fields (60000, public).
//! - `--empty-cursor`            page 1's `nextCursor` is `""`, which continues to page 2.
//! - `--repeat-cursor`           every page says `nextCursor: "p2"`, forever.
//! - `--endless`                 every page has a new cursor and new synthetic items.
//! - `--duplicate-across-pages`  page 2 starts with a copy of page 1's first item.
//!   (The four cursor faults apply to every paginated list; they force at least 2 pages.)
//! - `--slow-ms N`               sleep N ms before every response.
//! - `--hang-on METHOD`          never answer METHOD (repeatable); keep reading.
//! - `--silent-on-discover`      never answer `server/discover` (still answer `initialize`).
//! - `--crash-after N`           print `fixture: crashing` to stderr and exit 3 right after the
//!   Nth response (N = 0: on the first message received).
//! - `--garbage-lines`           stdio: print `Server started on stdio` and `{not json` to
//!   stdout before the first message.
//! - `--oversized BYTES`         pad the first `tools/list` result's `_meta` with a string of
//!   BYTES characters (key `fixture/padding`).
//! - `--malformed`               answer `tools/list` with the truncated line
//!   `{"jsonrpc":"2.0","id":X,"result":`.
//! - `--stderr-noise N`          write N log lines to stderr at start (the last one says so).
//! - `--ping-first`              before answering the first `tools/list`: send the client a
//!   `notifications/message`, a `ping` request (id `"fixture-ping-1"`, wait for its answer)
//!   and a `sampling/createMessage` request (id `"fixture-sampling-1"`, wait for its answer,
//!   which should be error -32601; anything else is reported on stderr). Over HTTP (`--sse`
//!   only) the three are sent on the response stream before the response, without waiting.
//! - `--ignore-stdin-eof`        keep running after stdin closes (stdio).
//! - `--ignore-sigterm`          ignore SIGTERM (done with no signal handler: the process
//!   re-executes itself, same pid, through `/bin/sh -c "trap '' TERM; exec …"`; an ignored
//!   signal stays ignored across exec).
//! - `--spawn-child`             start `sleep 300` (stdin null; stdout and stderr inherited, so
//!   it keeps the pipes open) and print `fixture: child pid N` to stderr.
//! - `--record FILE`             append every message received to FILE, one JSON per line, as
//!   received (an HTTP body with line breaks is compacted first).
//! - `--record-http FILE`        HTTP: append every HTTP request to FILE, one JSON per line:
//!   `{"method","path","headers":{lower-case name: value},"body"}`.
//! - `--http 127.0.0.1:PORT`     serve streamable HTTP at `/mcp` instead of stdio (PORT 0 picks
//!   a free port); prints `fixture: listening on http://127.0.0.1:N/mcp` to stderr and runs
//!   until killed. Legacy: `initialize` returns `Mcp-Session-Id`; later requests need it
//!   (missing: 400, unknown or deleted: 404); notifications get 202; `DELETE /mcp` ends the
//!   session. Modern: `MCP-Protocol-Version` must equal the `_meta` version (else 400,
//!   -32020); `Mcp-Method`, when sent, must equal the method.
//! - `--sse`                     HTTP: answer requests as `text/event-stream` (priming event,
//!   a `: keepalive` comment, the response split over two `data:` lines).
//! - `--auth-token T`            HTTP: require `Authorization: Bearer T` (else 401 with a
//!   `WWW-Authenticate` challenge); serve the protected-resource metadata at
//!   `/.well-known/oauth-protected-resource/mcp`.
//!
//! Examples:
//! ```text
//! printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
//!   '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
//!   '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
//!   | mcp-fixture-server --catalog tests/fixtures/captures/everything/tools-list.json --page-size 5
//! mcp-fixture-server --catalog catalog.json --http 127.0.0.1:0 --sse --auth-token secret
//! ```
#![forbid(unsafe_code)]

mod catalog;
mod http;
mod protocol;
mod stdio;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, ValueEnum};

/// Which protocol era(s) the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EraArg {
    Legacy,
    Modern,
    Both,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "mcp-fixture-server",
    about = "A scriptable MCP server for tests: serves a catalog over stdio or streamable HTTP, with faults"
)]
pub struct Args {
    /// Catalog JSON: {"tools":[...]}, a richer object, or an array of such pages.
    #[arg(long, value_name = "FILE")]
    pub catalog: PathBuf,
    /// Protocol era(s) to speak.
    #[arg(long, value_enum, default_value = "both")]
    pub era: EraArg,
    /// Answer `initialize` with this protocolVersion, whatever was requested.
    #[arg(long, value_name = "V")]
    pub legacy_version: Option<String>,
    /// Items per list page (default: all in one page).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub page_size: Option<u64>,
    /// `ttlMs` of modern results.
    #[arg(long, value_name = "N", default_value_t = 60000)]
    pub ttl_ms: u64,
    /// `cacheScope` of modern results.
    #[arg(long, value_name = "SCOPE", default_value = "public", value_parser = ["public", "private"])]
    pub cache_scope: String,
    /// Page 1's nextCursor is "" (a valid cursor that continues to page 2).
    #[arg(long)]
    pub empty_cursor: bool,
    /// Every page returns nextCursor "p2", forever.
    #[arg(long, conflicts_with = "endless")]
    pub repeat_cursor: bool,
    /// Never end: every page has a new cursor and new items.
    #[arg(long)]
    pub endless: bool,
    /// Page 2 repeats an item (same name) of page 1.
    #[arg(long)]
    pub duplicate_across_pages: bool,
    /// Sleep this long before every response.
    #[arg(long, value_name = "MS")]
    pub slow_ms: Option<u64>,
    /// Never answer this method (repeatable).
    #[arg(long, value_name = "METHOD")]
    pub hang_on: Vec<String>,
    /// Never answer server/discover, but answer initialize.
    #[arg(long)]
    pub silent_on_discover: bool,
    /// Exit with status 3 after sending N responses (0: on the first message).
    #[arg(long, value_name = "N")]
    pub crash_after: Option<u64>,
    /// Print non-JSON lines to stdout before the first message (stdio).
    #[arg(long)]
    pub garbage_lines: bool,
    /// Pad the first tools/list result with a `_meta` string of this many bytes.
    #[arg(long, value_name = "BYTES")]
    pub oversized: Option<usize>,
    /// Answer tools/list with a truncated, invalid JSON-RPC line.
    #[arg(long)]
    pub malformed: bool,
    /// Write N lines of log noise to stderr at start.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub stderr_noise: u64,
    /// Before the first tools/list answer: log notification, ping and sampling requests.
    #[arg(long)]
    pub ping_first: bool,
    /// Keep running after stdin reaches EOF.
    #[arg(long)]
    pub ignore_stdin_eof: bool,
    /// Ignore SIGTERM (re-executes itself through /bin/sh with the signal ignored).
    #[arg(long)]
    pub ignore_sigterm: bool,
    /// Start a long-running grandchild (`sleep 300`) and print its pid to stderr.
    #[arg(long)]
    pub spawn_child: bool,
    /// Append every message received to FILE (one JSON per line).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// HTTP: append every request (method, path, headers, body) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub record_http: Option<PathBuf>,
    /// Serve streamable HTTP on this address (127.0.0.1 only; port 0 picks one).
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub http: Option<SocketAddr>,
    /// HTTP: answer requests as text/event-stream.
    #[arg(long, requires = "http")]
    pub sse: bool,
    /// HTTP: require `Authorization: Bearer T`.
    #[arg(long, value_name = "T", requires = "http")]
    pub auth_token: Option<String>,
}

/// Set in the environment of the re-executed process when SIGTERM is already ignored.
const SIGTERM_IGNORED_ENV: &str = "MCP_FIXTURE_SIGTERM_IGNORED";

fn main() -> ExitCode {
    let args = Args::parse();

    if args.ignore_sigterm && std::env::var_os(SIGTERM_IGNORED_ENV).is_none() {
        // Only returns on failure.
        let err = reexec_ignoring_sigterm();
        eprintln!("fixture: cannot re-execute to ignore SIGTERM: {err}");
        return ExitCode::from(2);
    }

    let catalog = match catalog::Catalog::load(&args.catalog) {
        Ok(catalog) => catalog,
        Err(err) => {
            eprintln!("fixture: {}: {err}", args.catalog.display());
            return ExitCode::from(2);
        }
    };

    if args.stderr_noise > 0 {
        write_stderr_noise(args.stderr_noise);
    }
    // Kept (never waited for) so the grandchild outlives this process if nobody kills it.
    let _child = if args.spawn_child {
        match std::process::Command::new("sleep")
            .arg("300")
            .stdin(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => {
                eprintln!("fixture: child pid {}", child.id());
                Some(child)
            }
            Err(err) => {
                eprintln!("fixture: cannot spawn `sleep 300`: {err}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };

    let server = match protocol::Server::new(args, catalog) {
        Ok(server) => Arc::new(server),
        Err(err) => {
            eprintln!("fixture: {err}");
            return ExitCode::from(2);
        }
    };

    match server.args.http {
        Some(addr) => match http::run(server.clone(), addr) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("fixture: http: {err}");
                ExitCode::from(2)
            }
        },
        None => stdio::run(&server),
    }
}

fn write_stderr_noise(lines: u64) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    for i in 1..=lines {
        let last = if i == lines { " (last noise line)" } else { "" };
        let _ = writeln!(
            err,
            "fixture: noise {i}/{lines}: lorem ipsum dolor sit amet, consectetur adipiscing elit{last}"
        );
    }
    let _ = err.flush();
}

/// Replaces this process (same pid) with `/bin/sh`, which ignores SIGTERM and executes this
/// program again with the same arguments; an ignored signal stays ignored across `exec`.
#[cfg(unix)]
fn reexec_ignoring_sigterm() -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => return err,
    };
    std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("trap '' TERM; exec \"$0\" \"$@\"")
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .env(SIGTERM_IGNORED_ENV, "1")
        .exec()
}

#[cfg(not(unix))]
fn reexec_ignoring_sigterm() -> std::io::Error {
    std::io::Error::other("--ignore-sigterm needs a Unix system")
}
