//! Naming each difference between two locked entries of one server with a change code
//! ([`crate::codes`]) and a JSON Pointer, so a policy can judge it and a reviewer can approve
//! exactly it.
//!
//! Classification reads the stored content of both sides (never the live server), so the
//! same two lockfiles always give the same changes. Every digest difference yields at least
//! one change: a key without a specific rule falls back to `behavior-changed` or
//! `schema-changed`, never to silence.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::build::{Coverage, tool_object};
use crate::codes::{self, Severity};
use crate::contract::{Digest, PERMISSION_HINTS};
use crate::json;
use crate::lockfile::{LockedServer, LockedTool};
use crate::schema_diff::{Direction, diff_schemas};
use crate::version::{VersionChange, version_findings};

/// What a change is about: the unit an approval binds to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SubjectKind {
    Tool,
    Prompt,
    ResourceTemplate,
    Instructions,
    /// The server as a whole (version, owner, token budget, entry added or removed).
    Server,
}

/// One classified change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClassifiedChange {
    /// The change code (`catalock explain CODE`).
    pub code: String,
    pub severity: Severity,
    pub kind: SubjectKind,
    /// What `catalock approve SERVER/SUBJECT` names: the tool name, `prompt:NAME`,
    /// `resource-template:URI`, `@instructions` or `@server`.
    pub subject: String,
    /// JSON Pointer into the tool (e.g. `/inputSchema/properties/path`), when the change has
    /// a place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// One line saying what changed; invisible characters shown as `<U+XXXX>`.
    pub detail: String,
    /// Word-level diff of a changed description (`[-old-]{+new+}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub word_diff: Option<String>,
    /// The subject's digest before and after: what an approval binds to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Digest>,
    /// How the policy judged it (review mode: `check --base` / `--baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::policy::Verdict>,
    /// The command that approves it, when it needs an approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve: Option<String>,
}

/// Thresholds for `tokens-grew`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenRule {
    /// A tool must grow by more than this percentage...
    pub percent: f64,
    /// ...and by more than this many tokens.
    pub min_tokens: u64,
    /// A server whose tools pass this total (and did not before) grew too much.
    pub budget: Option<u64>,
}

impl Default for TokenRule {
    fn default() -> Self {
        TokenRule {
            percent: 25.0,
            min_tokens: 100,
            budget: None,
        }
    }
}

/// What classification needs beyond the two entries.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub tokens: TokenRule,
    /// Deprecated tools of this server and the date (YYYY-MM-DD) after which removal is safe.
    pub deprecations: BTreeMap<String, String>,
    /// Today, YYYY-MM-DD (UTC).
    pub today: String,
}

/// The subject name of a server-level change.
pub const SERVER_SUBJECT: &str = "@server";
/// The subject name of the instructions.
pub const INSTRUCTIONS_SUBJECT: &str = "@instructions";

/// A change with no place in a tool, e.g. `owner-missing`.
pub fn server_change(
    code: &'static str,
    detail: String,
    digest: Option<Digest>,
) -> ClassifiedChange {
    change(
        code,
        SubjectKind::Server,
        SERVER_SUBJECT,
        None,
        detail,
        (digest, digest),
    )
}

fn change(
    code: &'static str,
    kind: SubjectKind,
    subject: &str,
    pointer: Option<String>,
    detail: String,
    digests: (Option<Digest>, Option<Digest>),
) -> ClassifiedChange {
    let severity = codes::code(code)
        .unwrap_or_else(|| panic!("unknown change code {code}"))
        .severity;
    ClassifiedChange {
        code: code.to_string(),
        severity,
        kind,
        subject: subject.to_string(),
        pointer,
        detail,
        word_diff: None,
        before: digests.0,
        after: digests.1,
        verdict: None,
        approve: None,
    }
}

