//! One report per command run, rendered as text or JSON (`schemas/report.schema.json`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::classify::{ClassifiedChange, SubjectKind};
use crate::codes::Severity;
use crate::contract::Digest;
use crate::diff::{Change, FieldChange, ServerDiff, Tokens};
use crate::error::{Error, ErrorKind};
use crate::verify::Finding;

/// Version of the JSON report format.
pub const REPORT_VERSION: u32 = 1;

/// The verdict, matching the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Exit 0: the contracts match (check, diff) or every digest verifies (verify).
    Match,
    /// Exit 1: the contracts differ (check, diff).
    Changed,
    /// Exit 1: the lockfile does not verify (verify).
    Mismatch,
    /// Exit 2: catalock could not decide.
    Error,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Match => crate::EXIT_SAME,
            Outcome::Changed | Outcome::Mismatch => crate::EXIT_DIFFERENT,
            Outcome::Error => crate::EXIT_TROUBLE,
        }
    }
}

/// An error as the JSON report carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ErrorReport {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: String,
}

/// Everything a check, diff or verify run found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(
    title = "catalock report",
    description = "Output of `catalock check|diff|verify --format json`."
)]
pub struct Report {
    pub report_version: u32,
    /// `check`, `diff` or `verify`.
    pub command: String,
    pub outcome: Outcome,
    pub exit_code: u8,
    /// Per-server differences (check, diff). Servers without differences are left out.
    pub servers: Vec<ServerDiff>,
    /// Problems in the lockfile (verify).
    pub findings: Vec<Finding>,
    /// Things worth knowing that do not change the outcome.
    pub notes: Vec<String>,
    /// The command that accepts the differences, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReport>,
    /// What a pull request changes and how the policy judged it (`check --base`/`--baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// The lockfile the `line` of each change refers to (relative to the git repository's
    /// root when inside one, else as given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lockfile: Option<String>,
    /// Whether a live (or captured) contract was compared with the lockfile.
    #[serde(skip)]
    pub drift_checked: bool,
    /// Whether that comparison found drift (review mode: the outcome also reflects the review).
    #[serde(skip)]
    pub drifted: bool,
}

/// The review of the changes between a base lockfile and the working one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Review {
    /// The base: `REF:PATH` or the baseline file.
    pub base: String,
    pub servers: Vec<ServerReview>,
    /// Ignores past their expiry date: each fails the review.
    pub expired_ignores: Vec<String>,
    /// Changes that fail the review (denied, or needing an approval).
    pub failing: usize,
}

/// One server's changes since the base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ServerReview {
    pub server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Digest>,
    pub changes: Vec<ClassifiedChange>,
}

impl Report {
    pub fn new(command: &str, outcome: Outcome) -> Report {
        Report {
            report_version: REPORT_VERSION,
            command: command.to_string(),
            outcome,
            exit_code: outcome.exit_code(),
            servers: Vec::new(),
            findings: Vec::new(),
            notes: Vec::new(),
            accept: None,
            error: None,
            review: None,
            lockfile: None,
            drift_checked: false,
            drifted: false,
        }
    }

    pub fn from_error(command: &str, error: &Error) -> Report {
        let mut report = Report::new(command, Outcome::Error);
        report.error = Some(ErrorReport {
            kind: error.kind,
            message: error.message.clone(),
            hint: error.hint.clone(),
        });
        report
    }

    pub fn set_outcome(&mut self, outcome: Outcome) {
        self.outcome = outcome;
        self.exit_code = outcome.exit_code();
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("report serializes");
        text.push('\n');
        text
    }

    /// The human-readable rendering. `sides` names the two sides (`locked`/`live`).
    pub fn to_text(&self, sides: (&str, &str)) -> String {
        defuse_workflow_commands(&self.text(sides))
    }

