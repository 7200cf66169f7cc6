//! The command-line contract. Later features build on these names; change them only with a
//! deprecation.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The lockfile path when `--lockfile` is not given.
pub const DEFAULT_LOCKFILE: &str = "mcp.lock";

/// Guards the contract an MCP server shows to agents: lock it, then fail CI when it changes.
///
/// Exit codes: 0 the contract matches, 1 it differs (or the lockfile does not verify),
/// 2 catalock could not decide (bad input, unreadable lockfile, I/O).
#[derive(Debug, Parser)]
#[command(name = "catalock", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a server's contract in the lockfile (adds or replaces its entry).
    Lock(LockArgs),
    /// Compare a server's contract with the lockfile; exit 1 on any unlocked change.
    Check(CheckArgs),
    /// Compare two contracts, each a lockfile or a capture.
    Diff(DiffArgs),
    /// Recompute every digest in the lockfile from its stored content.
    Verify(VerifyArgs),
    /// Rewrite the lockfile in canonical form (after verifying it).
    Fmt(FmtArgs),
    /// Explain a change code, or list them all.
    Explain(ExplainArgs),
    /// Approve a tool's (or the server's) pending contract change, bound to its digests.
    Approve(ApproveArgs),
    /// Announce that a tool will be removed: removing it after DATE is then safe.
    Deprecate(DeprecateArgs),
    /// Set up a repository: catalock.toml, a first mcp.lock and a GitHub workflow.
    Init(InitArgs),
    /// Show the locked contract: servers, or one server's tools, or one tool.
    Show(ShowArgs),
    /// Print server digests for release notes, or the `_meta` block for a registry server.json.
    Digest(DigestArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page (roff).
    Man,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Overwrite catalock.toml, the lockfile and the workflow if they exist.
    #[arg(long)]
    pub force: bool,
    /// Write the files but do not start the servers to lock them.
    #[arg(long)]
    pub no_lock: bool,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// SERVER or SERVER/TOOL [default: every server]
    pub target: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    /// text, json or markdown.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown"])]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct DigestArgs {
    /// Only this server [default: every server]
    pub server: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    /// Print the `_meta` object a registry server.json entry can carry
    /// (`io.catalock/digest`), so consumers can pin what was approved.
    #[arg(long)]
    pub server_json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Where the base lockfile of a review comes from.
#[derive(Debug, Args, Clone, Default)]
pub struct BaseArgs {
    /// Review mode: judge what changed since the lockfile committed at this git revision
    /// (e.g. origin/main, a SHA, FETCH_HEAD).
    #[arg(long, value_name = "REF", conflicts_with = "baseline")]
    pub base: Option<String>,
    /// Review mode without git: judge what changed since this lockfile.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// SERVER/TOOL (or SERVER/prompt:NAME, SERVER/resource-template:URI,
    /// SERVER/@instructions, SERVER/@server), or SERVER with --all.
    pub target: String,
    /// Why the change is acceptable (recorded).
    #[arg(long)]
    pub reason: String,
    /// Who approves [default: the git identity, user.name <user.email>]
    #[arg(long)]
    pub by: Option<String>,
    /// Approve every pending change of the server.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub base: BaseArgs,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    /// The file approvals are recorded in.
    #[arg(long, value_name = "PATH", default_value = "catalock.toml")]
    pub config: String,
}

#[derive(Debug, Args)]
pub struct DeprecateArgs {
    /// SERVER/TOOL.
    pub target: String,
    /// The day (YYYY-MM-DD) after which removing the tool is safe.
    #[arg(long, value_name = "DATE")]
    pub remove_after: String,
    /// Why, and what to use instead (recorded).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who deprecates [default: the git identity]
    #[arg(long)]
    pub by: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    #[arg(long, value_name = "PATH", default_value = "catalock.toml")]
    pub config: String,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The code, e.g. permission-escalated.
    #[arg(required_unless_present = "list")]
    pub code: Option<String>,
    /// List every code with its default severity.
    #[arg(long, conflicts_with = "code")]
    pub list: bool,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// The JSON report (schemas/report.schema.json).
    Json,
    /// Markdown, for $GITHUB_STEP_SUMMARY and pull-request comments.
    Markdown,
    /// GitHub Actions workflow commands (annotations on the lockfile).
    Github,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, for CI test reports.
    Junit,
}

/// `--format FORMAT[=PATH]`: where one rendering of the report goes (stdout without a path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatSpec {
    pub format: Format,
    pub path: Option<std::path::PathBuf>,
}