/// Every change from `old` to `new` (either may be absent: a server added or removed).
/// Both must be full entries (content present).
pub fn classify_server(
    old: Option<&LockedServer>,
    new: Option<&LockedServer>,
    context: &Context,
) -> Vec<ClassifiedChange> {
    let mut out = Vec::new();
    let (old, new) = match (old, new) {
        (Some(old), Some(new)) => (old, new),
        (Some(old), None) => {
            out.push(change(
                "server-removed",
                SubjectKind::Server,
                SERVER_SUBJECT,
                None,
                format!(
                    "server `{}` ({} tools) is no longer locked",
                    old.name,
                    old.tools.len()
                ),
                (Some(old.server_digest), None),
            ));
            return out;
        }
        (None, Some(new)) => {
            out.push(change(
                "server-added",
                SubjectKind::Server,
                SERVER_SUBJECT,
                None,
                format!("server `{}` with {} tools", new.name, new.tools.len()),
                (None, Some(new.server_digest)),
            ));
            for tool in &new.tools {
                let object = tool_object(tool).unwrap_or_default();
                hidden_in_added(
                    &mut out,
                    SubjectKind::Tool,
                    &tool.name,
                    &object,
                    tool.digest,
                );
            }
            return out;
        }
        (None, None) => return out,
    };

    classify_tools(old, new, context, &mut out);
    let (old_cover, new_cover) = (Coverage::of(old), Coverage::of(new));
    let common = old_cover.common(new_cover);
    if common.instructions && old.instructions_digest != new.instructions_digest {
        let digests = (old.instructions_digest, new.instructions_digest);
        let mut c = change(
            "instructions-changed",
            SubjectKind::Instructions,
            INSTRUCTIONS_SUBJECT,
            None,
            text_change_detail(old.instructions.as_deref(), new.instructions.as_deref()),
            digests,
        );
        c.word_diff = word_diff(
            old.instructions.as_deref().unwrap_or(""),
            new.instructions.as_deref().unwrap_or(""),
        );
        out.push(c);
        hidden_text(
            &mut out,
            SubjectKind::Instructions,
            INSTRUCTIONS_SUBJECT,
            None,
            old.instructions.as_deref().unwrap_or(""),
            new.instructions.as_deref().unwrap_or(""),
            digests,
        );
    }
    if common.prompts {
        let old_items = old
            .prompts
            .iter()
            .map(|p| (p.name.as_str(), p.digest, p.content.as_str()));
        let new_items = new
            .prompts
            .iter()
            .map(|p| (p.name.as_str(), p.digest, p.content.as_str()));
        classify_items(
            &mut out,
            SubjectKind::Prompt,
            old_items.collect(),
            new_items.collect(),
        );
    }
    if common.resource_templates {
        fn key(t: &crate::lockfile::LockedResourceTemplate) -> &str {
            t.uri_template.as_str()
        }
        let old_items = old
            .resource_templates
            .iter()
            .map(|t| (key(t), t.digest, t.content.as_str()));
        let new_items = new
            .resource_templates
            .iter()
            .map(|t| (key(t), t.digest, t.content.as_str()));
        classify_items(
            &mut out,
            SubjectKind::ResourceTemplate,
            old_items.collect(),
            new_items.collect(),
        );
    }

    if let Some(budget) = context.tokens.budget
        && new.total_tokens > budget
        && old.total_tokens <= budget
    {
        out.push(change(
            "tokens-grew",
            SubjectKind::Server,
            SERVER_SUBJECT,
            None,
            format!(
                "tools now cost {} tokens, past the budget of {budget} (was {})",
                new.total_tokens, old.total_tokens
            ),
            (Some(old.server_digest), Some(new.server_digest)),
        ));
    }

    // Version policy, over what the server says about itself.
    let contract_changed = if common == old_cover && common == new_cover {
        old.server_digest != new.server_digest
    } else {
        crate::build::projected_server_digest(old, common)
            != crate::build::projected_server_digest(new, common)
    };
    let breaking = out.iter().any(|c| c.severity == Severity::Breaking);
    let (before, after) = (server_version(old), server_version(new));
    if common.instructions {
        for (code, detail) in version_findings(&VersionChange {
            before: before.as_deref(),
            after: after.as_deref(),
            contract_changed,
            breaking,
            history: &new.previous_versions,
        }) {
            out.push(change(
                code,
                SubjectKind::Server,
                SERVER_SUBJECT,
                None,
                detail,
                (Some(old.server_digest), Some(new.server_digest)),
            ));
        }
    }
    sort_changes(&mut out);
    out
}

