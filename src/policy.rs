//! Judging classified changes: `catalock.toml` `[policy]` says what each severity or code
//! needs, `[[approval]]` records who accepted which digest transition and why,
//! `[[deprecation]]` announces removals, and `[[policy.ignore]]` silences a code with a reason
//! and an expiry.
//!
//! Approvals are data bound to digests, like cargo-vet's audits: an approval covers exactly
//! the transition from one digest of a tool (or prompt, template, instructions, server) to
//! another. If the contract moves again, the approval no longer applies and says so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::classify::{ClassifiedChange, TokenRule};
use crate::codes::Severity;
use crate::contract::Digest;

/// What a change needs before it may merge.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Never allowed.
    Deny,
    /// Allowed once a matching `[[approval]]` exists.
    Approve,
    /// Allowed, and shown as a warning.
    Warn,
    /// Allowed.
    Allow,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Deny => "deny",
            Action::Approve => "approve",
            Action::Warn => "warn",
            Action::Allow => "allow",
        }
    }
}

/// Per-severity actions; absent ones fall through to the next level.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeverityActions {
    pub breaking: Option<Action>,
    pub risky: Option<Action>,
    pub safe: Option<Action>,
    pub cosmetic: Option<Action>,
}

impl SeverityActions {
    fn get(&self, severity: Severity) -> Option<Action> {
        match severity {
            Severity::Breaking => self.breaking,
            Severity::Risky => self.risky,
            Severity::Safe => self.safe,
            Severity::Cosmetic => self.cosmetic,
        }
    }
}

/// `[policy]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PolicyConfig {
    #[serde(flatten)]
    pub severities: SeverityActions,
    /// Per code, e.g. `tokens-grew = "warn"`.
    #[serde(default)]
    pub codes: BTreeMap<String, Action>,
    #[serde(default)]
    pub tokens: TokensConfig,
    /// Per-server and per-tool overrides, most specific first wins.
    #[serde(default, rename = "override")]
    pub overrides: Vec<Override>,
    #[serde(default, rename = "ignore")]
    pub ignores: Vec<Ignore>,
}

/// `[policy.tokens]`: thresholds for `tokens-grew`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TokensConfig {
    /// A tool growing by more than this percentage (default 25)...
    pub grow_percent: Option<f64>,
    /// ...and more than this many tokens (default 100) grew too much.
    pub grow_tokens: Option<u64>,
    /// Token budget for each server's tools (a `[[server]]` `token-budget` overrides it).
    pub budget: Option<u64>,
}

impl TokensConfig {
    pub fn rule(&self, server_budget: Option<u64>) -> TokenRule {
        let default = TokenRule::default();
        TokenRule {
            percent: self.grow_percent.unwrap_or(default.percent),
            min_tokens: self.grow_tokens.unwrap_or(default.min_tokens),
            budget: server_budget.or(self.budget),
        }
    }
}

/// `[[policy.override]]`: actions for one server, or one tool of it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    pub server: String,
    pub tool: Option<String>,
    #[serde(flatten)]
    pub severities: SeverityActions,
    #[serde(default)]
    pub codes: BTreeMap<String, Action>,
}

/// `[[policy.ignore]]`: a code not to judge, with a reason and an optional expiry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ignore {
    pub server: String,
    pub tool: Option<String>,
    pub code: String,
    pub reason: String,
    /// YYYY-MM-DD: after this day the ignore fails the check until renewed or removed.
    pub expires: Option<DateText>,
}

/// `[[approval]]`: one accepted digest transition.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    pub server: String,
    /// The tool name, `prompt:NAME`, `resource-template:URI`, `@instructions` or `@server`.
    pub subject: String,
    /// The subject's digest in the base lockfile (absent: it was added).
    pub from: Option<String>,
    /// The subject's digest in the working lockfile (absent: it was removed).
    pub to: Option<String>,
    #[serde(default)]
    pub codes: Vec<String>,
    pub by: String,
    pub date: DateText,
    pub reason: String,
}

/// `[[deprecation]]`: a tool announced for removal.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Deprecation {
    pub server: String,
    pub tool: String,
    pub remove_after: DateText,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub date: Option<DateText>,
}

/// A date written either as a TOML date (`2027-01-31`) or a string (`"2027-01-31"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateText(pub String);

impl<'de> Deserialize<'de> for DateText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Datetime(d) => d.to_string(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "expected a date (YYYY-MM-DD), found {}",
                    other.type_str()
                )));
            }
        };
        if !is_date(&text) {
            return Err(serde::de::Error::custom(format!(
                "expected a date (YYYY-MM-DD), found {text:?}"
            )));
        }
        Ok(DateText(text))
    }
}