impl std::str::FromStr for FormatSpec {
    type Err = String;
    fn from_str(text: &str) -> Result<FormatSpec, String> {
        let (name, path) = match text.split_once('=') {
            Some((name, path)) if !path.is_empty() => (name, Some(std::path::PathBuf::from(path))),
            Some((name, _)) => return Err(format!("--format {name}= needs a file after '='")),
            None => (text, None),
        };
        let format = Format::from_str(name, true).map_err(|_| {
            format!("unknown format {name:?} (text, json, markdown, github, sarif, junit; add =PATH to write a file)")
        })?;
        Ok(FormatSpec { format, path })
    }
}

/// Reports: `--format` may be repeated with `=PATH` so one run writes every format needed.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Output format, repeatable: text, json, markdown, github, sarif, junit; FORMAT=PATH
    /// writes a file (e.g. --format markdown=summary.md --format sarif=catalock.sarif).
    #[arg(long = "format", value_name = "FORMAT[=PATH]", default_value = "text")]
    pub formats: Vec<FormatSpec>,
}

#[derive(Debug, Args)]
pub struct LockArgs {
    /// Captured tools/list (and optionally prompts/list, resources/templates/list, initialize)
    /// JSON or JSONL; repeat for several files; `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub from: Vec<String>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Name of the server's entry [default: from serverInfo.name, else the file name]
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Captured catalog to check (same shapes as `lock --from`); `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub from: Vec<String>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// The lockfile entry to compare with [default: the capture's server name, or the only entry]
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub base: BaseArgs,
    /// The policy, owners, approvals and deprecations.
    #[arg(long, value_name = "PATH", default_value = "catalock.toml")]
    pub config: String,
}

/// How to reach a live server, and the limits of the session.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// A stdio server to start: `catalock lock -- COMMAND [ARGS...]`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Servers from an MCP client config (.mcp.json, .vscode/mcp.json, .cursor/mcp.json,
    /// claude_desktop_config.json) [default with no source: catalock.toml, else the first of
    /// .mcp.json, .vscode/mcp.json, .cursor/mcp.json found]
    #[arg(long, value_name = "PATH")]
    pub mcp_config: Option<std::path::PathBuf>,
    /// Servers handled at once when there are several.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
    /// A streamable HTTP server's MCP endpoint, e.g. http://127.0.0.1:3001/mcp.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// A header for every request to the HTTP server, repeatable ('Authorization: Bearer …').
    /// Values are never recorded or printed.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Environment for the stdio server, repeatable. Values are never recorded or printed.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory for the stdio server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
    /// Protocol: auto (probe server/discover, fall back to initialize), modern, legacy, or a
    /// version (2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05).
    #[arg(long, default_value = "auto")]
    pub protocol: String,
    /// Client capabilities to declare, as JSON (servers may list other tools to other
    /// clients). Recorded in the lockfile; `check` declares what `lock` declared.
    #[arg(long, value_name = "JSON")]
    pub client_capabilities: Option<String>,
    /// Seconds to wait for each response.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Seconds the server/discover probe waits before assuming a legacy server.
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0)]
    pub probe_timeout: f64,
    /// Seconds the whole session may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub total_timeout: f64,
    /// Largest message accepted from the server.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_message_bytes: usize,
    /// Most pages followed in one list.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_pages: usize,
    /// Treat non-JSON output and unknown protocol versions as errors.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old side: a lockfile or a capture.
    pub old: String,
    /// The new side: a lockfile or a capture.
    pub new: String,
    /// Server name for a capture side [default: the other side's only entry, or serverInfo.name]
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Owners, deprecations and token thresholds used to classify.
    #[arg(long, value_name = "PATH", default_value = "catalock.toml")]
    pub config: String,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct FmtArgs {
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    /// Only report whether the file is canonical (exit 1 when not); write nothing.
    #[arg(long)]
    pub check: bool,
}