    fn text(&self, sides: (&str, &str)) -> String {
        let mut out = String::new();
        if let Some(error) = &self.error {
            let _ = writeln!(out, "error: {}", error.message);
            let _ = writeln!(out, "hint: {}", error.hint);
            return out;
        }
        // check and diff say the verdict first; verify after its findings.
        if self.command != "verify" {
            let _ = writeln!(out, "{}", self.summary());
        }
        for finding in &self.findings {
            let mut place = String::new();
            if finding.line > 0 {
                let _ = write!(place, "line {}: ", finding.line);
            }
            if let Some(server) = &finding.server {
                let _ = write!(place, "server `{server}`: ");
            }
            if let Some(entry) = &finding.entry {
                let _ = write!(place, "{entry}: ");
            }
            let _ = writeln!(out, "{place}{} [{}]", finding.message, finding.code);
        }
        for server in &self.servers {
            render_server(&mut out, server, sides);
        }
        if let Some(review) = &self.review {
            render_review(&mut out, review);
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {}", crate::classify::visible(note));
        }
        if self.command == "verify" {
            let _ = writeln!(out, "{}", self.summary());
        }
        if let Some(accept) = &self.accept {
            let _ = writeln!(out, "to accept: {accept}");
        }
        out
    }

    /// One line: the verdict and the counts behind it.
    pub fn summary(&self) -> String {
        match self.command.as_str() {
            "verify" => {
                if self.findings.is_empty() {
                    "verified: every digest matches its content".to_string()
                } else {
                    let n = self.findings.len();
                    format!("{n} problem{} found", if n == 1 { "" } else { "s" })
                }
            }
            _ => {
                let Some(review) = &self.review else {
                    return self.drift_summary();
                };
                let drifted = self.drifted;
                let mut text = String::new();
                {
                    let _ = write!(
                        text,
                        "review against {}: {}",
                        review.base,
                        if review.failing == 0 {
                            "passes".to_string()
                        } else {
                            let expired = review.expired_ignores.len();
                            let changes = review.failing - expired;
                            let mut parts = Vec::new();
                            if changes > 0 {
                                parts.push(format!(
                                    "{changes} change{} fail{} the policy",
                                    if changes == 1 { "" } else { "s" },
                                    if changes == 1 { "s" } else { "" }
                                ));
                            }
                            if expired > 0 {
                                parts.push(format!(
                                    "{expired} expired ignore{}",
                                    if expired == 1 { "" } else { "s" }
                                ));
                            }
                            parts.join(", ")
                        }
                    );
                }
                if drifted {
                    let _ = write!(text, "; drift: {}", self.drift_summary());
                } else if self.drift_checked {
                    text.push_str("; the live contract matches the lockfile");
                }
                text
            }
        }
    }

    /// The drift (or diff) part of the summary.
    fn drift_summary(&self) -> String {
        {
            {
                let changed: Vec<&ServerDiff> =
                    self.servers.iter().filter(|s| s.is_change()).collect();
                if changed.is_empty() {
                    let relabelled: Vec<&ClassifiedChange> =
                        self.servers.iter().flat_map(|s| &s.changes).collect();
                    if self.command == "check" && self.outcome == Outcome::Changed {
                        return "no contract changes, but serverInfo.version differs from the lockfile"
                            .to_string();
                    }
                    if !relabelled.is_empty() {
                        return format!("no contract changes; {}", severity_summary(&relabelled));
                    }
                    return "no contract changes".to_string();
                }
                let classified: Vec<&ClassifiedChange> =
                    changed.iter().flat_map(|s| &s.changes).collect();
                let mut counts = [0usize; 3];
                let mut other = 0usize;
                for server in &changed {
                    for tool in &server.tools {
                        counts[match tool.change {
                            Change::Changed => 0,
                            Change::Added => 1,
                            Change::Removed => 2,
                        }] += 1;
                    }
                    other += server.items.len() + usize::from(server.instructions.is_some());
                }
                let mut parts = Vec::new();
                for (n, word) in counts.iter().zip(["changed", "added", "removed"]) {
                    if *n > 0 {
                        parts.push(format!("{n} {word}"));
                    }
                }
                let tools = counts.iter().sum::<usize>();
                let mut text = if !classified.is_empty() {
                    severity_summary(&classified)
                } else if parts.is_empty() {
                    String::from("no tool changes")
                } else {
                    format!(
                        "{} tool{}",
                        parts.join(", "),
                        if tools == 1 { "" } else { "s" }
                    )
                };
                if other > 0 && classified.is_empty() {
                    let _ = write!(
                        text,
                        ", {other} server-level change{}",
                        if other == 1 { "" } else { "s" }
                    );
                }
                let servers = changed.len();
                let _ = if classified.is_empty() {
                    write!(
                        text,
                        " in {servers} server{}",
                        if servers == 1 { "" } else { "s" }
                    )
                } else {
                    write!(
                        text,
                        " ({servers} server{})",
                        if servers == 1 { "" } else { "s" }
                    )
                };
                let before: u64 = changed.iter().filter_map(|s| s.tokens.before).sum();
                let after: u64 = changed.iter().filter_map(|s| s.tokens.after).sum();
                if before != after {
                    let _ = write!(
                        text,
                        "; tokens {}",
                        tokens_text(&Tokens {
                            before: Some(before),
                            after: Some(after)
                        })
                    );
                }
                text
            }
        }
    }
}

