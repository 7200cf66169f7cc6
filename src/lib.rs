//! catalock: lock the contract an MCP server shows to agents, and fail CI when it changes.
//!
//! Data flows capture → contract → lockfile → diff → report:
//! - [`capture`] reads captured `tools/list` (and prompts, resource templates, initialize)
//!   results in every shape users save them;
//! - [`json`] and [`contract`] canonicalize (RFC 8785) and digest each tool by section;
//! - [`build`] turns a capture into a lockfile entry; [`lockfile`] writes and reads `mcp.lock`;
//! - [`verify`] recomputes a lockfile's digests from its content;
//! - [`diff`] compares two entries; [`classify`] names each change with a code from
//!   [`codes`] ([`schema_diff`] for schemas, [`version`] for `serverInfo.version`);
//! - [`policy`] judges changes by `catalock.toml`, [`review`] compares a base lockfile
//!   ([`git`] reads it at a revision) with the working one and records approvals;
//! - [`report`] renders the result as text or JSON.
//!
//! [`app::run`] executes a parsed command line; `main.rs` only maps its result to an exit code.
#![forbid(unsafe_code)]

pub mod app;
pub mod build;
pub mod capture;
pub mod classify;
pub mod cli;
pub mod codes;
pub mod config;
pub mod contract;
pub mod diff;
pub mod error;
pub mod git;
pub mod init;
pub mod json;
pub mod live;
pub mod lockfile;
pub mod policy;
pub mod render;
pub mod report;
pub mod review;
pub mod schema;
pub mod schema_diff;
pub mod tokens;
pub mod verify;
pub mod version;

/// Exit code: the contract matches (like `diff`).
pub const EXIT_SAME: u8 = 0;
/// Exit code: the contract differs, or the lockfile does not verify.
pub const EXIT_DIFFERENT: u8 = 1;
/// Exit code: catalock could not decide (bad input, I/O, unreadable lockfile).
pub const EXIT_TROUBLE: u8 = 2;