/// Most severe first, then by subject, code and pointer: the order every report shows.
pub fn sort_changes(changes: &mut [ClassifiedChange]) {
    changes.sort_by(|a, b| {
        (a.severity, &a.subject, &a.code, &a.pointer, &a.detail)
            .cmp(&(b.severity, &b.subject, &b.code, &b.pointer, &b.detail))
    });
}

/// `serverInfo.version`, when the server sent one.
pub fn server_version(server: &LockedServer) -> Option<String> {
    let info: Value = serde_json::from_str(server.server_info.as_deref()?).ok()?;
    match info.get("version")? {
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn classify_tools(
    old: &LockedServer,
    new: &LockedServer,
    context: &Context,
    out: &mut Vec<ClassifiedChange>,
) {
    let mut removed: Vec<&LockedTool> = Vec::new();
    let mut added: Vec<&LockedTool> = Vec::new();
    let (mut i, mut j) = (0, 0);
    // Both tool lists are sorted by name: walk them together.
    while i < old.tools.len() || j < new.tools.len() {
        let ordering = match (old.tools.get(i), new.tools.get(j)) {
            (Some(a), Some(b)) => a.name.cmp(&b.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ordering {
            std::cmp::Ordering::Less => {
                removed.push(&old.tools[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                added.push(&new.tools[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (a, b) = (&old.tools[i], &new.tools[j]);
                if a.digest != b.digest || a.tokens != b.tokens {
                    classify_tool(a, b, context, out);
                }
                i += 1;
                j += 1;
            }
        }
    }

    // A removed and an added tool equal in everything but the name were renamed.
    let unnamed = |tool: &LockedTool| -> (Map<String, Value>, String) {
        let mut object = tool_object(tool).unwrap_or_default();
        object.remove("name");
        let text = json::canonical(&Value::Object(object.clone()));
        (object, text)
    };
    let added_bodies: Vec<(Map<String, Value>, String)> =
        added.iter().map(|t| unnamed(t)).collect();
    let mut renamed_to = vec![false; added.len()];
    for tool in removed {
        let (_, body) = unnamed(tool);
        let twin = added_bodies
            .iter()
            .enumerate()
            .find(|(k, (_, b))| !renamed_to[*k] && *b == body)
            .map(|(k, _)| k);
        if let Some(k) = twin {
            renamed_to[k] = true;
            // One change, on the new name, bound to the old digest and the new one.
            out.push(change(
                "tool-renamed",
                SubjectKind::Tool,
                &added[k].name,
                None,
                format!("renamed from `{}`, otherwise unchanged", tool.name),
                (Some(tool.digest), Some(added[k].digest)),
            ));
            continue;
        }
        let code = match context.deprecations.get(&tool.name) {
            Some(after) if after.as_str() < context.today.as_str() => "deprecated-tool-removed",
            _ => "tool-removed",
        };
        let detail = match context.deprecations.get(&tool.name) {
            Some(after) if code == "tool-removed" => {
                format!("removed before its deprecation date ({after})")
            }
            Some(after) => format!("removed after its deprecation date ({after})"),
            None => format!("`{}` is gone ({} tokens)", tool.name, tool.tokens),
        };
        out.push(change(
            code,
            SubjectKind::Tool,
            &tool.name,
            None,
            detail,
            (Some(tool.digest), None),
        ));
    }
    for (k, tool) in added.iter().enumerate() {
        if renamed_to[k] {
            continue;
        }
        let object = &added_bodies[k].0;
        let hints: Vec<String> = PERMISSION_HINTS
            .iter()
            .map(|(hint, default)| {
                let value = effective_hint(object, hint, *default);
                format!("{hint}={}", json::canonical(&value))
            })
            .collect();
        out.push(change(
            "tool-added",
            SubjectKind::Tool,
            &tool.name,
            None,
            format!("new tool ({} tokens; {})", tool.tokens, hints.join(", ")),
            (None, Some(tool.digest)),
        ));
        if may_hide(tool) {
            hidden_in_added(out, SubjectKind::Tool, &tool.name, object, tool.digest);
        }
    }
}

fn hidden_in_added(
    out: &mut Vec<ClassifiedChange>,
    kind: SubjectKind,
    subject: &str,
    object: &Map<String, Value>,
    digest: Digest,
) {
    let mut found = Vec::new();
    collect_hidden(
        &Value::Object(object.clone()),
        &mut String::new(),
        &mut found,
    );
    for (pointer, what) in found {
        out.push(change(
            "hidden-unicode",
            kind,
            subject,
            Some(pointer),
            what,
            (None, Some(digest)),
        ));
    }
}

/// Both tools as objects. A schema stored identically on both sides is left out (null on
/// both): most changed tools change one field, and schemas are most of their bytes.
fn tool_pair(old: &LockedTool, new: &LockedTool) -> (Map<String, Value>, Map<String, Value>) {
    let same_input = old.input_schema == new.input_schema && old.input_schema.is_some();
    let same_output = old.output_schema == new.output_schema && old.output_schema.is_some();
    if !same_input && !same_output {
        return (
            tool_object(old).unwrap_or_default(),
            tool_object(new).unwrap_or_default(),
        );
    }
    let lighten = |tool: &LockedTool| {
        let null = Some("null".to_string());
        let light = LockedTool {
            input_schema: if same_input {
                null.clone()
            } else {
                tool.input_schema.clone()
            },
            output_schema: if same_output {
                null
            } else {
                tool.output_schema.clone()
            },
            ..tool.clone()
        };
        tool_object(&light).unwrap_or_default()
    };
    (lighten(old), lighten(new))
}

/// Whether any text of `tool` could hold a hidden character: non-ASCII bytes, control
/// characters, or (in stored JSON) their escapes. Almost every tool can be skipped.
fn may_hide(tool: &LockedTool) -> bool {
    let raw = |text: &Option<String>| {
        text.as_deref().is_some_and(|t| {
            t.bytes()
                .any(|b| b >= 0x7F || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')))
        })
    };
    let json = |text: &Option<String>| {
        text.as_deref().is_some_and(|t| {
            t.bytes().any(|b| b >= 0x7F)
                || t.contains("\\u00")
                || t.contains("\\b")
                || t.contains("\\f")
        })
    };
    raw(&tool.title)
        || raw(&tool.description)
        || raw(&Some(tool.name.clone()))
        || [
            &tool.annotations,
            &tool.input_schema,
            &tool.output_schema,
            &tool.icons,
            &tool.other,
        ]
        .into_iter()
        .any(json)
}

/// Changes of one tool present on both sides.
fn classify_tool(
    old: &LockedTool,
    new: &LockedTool,
    context: &Context,
    out: &mut Vec<ClassifiedChange>,
) {
    let (a, b) = tool_pair(old, new);
    let digests = (Some(old.digest), Some(new.digest));
    let subject = new.name.as_str();
    let start = out.len();
    let push =
        |out: &mut Vec<ClassifiedChange>, code: &'static str, pointer: &str, detail: String| {
            out.push(change(
                code,
                SubjectKind::Tool,
                subject,
                Some(pointer.to_string()),
                detail,
                digests,
            ));
        };

    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        if x == y {
            continue;
        }
        let pointer = format!("/{}", pointer_escape(key));
        match key.as_str() {
            "name" => {}
            "title" => push(out, "title-changed", &pointer, value_change_detail(x, y)),
            "description" => {
                let (s, t) = (text_of(x), text_of(y));
                let mut c = change(
                    "description-changed",
                    SubjectKind::Tool,
                    subject,
                    Some(pointer.clone()),
                    text_change_detail(s.as_deref(), t.as_deref()),
                    digests,
                );
                c.word_diff = word_diff(s.as_deref().unwrap_or(""), t.as_deref().unwrap_or(""));
                out.push(c);
            }
            "inputSchema" => {
                let empty = Value::Object(Map::new());
                for found in
                    diff_schemas(x.unwrap_or(&empty), y.unwrap_or(&empty), Direction::Input)
                {
                    push(
                        out,
                        found.code,
                        &format!("{pointer}{}", found.pointer),
                        found.detail,
                    );
                }
            }
            "outputSchema" => match (x, y) {
                (None, Some(_)) => push(
                    out,
                    "output-schema-added",
                    &pointer,
                    "output schema declared".into(),
                ),
                (Some(_), None) => push(
                    out,
                    "output-schema-removed",
                    &pointer,
                    "output schema no longer declared".into(),
                ),
                (Some(x), Some(y)) => {
                    for found in diff_schemas(x, y, Direction::Output) {
                        push(
                            out,
                            found.code,
                            &format!("{pointer}{}", found.pointer),
                            found.detail,
                        );
                    }
                }
                (None, None) => {}
            },
            "annotations" => classify_annotations(&a, &b, &pointer, out, &push),
            "execution" => push(
                out,
                "execution-changed",
                &pointer,
                value_change_detail(x, y),
            ),
            "_meta" => push(out, "meta-changed", &pointer, value_change_detail(x, y)),
            "icons" => push(out, "icons-changed", &pointer, value_change_detail(x, y)),
            _ => push(out, "behavior-changed", &pointer, value_change_detail(x, y)),
        }
    }

    // Invisible characters this version adds, anywhere in the tool.
    if may_hide(new) {
        let mut before = Vec::new();
        collect_hidden_in(&a, &mut String::new(), &mut before);
        let mut after = Vec::new();
        collect_hidden_in(&b, &mut String::new(), &mut after);
        for (pointer, what) in after {
            if !before.iter().any(|(p, w)| *p == pointer && *w == what) {
                push(out, "hidden-unicode", &pointer, what);
            }
        }
    }

    let grew = new.tokens.saturating_sub(old.tokens);
    if grew > context.tokens.min_tokens
        && (grew as f64) * 100.0 > context.tokens.percent * (old.tokens as f64)
    {
        out.push(change(
            "tokens-grew",
            SubjectKind::Tool,
            subject,
            None,
            format!(
                "{} -> {} tokens (+{grew}, +{:.0}%)",
                old.tokens,
                new.tokens,
                if old.tokens == 0 {
                    100.0
                } else {
                    grew as f64 * 100.0 / old.tokens as f64
                }
            ),
            digests,
        ));
    }
    // The digest moved but no rule named why (it cannot, short of a bug): say so anyway.
    if out.len() == start && old.digest != new.digest {
        push(out, "behavior-changed", "", "the tool changed".into());
    }
}

/// Records one change of the tool being classified: (changes, code, pointer, detail).
type PushChange<'a> = dyn Fn(&mut Vec<ClassifiedChange>, &'static str, &str, String) + 'a;

fn classify_annotations(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    pointer: &str,
    out: &mut Vec<ClassifiedChange>,
    push: &PushChange<'_>,
) {
    let empty = Map::new();
    let annotations = |m: &Map<String, Value>| -> Map<String, Value> {
        match m.get("annotations") {
            Some(Value::Object(o)) => o.clone(),
            _ => empty.clone(),
        }
    };
    let (x, y) = (annotations(a), annotations(b));
    if !matches!(a.get("annotations"), None | Some(Value::Object(_)))
        || !matches!(b.get("annotations"), None | Some(Value::Object(_)))
    {
        push(
            out,
            "behavior-changed",
            pointer,
            value_change_detail(a.get("annotations"), b.get("annotations")),
        );
        return;
    }
    for (hint, default) in PERMISSION_HINTS {
        let before = effective_hint(a, hint, default);
        let after = effective_hint(b, hint, default);
        if before == after {
            continue;
        }
        // Toward danger: readOnly and idempotent losing true, destructive and openWorld gaining it.
        let dangerous_value = matches!(hint, "destructiveHint" | "openWorldHint");
        let code = match after {
            Value::Bool(v) if v == dangerous_value => "permission-escalated",
            Value::Bool(_) => "permission-relaxed",
            _ => "permission-escalated",
        };
        push(
            out,
            code,
            &format!("{pointer}/{hint}"),
            format!(
                "{hint} {} -> {}",
                json::canonical(&before),
                json::canonical(&after)
            ),
        );
    }
    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if PERMISSION_HINTS.iter().any(|(h, _)| h == key) || x.get(key) == y.get(key) {
            continue;
        }
        let code = if key == "title" {
            "title-changed"
        } else {
            "behavior-changed"
        };
        push(
            out,
            code,
            &format!("{pointer}/{}", pointer_escape(key)),
            value_change_detail(x.get(key), y.get(key)),
        );
    }
}

fn effective_hint(tool: &Map<String, Value>, hint: &str, default: bool) -> Value {
    tool.get("annotations")
        .and_then(Value::as_object)
        .and_then(|a| a.get(hint))
        .cloned()
        .unwrap_or(Value::Bool(default))
}

/// Prompts or resource templates, matched by key; content is canonical JSON.
fn classify_items(
    out: &mut Vec<ClassifiedChange>,
    kind: SubjectKind,
    old: Vec<(&str, Digest, &str)>,
    new: Vec<(&str, Digest, &str)>,
) {
    let (prefix, added, removed, changed) = match kind {
        SubjectKind::Prompt => (
            "prompt:",
            "prompt-added",
            "prompt-removed",
            "prompt-changed",
        ),
        _ => (
            "resource-template:",
            "resource-template-added",
            "resource-template-removed",
            "resource-template-changed",
        ),
    };
    let old_map: BTreeMap<&str, (Digest, &str)> =
        old.iter().map(|(k, d, c)| (*k, (*d, *c))).collect();
    let new_map: BTreeMap<&str, (Digest, &str)> =
        new.iter().map(|(k, d, c)| (*k, (*d, *c))).collect();
    for (key, (digest, content)) in &old_map {
        let subject = format!("{prefix}{key}");
        match new_map.get(key) {
            None => out.push(change(
                removed,
                kind,
                &subject,
                None,
                format!("`{key}` is gone"),
                (Some(*digest), None),
            )),
            Some((d, c)) if d != digest => {
                let x: Value = serde_json::from_str(content).unwrap_or(Value::Null);
                let y: Value = serde_json::from_str(c).unwrap_or(Value::Null);
                let mut fields = Vec::new();
                if let (Value::Object(x), Value::Object(y)) = (&x, &y) {
                    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                    keys.sort();
                    keys.dedup();
                    fields = keys
                        .into_iter()
                        .filter(|k| x.get(*k) != y.get(*k))
                        .cloned()
                        .collect();
                }
                out.push(change(
                    changed,
                    kind,
                    &subject,
                    None,
                    if fields.is_empty() {
                        "content changed".into()
                    } else {
                        format!("changed: {}", fields.join(", "))
                    },
                    (Some(*digest), Some(*d)),
                ));
                let mut before = Vec::new();
                collect_hidden(&x, &mut String::new(), &mut before);
                let mut after = Vec::new();
                collect_hidden(&y, &mut String::new(), &mut after);
                for (pointer, what) in after {
                    if !before.iter().any(|(p, w)| *p == pointer && *w == what) {
                        out.push(change(
                            "hidden-unicode",
                            kind,
                            &subject,
                            Some(pointer),
                            what,
                            (Some(*digest), Some(*d)),
                        ));
                    }
                }
            }
            Some(_) => {}
        }
    }
    for (key, (digest, content)) in &new_map {
        if old_map.contains_key(key) {
            continue;
        }
        let subject = format!("{prefix}{key}");
        out.push(change(
            added,
            kind,
            &subject,
            None,
            format!("new: `{key}`"),
            (None, Some(*digest)),
        ));
        let y: Value = serde_json::from_str(content).unwrap_or(Value::Null);
        let mut found = Vec::new();
        collect_hidden(&y, &mut String::new(), &mut found);
        for (pointer, what) in found {
            out.push(change(
                "hidden-unicode",
                kind,
                &subject,
                Some(pointer),
                what,
                (None, Some(*digest)),
            ));
        }
    }
}

fn hidden_text(
    out: &mut Vec<ClassifiedChange>,
    kind: SubjectKind,
    subject: &str,
    pointer: Option<String>,
    before: &str,
    after: &str,
    digests: (Option<Digest>, Option<Digest>),
) {
    let old = hidden_summary(before);
    let new = hidden_summary(after);
    if let Some(what) = new
        && old.as_ref() != Some(&what)
    {
        out.push(change(
            "hidden-unicode",
            kind,
            subject,
            pointer,
            what,
            digests,
        ));
    }
}

/// RFC 6901 escaping of one reference token.
pub fn pointer_escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn text_of(value: Option<&Value>) -> Option<String> {
    value.map(|v| match v {
        Value::String(s) => s.clone(),
        other => json::canonical(other),
    })
}

const DETAIL_WIDTH: usize = 60;

/// `value` as one short line: compact JSON, invisible characters visible, long text cut.
pub fn short_value(value: &Value) -> String {
    let text = json::canonical(value);
    truncate(&visible(&text), DETAIL_WIDTH)
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let cut: String = text.chars().take(width).collect();
    format!("{cut}…")
}

fn value_change_detail(before: Option<&Value>, after: Option<&Value>) -> String {
    match (before, after) {
        (None, Some(v)) => format!("added: {}", short_value(v)),
        (Some(v), None) => format!("removed (was {})", short_value(v)),
        (Some(x), Some(y)) => format!("{} -> {}", short_value(x), short_value(y)),
        (None, None) => "unchanged".to_string(),
    }
}

fn text_change_detail(before: Option<&str>, after: Option<&str>) -> String {
    let words = |s: Option<&str>| s.map_or(0, |s| s.split_whitespace().count());
    match (before, after) {
        (None, Some(_)) => format!("added ({} words)", words(after)),
        (Some(_), None) => format!("removed (was {} words)", words(before)),
        _ => format!("{} -> {} words", words(before), words(after)),
    }
}

/// A word-level diff: unchanged words as they are, removed ones as `[-…-]`, added as `{+…+}`;
/// only the lines that changed (and `…` for skipped ones) when the text spans many lines.
pub fn word_diff(before: &str, after: &str) -> Option<String> {
    if before == after {
        return None;
    }
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .diff_words(before, after);
    let mut text = String::new();
    let mut pending: Option<(similar::ChangeTag, String)> = None;
    let flush = |text: &mut String, pending: &mut Option<(similar::ChangeTag, String)>| {
        if let Some((tag, run)) = pending.take() {
            match tag {
                similar::ChangeTag::Equal => text.push_str(&visible(&run)),
                similar::ChangeTag::Delete => {
                    text.push_str("[-");
                    text.push_str(&visible(&run));
                    text.push_str("-]");
                }
                similar::ChangeTag::Insert => {
                    text.push_str("{+");
                    text.push_str(&visible(&run));
                    text.push_str("+}");
                }
            }
        }
    };
    for op in diff.iter_all_changes() {
        let tag = op.tag();
        match &mut pending {
            Some((t, run)) if *t == tag => run.push_str(op.value()),
            _ => {
                flush(&mut text, &mut pending);
                pending = Some((tag, op.value().to_string()));
            }
        }
    }
    flush(&mut text, &mut pending);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 6 {
        return Some(text);
    }
    let mut shown = Vec::new();
    let mut skipped = false;
    for line in lines {
        if line.contains("[-") || line.contains("{+") || line.contains("-]") || line.contains("+}")
        {
            shown.push(line.to_string());
            skipped = false;
        } else if !skipped {
            shown.push("…".to_string());
            skipped = true;
        }
    }
    Some(shown.join("\n"))
}

/// Whether `c` is invisible, reorders text, or is otherwise a way to hide content.
pub fn is_hidden_char(c: char) -> bool {
    let u = c as u32;
    if u < 0xA0 {
        // C0 and C1 controls, DEL; tab and newlines are ordinary text.
        return (u < 0x20 && !matches!(c, '\n' | '\r' | '\t')) || u >= 0x7F;
    }
    matches!(u,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0E
        | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB | 0x1D173..=0x1D17A | 0xE0000..=0xE007F
        | 0xE0100..=0xE01EF)
}

/// `text` with every hidden character written `<U+XXXX>`.
pub fn visible(text: &str) -> String {
    if !text.chars().any(is_hidden_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden_char(c) {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A word mixing Latin letters with Cyrillic or Greek ones: `pаypal` with a Cyrillic `а`.
fn mixed_script_word(text: &str) -> Option<&str> {
    text.split(|c: char| !c.is_alphanumeric()).find(|word| {
        let latin = word.chars().any(|c| c.is_ascii_alphabetic());
        let lookalike = word.chars().any(|c| matches!(c as u32, 0x0370..=0x04FF));
        latin && lookalike
    })
}

/// What hides in `text`, as one line, or `None` when nothing does.
fn hidden_summary(text: &str) -> Option<String> {
    // Almost all text is ASCII: only control characters can hide there.
    // One pass decides whether there is anything to look at (almost always not).
    let mut hidden = false;
    let mut lookalike = false;
    for c in text.chars() {
        hidden |= is_hidden_char(c);
        lookalike |= matches!(c as u32, 0x0370..=0x04FF);
    }
    if !hidden && !lookalike {
        return None;
    }
    let mut chars: Vec<String> = text
        .chars()
        .filter(|c| is_hidden_char(*c))
        .map(|c| format!("<U+{:04X}>", c as u32))
        .collect();
    chars.sort();
    chars.dedup();
    let mut parts = Vec::new();
    if !chars.is_empty() {
        parts.push(format!("invisible characters {}", chars.join(" ")));
    }
    if let Some(word) = mixed_script_word(text) {
        parts.push(format!("mixed-script word {:?}", visible(word)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Every string (keys included) under `value` that hides something, by pointer.
fn collect_hidden(value: &Value, pointer: &mut String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => {
            if let Some(what) = hidden_summary(s) {
                out.push((pointer.clone(), what));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                collect_hidden(item, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => collect_hidden_in(map, pointer, out),
        _ => {}
    }
}

fn collect_hidden_in(
    map: &Map<String, Value>,
    pointer: &mut String,
    out: &mut Vec<(String, String)>,
) {
    for (key, item) in map {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&pointer_escape(key));
        if let Some(what) = hidden_summary(key) {
            out.push((pointer.clone(), format!("in the key: {what}")));
        }
        collect_hidden(item, pointer, out);
        pointer.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_named() {
        assert_eq!(visible("a\u{200B}b"), "a<U+200B>b");
        assert_eq!(visible("plain"), "plain");
        assert_eq!(
            hidden_summary("ignore\u{202E}previous\u{E0041}").as_deref(),
            Some("invisible characters <U+202E> <U+E0041>")
        );
        assert_eq!(
            hidden_summary("visit p\u{0430}ypal").as_deref(),
            Some("mixed-script word \"p\u{0430}ypal\"")
        );
        assert_eq!(hidden_summary("Ελληνικά and English"), None);
        assert_eq!(hidden_summary("tabs\tand\nnewlines"), None);
    }

    #[test]
    fn word_diff_marks_words() {
        assert_eq!(
            word_diff("Read a file from disk", "Read any file from the disk").as_deref(),
            Some("Read [-a-]{+any+} file from {+the +}disk")
        );
        assert_eq!(word_diff("same", "same"), None);
        assert_eq!(
            word_diff("ok", "ok\u{200B}").as_deref(),
            Some("[-ok-]{+ok<U+200B>+}")
        );
    }
}
