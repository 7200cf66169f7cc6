//! Review mode: what does this pull request change? The lockfile at a base (a git revision
//! or a baseline file) is compared with the working lockfile, each change is classified and
//! judged by `catalock.toml`'s policy, and approvals and deprecations are recorded there.

use std::path::Path;

use crate::classify::{ClassifiedChange, Context, SERVER_SUBJECT, classify_server, server_change};
use crate::config::Governance;
use crate::error::Error;
use crate::lockfile::{LockFile, LockedServer};
use crate::policy::{Status, today};
use crate::report::{Review, ServerReview};
use crate::verify::{Depth, verify_lockfile};

/// Where the base lockfile comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// A git revision: the lockfile as committed there.
    Revision(String),
    /// A lockfile outside git.
    File(String),
}

impl crate::cli::BaseArgs {
    /// The base these options name, if any.
    pub fn chosen(&self) -> Option<Base> {
        match (&self.base, &self.baseline) {
            (Some(rev), _) => Some(Base::Revision(rev.clone())),
            (None, Some(file)) => Some(Base::File(file.clone())),
            (None, None) => None,
        }
    }
}

impl Base {
    /// The arguments that name this base on a command line.
    pub fn args(&self) -> String {
        match self {
            Base::Revision(rev) => format!("--base {}", crate::app::shell_quote(rev)),
            Base::File(path) => format!("--baseline {}", crate::app::shell_quote(path)),
        }
    }
}

/// The base lockfile and its label (`REF:PATH` or the file). A lockfile the base does not
/// have (added by this pull request) reads as empty: every server is new.
pub fn read_base(base: &Base, lockfile: &str) -> Result<(LockFile, String), Error> {
    let (text, label) = match base {
        Base::Revision(rev) => {
            let label = format!("{rev}:{lockfile}");
            match crate::git::read_at_revision(Path::new(lockfile), rev)? {
                Some(text) => (text, label),
                None => return Ok((LockFile::default(), label)),
            }
        }
        Base::File(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                Error::usage(
                    format!(
                        "cannot read the baseline {path}: {}",
                        crate::error::io_reason(&e)
                    ),
                    "pass the lockfile to compare with, e.g. --baseline main.mcp.lock",
                )
            })?,
            path.clone(),
        ),
    };
    let read = crate::lockfile::parse_lockfile(&text, &label)?;
    let findings = verify_lockfile(&read, Depth::Digests);
    if let Some(first) = findings.iter().find(|f| f.code != "not-canonical") {
        return Err(Error::new(
            crate::error::ErrorKind::Untrusted,
            format!(
                "{label}:{}: {}; the base lockfile does not match its own digests",
                first.line, first.message
            ),
            "compare with another base (the base must be a lockfile catalock wrote)",
        ));
    }
    Ok((read.lockfile, label))
}

/// The governance a review judges by: the working `catalock.toml`, except that deprecations
/// count only once committed at the base (a pull request cannot deprecate and remove a tool
/// in one go). Also notes a policy the pull request changes, for the reviewer.
pub fn governance_for_review(
    mut work: Governance,
    base: &Base,
    config: &str,
) -> Result<(Governance, Vec<String>), Error> {
    let Base::Revision(rev) = base else {
        return Ok((work, Vec::new()));
    };
    let path = Path::new(config);
    let committed = match crate::git::read_at_revision(path, rev)? {
        Some(text) => {
            crate::config::governance_from_text(&text, Path::new(&format!("{rev}:{config}")))?
        }
        None => Governance::default(),
    };
    let mut notes = Vec::new();
    if committed.policy.config != work.policy.config {
        notes.push(format!(
            "{config} changes [policy] relative to {rev}: this pull request changes how it is judged, review that too"
        ));
    }
    work.policy.deprecations = committed.policy.deprecations;
    Ok((work, notes))
}

/// Classification context for one server.
pub fn context_for(governance: &Governance, server: &str) -> Context {
    let budget = governance
        .servers
        .iter()
        .find(|s| s.0 == server)
        .and_then(|s| s.2);
    Context {
        tokens: governance.policy.config.tokens.rule(budget),
        deprecations: governance.policy.deprecations_of(server),
        today: today(),
        lost_coverage_is_change: true,
    }
}

