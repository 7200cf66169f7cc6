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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct LockArgs {
    /// Captured tools/list (and optionally prompts/list, resources/templates/list, initialize)
    /// JSON or JSONL; repeat for several files; `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub from: Vec<String>,
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
    /// The lockfile entry to compare with [default: the capture's server name, or the only entry]
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
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
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct FmtArgs {
    #[arg(long, value_name = "PATH", default_value = DEFAULT_LOCKFILE)]
    pub lockfile: String,
    /// Only report whether the file is canonical (exit 1 when not); write nothing.
    #[arg(long)]
    pub check: bool,
}