fn tokens_text(tokens: &Tokens) -> String {
    match (tokens.before, tokens.after) {
        (Some(a), Some(b)) => {
            let delta = b as i64 - a as i64;
            format!("{a} -> {b} ({}{delta})", if delta >= 0 { "+" } else { "" })
        }
        (Some(a), None) => format!("{a} -> 0"),
        (None, Some(b)) => format!("0 -> {b}"),
        (None, None) => "0".to_string(),
    }
}

fn render_server(out: &mut String, server: &ServerDiff, sides: (&str, &str)) {
    match server.change {
        Some(Change::Changed) => {
            let _ = writeln!(
                out,
                "server `{}`: contract changed ({} -> {})",
                server.server,
                server.before.map(|d| d.short()).unwrap_or_default(),
                server.after.map(|d| d.short()).unwrap_or_default()
            );
        }
        Some(Change::Added) => {
            let _ = writeln!(
                out,
                "server `{}`: only in {} ({})",
                server.server,
                sides.1,
                server.after.map(|d| d.short()).unwrap_or_default()
            );
        }
        Some(Change::Removed) => {
            let _ = writeln!(
                out,
                "server `{}`: only in {} ({})",
                server.server,
                sides.0,
                server.before.map(|d| d.short()).unwrap_or_default()
            );
        }
        None => {
            if server.notes.is_empty() && server.coverage.is_empty() {
                return;
            }
            let _ = writeln!(out, "server `{}`: contract unchanged", server.server);
        }
    }
    if !server.changes.is_empty() {
        render_changes(out, &server.changes, "  ");
    }
    for tool in server.tools.iter().filter(|_| server.changes.is_empty()) {
        match tool.change {
            Change::Added => {
                let _ = writeln!(
                    out,
                    "  + tool `{}` added ({} tokens)",
                    tool.name,
                    tool.tokens.after.unwrap_or(0)
                );
            }
            Change::Removed => {
                let _ = writeln!(
                    out,
                    "  - tool `{}` removed ({} tokens)",
                    tool.name,
                    tool.tokens.before.unwrap_or(0)
                );
            }
            Change::Changed => {
                let names: Vec<&str> = tool.sections.iter().map(|s| s.section.name()).collect();
                let _ = writeln!(
                    out,
                    "  ~ tool `{}` changed: {}",
                    tool.name,
                    names.join(", ")
                );
                for section in &tool.sections {
                    if section.section == crate::contract::Section::Economy {
                        continue;
                    }
                    for field in &section.fields {
                        render_field(out, field, "      ", sides);
                    }
                }
                if tool.tokens.before != tool.tokens.after {
                    let _ = writeln!(out, "      tokens: {}", tokens_text(&tool.tokens));
                }
            }
        }
    }
    if let Some(field) = server
        .instructions
        .as_ref()
        .filter(|_| server.changes.is_empty())
    {
        let _ = writeln!(out, "  ~ instructions changed");
        render_field(out, field, "      ", sides);
    }
    for item in server.items.iter().filter(|_| server.changes.is_empty()) {
        let (mark, verb) = match item.change {
            Change::Added => ('+', "added"),
            Change::Removed => ('-', "removed"),
            Change::Changed => ('~', "changed"),
        };
        let _ = writeln!(out, "  {mark} {} `{}` {verb}", item.kind.noun(), item.key);
        if let Some(unified) = &item.unified {
            render_unified(out, unified, "      ", sides);
        }
    }
    for line in &server.coverage {
        let _ = writeln!(out, "  ! {line}");
    }
    for note in &server.notes {
        let _ = writeln!(out, "  note: {}", crate::classify::visible(note));
    }
}