/// Classification context for drift: a capture holding less than the lockfile is a partial
/// check, not a reduction.
pub fn drift_context(governance: &Governance, server: &str) -> Context {
    Context {
        lost_coverage_is_change: false,
        ..context_for(governance, server)
    }
}

/// `owner-missing` for a server `catalock.toml` declares without an owner.
pub fn owner_change(governance: &Governance, server: &LockedServer) -> Option<ClassifiedChange> {
    let (_, owner, _) = governance.servers.iter().find(|s| s.0 == server.name)?;
    owner.is_none().then(|| {
        server_change(
            "owner-missing",
            format!(
                "server `{}` in catalock.toml has no `owner`: add owner = \"team-or-person\"",
                server.name
            ),
            server,
        )
    })
}

/// Every server's changes from `base` to `work`, judged by the policy.
pub fn review(
    base: &LockFile,
    work: &LockFile,
    governance: &Governance,
    base_label: &str,
    approve_args: &str,
) -> Review {
    let today = today();
    let mut names: Vec<&str> = base
        .servers
        .iter()
        .chain(&work.servers)
        .map(|s| s.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut servers = Vec::new();
    let mut failing = 0;
    for name in names {
        let (old, new) = (base.server(name), work.server(name));
        let mut changes = classify_server(old, new, &context_for(governance, name));
        if let Some(owner) = new.and_then(|n| owner_change(governance, n)) {
            changes.push(owner);
        }
        for change in &mut changes {
            let verdict = governance.policy.judge(name, change, &today);
            if verdict.status == Status::NeedsApproval {
                change.approve = Some(approve_command(name, &change.subject, approve_args));
            }
            failing += usize::from(verdict.status.fails());
            change.verdict = Some(verdict);
        }
        crate::classify::sort_changes(&mut changes);
        servers.push(ServerReview {
            server: name.to_string(),
            owner: governance
                .servers
                .iter()
                .find(|s| s.0 == name)
                .and_then(|s| s.1.clone()),
            before: old.map(|s| s.server_digest),
            after: new.map(|s| s.server_digest),
            changes,
        });
    }
    let expired_ignores = governance.policy.expired_ignores(&today);
    failing += expired_ignores.len();
    Review {
        base: base_label.to_string(),
        servers,
        expired_ignores,
        failing,
    }
}

/// The exact command that approves `subject` of `server`.
pub fn approve_command(server: &str, subject: &str, approve_args: &str) -> String {
    let target = if subject == SERVER_SUBJECT {
        format!("{server}/{SERVER_SUBJECT}")
    } else {
        format!("{server}/{subject}")
    };
    let mut command = format!(
        "catalock approve {} --reason '…'",
        crate::app::shell_quote(&target)
    );
    if !approve_args.is_empty() {
        command.push(' ');
        command.push_str(approve_args);
    }
    command
}

/// One approval to record: a subject's digest transition and the codes it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApproval {
    pub server: String,
    pub subject: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub codes: Vec<String>,
}

/// The approvals that would cover what needs approval for `server` (one subject, or all).
pub fn pending_approvals(review: &Review, server: &str, subject: Option<&str>) -> Vec<NewApproval> {
    let mut out: Vec<NewApproval> = Vec::new();
    let Some(server_review) = review.servers.iter().find(|s| s.server == server) else {
        return out;
    };
    for change in &server_review.changes {
        let needs = change
            .verdict
            .as_ref()
            .is_some_and(|v| v.status == Status::NeedsApproval);
        if !needs || subject.is_some_and(|s| s != change.subject) {
            continue;
        }
        let from = change.before.map(|d| d.to_string());
        let to = change.after.map(|d| d.to_string());
        match out
            .iter_mut()
            .find(|a| a.subject == change.subject && a.from == from && a.to == to)
        {
            Some(existing) => {
                if !existing.codes.contains(&change.code) {
                    existing.codes.push(change.code.clone());
                }
            }
            None => out.push(NewApproval {
                server: server.to_string(),
                subject: change.subject.clone(),
                from,
                to,
                codes: vec![change.code.clone()],
            }),
        }
    }
    for approval in &mut out {
        approval.codes.sort();
    }
    out
}