/// Whether `text` is a plausible YYYY-MM-DD date.
pub fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if !(b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit()))
    {
        return false;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Every code name the policy mentions that is not a change code, with where it is.
pub fn unknown_codes(config: &PolicyConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut check = |name: &str, place: &str| {
        if crate::codes::code(name).is_none() {
            out.push((name.to_string(), place.to_string()));
        }
    };
    for name in config.codes.keys() {
        check(name, "[policy.codes]");
    }
    for o in &config.overrides {
        for name in o.codes.keys() {
            check(name, "[[policy.override]] codes");
        }
    }
    for i in &config.ignores {
        check(&i.code, "[[policy.ignore]] code");
    }
    out
}

/// Today's date in UTC, YYYY-MM-DD (`CATALOCK_TODAY` overrides it, for reproducible tests).
pub fn today() -> String {
    if let Ok(day) = std::env::var("CATALOCK_TODAY")
        && is_date(&day)
    {
        return day;
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date(secs / 86_400)
}

/// Days since 1970-01-01 as YYYY-MM-DD (Howard Hinnant's civil-from-days).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// How one change was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// What the policy asks of this change.
    pub action: Action,
    pub status: Status,
    /// Why: the approval, the ignore's reason, or why an approval is stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Whether a change may merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Fails: the policy denies it.
    Denied,
    /// Fails: it needs an approval it does not have.
    NeedsApproval,
    /// Passes: a matching approval exists.
    Approved,
    /// Passes: an unexpired ignore covers it.
    Ignored,
    /// Passes with a warning.
    Warned,
    /// Passes.
    Allowed,
}

impl Status {
    pub fn fails(self) -> bool {
        matches!(self, Status::Denied | Status::NeedsApproval)
    }
    pub fn name(self) -> &'static str {
        match self {
            Status::Denied => "denied",
            Status::NeedsApproval => "needs approval",
            Status::Approved => "approved",
            Status::Ignored => "ignored",
            Status::Warned => "warning",
            Status::Allowed => "allowed",
        }
    }
}

/// The policy of one `catalock.toml`.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub config: PolicyConfig,
    pub approvals: Vec<Approval>,
    pub deprecations: Vec<Deprecation>,
}

impl Policy {
    /// The action the policy asks for `code` of `severity` on `server`/`subject`.
    pub fn action(&self, server: &str, subject: &str, code: &str, severity: Severity) -> Action {
        self.action_and_rule(server, subject, code, severity).0
    }

    /// The action and the rule that chose it, for messages.
    pub fn action_and_rule(
        &self,
        server: &str,
        subject: &str,
        code: &str,
        severity: Severity,
    ) -> (Action, String) {
        let tool_level = self
            .config
            .overrides
            .iter()
            .filter(|o| o.server == server && o.tool.as_deref() == Some(subject));
        let server_level = self
            .config
            .overrides
            .iter()
            .filter(|o| o.server == server && o.tool.is_none());
        let overrides: Vec<&Override> = tool_level.chain(server_level).collect();
        let place = |o: &Override| match &o.tool {
            Some(tool) => format!("[[policy.override]] server = {server:?}, tool = {tool:?}"),
            None => format!("[[policy.override]] server = {server:?}"),
        };
        // A rule naming the code beats any rule naming its severity, however specific: a
        // per-server `risky = "allow"` must not switch off a global `hidden-unicode = "deny"`.
        for o in &overrides {
            if let Some(action) = o.codes.get(code) {
                return (*action, format!("{}: {code}", place(o)));
            }
        }
        if let Some(action) = self.config.codes.get(code) {
            return (*action, format!("[policy.codes] {code}"));
        }
        if code == "owner-missing" {
            return (
                default_action(code, severity),
                "the default policy".to_string(),
            );
        }
        for o in &overrides {
            if let Some(action) = o.severities.get(severity) {
                return (action, format!("{}: {}", place(o), severity.name()));
            }
        }
        if let Some(action) = self.config.severities.get(severity) {
            return (action, format!("[policy] {}", severity.name()));
        }
        (
            default_action(code, severity),
            "the default policy".to_string(),
        )
    }