fn render_field(out: &mut String, field: &FieldChange, indent: &str, sides: (&str, &str)) {
    match &field.unified {
        Some(unified) => {
            let _ = writeln!(out, "{indent}{}:", field.field);
            render_unified(out, unified, &format!("{indent}  "), sides);
        }
        None => {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".to_string());
            if field.field.starts_with("annotations.")
                || field.field == "tokens"
                || field.field == "bytes"
            {
                let _ = writeln!(
                    out,
                    "{indent}{}: {} -> {}",
                    field.field,
                    show(&field.before),
                    show(&field.after)
                );
            } else {
                let _ = writeln!(out, "{indent}{}:", field.field);
                let _ = writeln!(out, "{indent}  - {}", show(&field.before));
                let _ = writeln!(out, "{indent}  + {}", show(&field.after));
            }
        }
    }
}

fn render_unified(out: &mut String, unified: &str, indent: &str, sides: (&str, &str)) {
    let _ = writeln!(out, "{indent}--- {}", sides.0);
    let _ = writeln!(out, "{indent}+++ {}", sides.1);
    for line in unified.lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
}

/// "2 breaking, 1 risky": the count of each severity present, most severe first.
pub fn severity_counts(changes: &[&ClassifiedChange]) -> Vec<String> {
    let mut parts = Vec::new();
    for severity in [
        Severity::Breaking,
        Severity::Risky,
        Severity::Safe,
        Severity::Cosmetic,
    ] {
        let n = changes.iter().filter(|c| c.severity == severity).count();
        if n > 0 {
            parts.push(format!("{n} {}", severity.name()));
        }
    }
    parts
}

/// "2 breaking, 1 risky, 3 safe in 2 tools".
pub fn severity_summary(changes: &[&ClassifiedChange]) -> String {
    let parts = severity_counts(changes);
    let mut tools: Vec<&str> = changes
        .iter()
        .filter(|c| c.kind == SubjectKind::Tool)
        .map(|c| c.subject.as_str())
        .collect();
    tools.sort_unstable();
    tools.dedup();
    let others = changes.iter().any(|c| c.kind != SubjectKind::Tool);
    let mut text = if parts.is_empty() {
        "no classified changes".to_string()
    } else {
        parts.join(", ")
    };
    match (tools.len(), others) {
        (0, _) => text.push_str(" at server level"),
        (n, false) => {
            let _ = write!(text, " in {n} tool{}", if n == 1 { "" } else { "s" });
        }
        (n, true) => {
            let _ = write!(
                text,
                " in {n} tool{} and the server",
                if n == 1 { "" } else { "s" }
            );
        }
    }
    text
}

/// Changes grouped by subject, the subject with the most severe change first.
fn render_changes(out: &mut String, changes: &[ClassifiedChange], indent: &str) {
    let mut subjects: Vec<(&str, SubjectKind, Severity)> = Vec::new();
    for change in changes {
        match subjects
            .iter_mut()
            .find(|(s, k, _)| *s == change.subject && *k == change.kind)
        {
            Some(entry) => entry.2 = entry.2.min(change.severity),
            None => subjects.push((&change.subject, change.kind, change.severity)),
        }
    }
    subjects.sort_by(|a, b| (a.2, a.1, a.0).cmp(&(b.2, b.1, b.0)));
    for (subject, kind, _) in subjects {
        let title = match kind {
            SubjectKind::Tool => format!("tool `{subject}`"),
            SubjectKind::Prompt => format!("prompt `{}`", subject.trim_start_matches("prompt:")),
            SubjectKind::ResourceTemplate => format!(
                "resource template `{}`",
                subject.trim_start_matches("resource-template:")
            ),
            SubjectKind::Instructions => "instructions".to_string(),
            SubjectKind::Server => "server".to_string(),
        };
        // Names come from the server: never let them write invisible characters.
        let _ = writeln!(out, "{indent}{}", crate::classify::visible(&title));
        let mine = changes
            .iter()
            .filter(|c| c.subject == subject && c.kind == kind);
        // Notes and approve commands are per subject: say each once, after its changes.
        let mut after: Vec<String> = Vec::new();
        for change in mine {
            let mut line = format!("{indent}  {:<9} {}", change.severity.name(), change.code);
            if let Some(pointer) = change.pointer.as_deref().filter(|p| !p.is_empty()) {
                let _ = write!(line, " {}", crate::classify::visible(pointer));
            }
            let _ = write!(line, ": {}", crate::classify::visible(&change.detail));
            if let Some(verdict) = &change.verdict {
                let _ = write!(line, " [{}]", verdict.status.name());
            }
            let _ = writeln!(out, "{line}");
            if let Some(diff) = &change.word_diff {
                for text in diff.lines() {
                    let _ = writeln!(out, "{indent}      {text}");
                }
            }
            let note = change.verdict.as_ref().and_then(|v| v.note.clone());
            let approve = change.approve.as_ref().map(|c| format!("to approve: {c}"));
            for line in note.into_iter().chain(approve) {
                if !after.contains(&line) {
                    after.push(line);
                }
            }
        }
        for line in after {
            let _ = writeln!(out, "{indent}    {}", crate::classify::visible(&line));
        }
    }
}