/// Records approvals in `catalock.toml`, keeping its comments and layout; an approval of the
/// same subject from the same base digest (now stale) is replaced.
pub fn record_approvals(
    config: &Path,
    approvals: &[NewApproval],
    by: &str,
    reason: &str,
) -> Result<(), Error> {
    let mut document = read_document(config)?;
    let date = today();
    let list = array_of_tables(&mut document, "approval", config)?;
    for approval in approvals {
        let mut index = 0;
        while index < list.len() {
            let table = list.get(index).expect("index in range");
            let text = |key: &str| table.get(key).and_then(|v| v.as_str()).map(str::to_string);
            if text("server").as_deref() == Some(approval.server.as_str())
                && text("subject").as_deref() == Some(approval.subject.as_str())
                && text("from") == approval.from
            {
                list.remove(index);
            } else {
                index += 1;
            }
        }
        let mut table = toml_edit::Table::new();
        table.insert("server", toml_edit::value(approval.server.as_str()));
        table.insert("subject", toml_edit::value(approval.subject.as_str()));
        if let Some(from) = &approval.from {
            table.insert("from", toml_edit::value(from.as_str()));
        }
        if let Some(to) = &approval.to {
            table.insert("to", toml_edit::value(to.as_str()));
        }
        let mut codes = toml_edit::Array::new();
        for code in &approval.codes {
            codes.push(code.as_str());
        }
        table.insert("codes", toml_edit::value(codes));
        table.insert("by", toml_edit::value(by));
        table.insert("date", toml_edit::value(date.as_str()));
        table.insert("reason", toml_edit::value(reason));
        list.push(table);
    }
    write_document(config, &document)
}

/// Records (or moves) a deprecation in `catalock.toml`.
pub fn record_deprecation(
    config: &Path,
    server: &str,
    tool: &str,
    remove_after: &str,
    reason: Option<&str>,
    by: &str,
) -> Result<(), Error> {
    let mut document = read_document(config)?;
    let list = array_of_tables(&mut document, "deprecation", config)?;
    let existing = list.iter().position(|t| {
        t.get("server").and_then(|v| v.as_str()) == Some(server)
            && t.get("tool").and_then(|v| v.as_str()) == Some(tool)
    });
    if let Some(index) = existing {
        list.remove(index);
    }
    let mut table = toml_edit::Table::new();
    table.insert("server", toml_edit::value(server));
    table.insert("tool", toml_edit::value(tool));
    table.insert("remove-after", toml_edit::value(remove_after));
    if let Some(reason) = reason {
        table.insert("reason", toml_edit::value(reason));
    }
    table.insert("by", toml_edit::value(by));
    table.insert("date", toml_edit::value(today().as_str()));
    list.push(table);
    write_document(config, &document)
}

fn read_document(config: &Path) -> Result<toml_edit::DocumentMut, Error> {
    let label = config.display().to_string();
    let text = match std::fs::read_to_string(config) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Error::io(
                format!("cannot read {label}: {}", crate::error::io_reason(&e)),
                "check the file's permissions",
            ));
        }
    };
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        Error::usage(
            format!("{label}: {}", e.message().trim().replace('\n', " ")),
            "fix catalock.toml, then run the command again",
        )
    })
}

fn array_of_tables<'d>(
    document: &'d mut toml_edit::DocumentMut,
    key: &str,
    config: &Path,
) -> Result<&'d mut toml_edit::ArrayOfTables, Error> {
    let item = document
        .entry(key)
        .or_insert_with(|| toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
    item.as_array_of_tables_mut().ok_or_else(|| {
        Error::usage(
            format!("{}: `{key}` must be written [[{key}]]", config.display()),
            "fix catalock.toml, then run the command again",
        )
    })
}

fn write_document(config: &Path, document: &toml_edit::DocumentMut) -> Result<(), Error> {
    let text = document.to_string();
    // What we write must load: never leave a catalock.toml catalock itself rejects.
    crate::config::load_governance_text(&text, config)?;
    crate::lockfile::write_atomic(config, text.as_bytes())
}
