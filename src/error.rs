//! The one error type: a one-line cause plus the next command to run.
//!
//! Every failure catalock reports is something the user can act on, so each carries a `hint`
//! (usually an exact command). Errors never carry secrets: callers build messages from labels
//! and names, never from header or environment values.

use std::fmt;

/// What went wrong, by who can fix it. Every kind exits with code 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A capture (or other input) is unreadable or malformed.
    Input,
    /// The lockfile is unreadable, malformed, conflicted, or from an unknown version.
    Lockfile,
    /// The lockfile's stored digests do not match its content (`check`/`diff` refuse it).
    Untrusted,
    /// The command line asks for something impossible.
    Usage,
    /// Writing a file failed.
    Io,
    /// A live server could not be started, crashed, hung, or broke the protocol.
    Server,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// One line: what is wrong and where.
    pub message: String,
    /// What to run or do next.
    pub hint: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            hint: hint.into(),
        }
    }
    pub fn input(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::new(ErrorKind::Input, message, hint)
    }
    pub fn lockfile(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::new(ErrorKind::Lockfile, message, hint)
    }
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::new(ErrorKind::Usage, message, hint)
    }
    pub fn io(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::new(ErrorKind::Io, message, hint)
    }
    pub fn server(message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::new(ErrorKind::Server, message, hint)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The OS reason of an I/O error without Rust's " (os error N)" suffix.
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(idx) => text[..idx].to_string(),
        None => text,
    }
}