fn render_review(out: &mut String, review: &Review) {
    let all: Vec<&ClassifiedChange> = review.servers.iter().flat_map(|s| &s.changes).collect();
    let _ = writeln!(
        out,
        "changes since {}: {}",
        review.base,
        if all.is_empty() {
            "no contract changes".to_string()
        } else {
            severity_summary(&all)
        }
    );
    for server in &review.servers {
        if server.changes.is_empty() {
            continue;
        }
        let owner = server
            .owner
            .as_deref()
            .map(|o| format!(", owner {o}"))
            .unwrap_or_default();
        let digests = match (server.before, server.after) {
            (Some(a), Some(b)) if a != b => format!(" ({} -> {})", a.short(), b.short()),
            _ => String::new(),
        };
        let _ = writeln!(out, "server `{}`{digests}{owner}", server.server);
        render_changes(out, &server.changes, "  ");
    }
    for expired in &review.expired_ignores {
        let _ = writeln!(out, "error: {expired}");
    }
    let count = |status: crate::policy::Status| {
        all.iter()
            .filter(|c| c.verdict.as_ref().is_some_and(|v| v.status == status))
            .count()
    };
    let mut parts = Vec::new();
    for (status, word) in [
        (crate::policy::Status::Denied, "denied"),
        (crate::policy::Status::NeedsApproval, "need approval"),
        (crate::policy::Status::Approved, "approved"),
        (crate::policy::Status::Ignored, "ignored"),
        (crate::policy::Status::Warned, "warned"),
        (crate::policy::Status::Allowed, "allowed"),
    ] {
        let n = count(status);
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "review: {}", parts.join(", "));
    }
}

/// `text` with ANSI styles: the verdict line bold, severities and failing statuses coloured.
/// The output stream removes them when it is not a terminal (or NO_COLOR is set).
pub fn styled(text: &str) -> String {
    use anstyle::{AnsiColor, Style};
    let paint =
        |style: Style, word: &str| format!("{}{word}{}", style.render(), style.render_reset());
    let red = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    let yellow = Style::new().fg_color(Some(AnsiColor::Yellow.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
    let dim = Style::new().dimmed();
    let bold = Style::new().bold();
    let mut out = String::with_capacity(text.len() + 256);
    for (n, line) in text.lines().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let mut styled_line = if n == 0 {
            paint(bold, line)
        } else if let Some((word, rest)) = body.split_once(' ')
            && let Some(style) = match word {
                "breaking" => Some(red),
                "risky" => Some(yellow),
                "safe" => Some(green),
                "cosmetic" => Some(dim),
                _ => None,
            }
        {
            format!("{indent}{}{} {rest}", paint(style, word), "")
        } else if let Some(rest) = body.strip_prefix("error:") {
            format!("{indent}{}{rest}", paint(red, "error:"))
        } else {
            line.to_string()
        };
        for status in ["[needs approval]", "[denied]"] {
            if styled_line.ends_with(status) {
                let cut = styled_line.len() - status.len();
                styled_line = format!("{}{}", &styled_line[..cut], paint(red, status));
            }
        }
        out.push_str(&styled_line);
        out.push('\n');
    }
    out
}

/// Server text (a description line, a tool name) printed in a CI log must never be read as a
/// GitHub Actions workflow command (`::error::…`, `::add-mask::…`): a line whose text starts
/// with `::` gets a space between the colons.
pub fn defuse_workflow_commands(text: &str) -> String {
    if !text.contains("::") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive('\n') {
        let body = line.trim_start();
        if let Some(rest) = body.strip_prefix("::") {
            let indent = &line[..line.len() - body.len()];
            out.push_str(indent);
            out.push_str(": :");
            out.push_str(rest);
        } else {
            out.push_str(line);
        }
    }
    out
}