    /// Judges one change of `server`.
    pub fn judge(&self, server: &str, change: &ClassifiedChange, today: &str) -> Verdict {
        let (action, rule) =
            self.action_and_rule(server, &change.subject, &change.code, change.severity);
        if let Some(ignore) = self.config.ignores.iter().find(|i| {
            i.server == server
                && i.code == change.code
                && i.tool.as_deref().is_none_or(|t| t == change.subject)
                && i.expires.as_ref().is_none_or(|d| d.0.as_str() >= today)
        }) {
            return Verdict {
                action,
                status: Status::Ignored,
                note: Some(format!("ignored: {}", ignore.reason)),
            };
        }
        match action {
            Action::Allow => Verdict {
                action,
                status: Status::Allowed,
                note: None,
            },
            Action::Warn => Verdict {
                action,
                status: Status::Warned,
                note: None,
            },
            Action::Deny => Verdict {
                action,
                status: Status::Denied,
                note: Some(format!(
                    "denied by {rule} = \"deny\" in catalock.toml; an approval cannot override it"
                )),
            },
            Action::Approve => {
                let digest_text = |d: Option<Digest>| d.map(|d| d.to_string());
                let (from, to) = (digest_text(change.before), digest_text(change.after));
                let mine = self
                    .approvals
                    .iter()
                    .filter(|a| a.server == server && a.subject == change.subject);
                let mut stale = None;
                for approval in mine {
                    if approval.from == from && approval.to == to {
                        return Verdict {
                            action,
                            status: Status::Approved,
                            note: Some(format!(
                                "approved by {} on {}: {}",
                                approval.by, approval.date.0, approval.reason
                            )),
                        };
                    }
                    if approval.from == from {
                        stale = Some(format!(
                            "approval for {server}/{} is stale: approved {} -> {}, now {}",
                            change.subject,
                            short(approval.from.as_deref()),
                            short(approval.to.as_deref()),
                            short(to.as_deref())
                        ));
                    }
                }
                Verdict {
                    action,
                    status: Status::NeedsApproval,
                    note: stale,
                }
            }
        }
    }

    /// Ignores whose expiry has passed: each fails the check until renewed or removed.
    pub fn expired_ignores(&self, today: &str) -> Vec<String> {
        self.config
            .ignores
            .iter()
            .filter_map(|i| {
                let expires = i.expires.as_ref()?;
                (expires.0.as_str() < today).then(|| {
                    format!(
                        "the ignore of {} for {}{} expired on {} ({})",
                        i.code,
                        i.server,
                        i.tool
                            .as_deref()
                            .map(|t| format!("/{t}"))
                            .unwrap_or_default(),
                        expires.0,
                        i.reason
                    )
                })
            })
            .collect()
    }

    /// Deprecated tools of `server` and their removal dates.
    pub fn deprecations_of(&self, server: &str) -> BTreeMap<String, String> {
        self.deprecations
            .iter()
            .filter(|d| d.server == server)
            .map(|d| (d.tool.clone(), d.remove_after.0.clone()))
            .collect()
    }
}

/// The built-in policy: breaking and risky changes need approval, safe and cosmetic ones
/// pass. `owner-missing` only warns: it is about the config, not a change to approve.
pub fn default_action(code: &str, severity: Severity) -> Action {
    if code == "owner-missing" {
        return Action::Warn;
    }
    match severity {
        Severity::Breaking | Severity::Risky => Action::Approve,
        Severity::Safe | Severity::Cosmetic => Action::Allow,
    }
}

fn short(digest: Option<&str>) -> String {
    match digest {
        Some(d) if d.len() > 19 => format!("{}…", &d[..19]),
        Some(d) => d.to_string(),
        None => "(none)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_786), "2026-11-29");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert!(is_date("2027-01-31"));
        assert!(!is_date("2027-13-01"));
        assert!(!is_date("27-01-31"));
        assert!(!is_date("2026-02-29"));
        assert!(is_date("2028-02-29"));
        assert!(!is_date("2027-04-31"));
    }

    #[test]
    fn most_specific_action_wins() {
        let config: PolicyConfig = toml::from_str(
            r#"
            risky = "warn"
            [codes]
            description-changed = "deny"
            [[override]]
            server = "gh"
            breaking = "allow"
            [[override]]
            server = "gh"
            tool = "delete"
            codes = { tool-removed = "deny" }
            "#,
        )
        .unwrap();
        let policy = Policy {
            config,
            ..Policy::default()
        };
        let table = [
            ("x", "t", "meta-changed", Severity::Risky, Action::Warn),
            (
                "x",
                "t",
                "description-changed",
                Severity::Risky,
                Action::Deny,
            ),
            (
                "x",
                "t",
                "tool-removed",
                Severity::Breaking,
                Action::Approve,
            ),
            ("gh", "t", "tool-removed", Severity::Breaking, Action::Allow),
            (
                "gh",
                "delete",
                "tool-removed",
                Severity::Breaking,
                Action::Deny,
            ),
            ("x", "t", "tool-added", Severity::Safe, Action::Allow),
            (
                "x",
                "@server",
                "owner-missing",
                Severity::Risky,
                Action::Warn,
            ),
            // A global rule for the code beats a per-server rule for its severity.
            (
                "gh",
                "t",
                "description-changed",
                Severity::Risky,
                Action::Deny,
            ),
        ];
        for (server, subject, code, severity, want) in table {
            assert_eq!(
                policy.action(server, subject, code, severity),
                want,
                "{server}/{subject} {code}"
            );
        }
    }
}
