//! Comparing two locked contracts: per server, per tool, per section, per field.
//!
//! Both sides are [`LockedServer`]s (a capture is first built into one), so a lockfile can be
//! compared with a capture, a capture with a capture, or two lockfiles, and every readable
//! diff comes from the stored content alone.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::build::{Coverage, projected_server_digest, tool_object};
use crate::contract::{Digest, ItemKind, PERMISSION_HINTS, SURFACE_KEYS, Section};
use crate::json;
use crate::lockfile::{LockFile, LockedServer, LockedTool};

/// What happened to a tool, prompt, template or server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Added,
    Removed,
    Changed,
}

/// Token totals before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Tokens {
    pub before: Option<u64>,
    pub after: Option<u64>,
}

/// One changed field, with both values and a unified diff when the values span lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldChange {
    /// The top-level key (`description`, `inputSchema`, ...) or `annotations.<hint>`.
    pub field: String,
    /// The old value: the string itself for strings, pretty canonical JSON otherwise; absent
    /// when the field was absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Unified line diff of `before` and `after`, when either spans several lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unified: Option<String>,
}

/// One section whose digest changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SectionChange {
    pub section: Section,
    pub before: Digest,
    pub after: Digest,
    pub fields: Vec<FieldChange>,
}

/// One tool that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ToolDiff {
    pub name: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Digest>,
    /// Changed sections (empty for added and removed tools).
    pub sections: Vec<SectionChange>,
    pub tokens: Tokens,
}

/// One prompt or resource template that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ItemDiff {
    pub kind: ItemKind,
    /// The prompt name or the template's URI template.
    pub key: String,
    pub change: Change,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unified: Option<String>,
}

/// Every difference of one server entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ServerDiff {
    pub server: String,
    /// `None` when the contract digests are equal (notes may still be present).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Digest>,
    pub tools: Vec<ToolDiff>,
    pub items: Vec<ItemDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<FieldChange>,
    /// Whether prompts or resource templates were captured on one side only.
    pub coverage: Vec<String>,
    pub tokens: Tokens,
    /// Differences that are not contract changes (server version, protocol, cosmetic form).
    pub notes: Vec<String>,
    /// Every change, classified by code and severity, most severe first.
    pub changes: Vec<crate::classify::ClassifiedChange>,
}

impl ServerDiff {
    pub fn is_change(&self) -> bool {
        self.change.is_some()
    }
}

/// Compares every server of two lockfiles, matched by name.
pub fn diff_lockfiles(old: &LockFile, new: &LockFile) -> Vec<ServerDiff> {
    let mut names: Vec<&str> = old
        .servers
        .iter()
        .chain(&new.servers)
        .map(|s| s.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| match (old.server(name), new.server(name)) {
            (Some(a), Some(b)) => diff_servers(a, b),
            (Some(a), None) => whole_server(a, Change::Removed),
            (None, Some(b)) => whole_server(b, Change::Added),
            (None, None) => unreachable!("name came from one side"),
        })
        .collect()
}

fn whole_server(server: &LockedServer, change: Change) -> ServerDiff {
    let (before, after) = match change {
        Change::Removed => (Some(server.server_digest), None),
        _ => (None, Some(server.server_digest)),
    };
    let tokens = match change {
        Change::Removed => Tokens {
            before: Some(server.total_tokens),
            after: None,
        },
        _ => Tokens {
            before: None,
            after: Some(server.total_tokens),
        },
    };
    ServerDiff {
        server: server.name.clone(),
        change: Some(change),
        before,
        after,
        tools: server
            .tools
            .iter()
            .map(|t| added_or_removed(t, change))
            .collect(),
        items: Vec::new(),
        instructions: None,
        coverage: Vec::new(),
        tokens,
        notes: Vec::new(),
        changes: Vec::new(),
    }
}

fn added_or_removed(tool: &LockedTool, change: Change) -> ToolDiff {
    let removed = change == Change::Removed;
    ToolDiff {
        name: tool.name.clone(),
        change,
        before: removed.then_some(tool.digest),
        after: (!removed).then_some(tool.digest),
        sections: Vec::new(),
        tokens: if removed {
            Tokens {
                before: Some(tool.tokens),
                after: None,
            }
        } else {
            Tokens {
                before: None,
                after: Some(tool.tokens),
            }
        },
    }
}

/// A tool on one side or both, matched by name.
pub enum ToolPair<'a> {
    Removed(&'a LockedTool),
    Added(&'a LockedTool),
    Both(&'a LockedTool, &'a LockedTool),
}

/// Matches two tool lists by name. Both are sorted by name (as entries keep them), so one
/// walk over both suffices.
pub fn pair_tools<'a>(old: &'a [LockedTool], new: &'a [LockedTool]) -> Vec<ToolPair<'a>> {
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let ordering = match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) => a.name.cmp(&b.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ordering {
            std::cmp::Ordering::Less => {
                out.push(ToolPair::Removed(&old[i]));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(ToolPair::Added(&new[j]));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(ToolPair::Both(&old[i], &new[j]));
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Compares two entries of the same server.
pub fn diff_servers(old: &LockedServer, new: &LockedServer) -> ServerDiff {
    let mut tools = Vec::new();
    for pair in pair_tools(&old.tools, &new.tools) {
        match pair {
            ToolPair::Removed(a) => tools.push(added_or_removed(a, Change::Removed)),
            ToolPair::Added(b) => tools.push(added_or_removed(b, Change::Added)),
            ToolPair::Both(a, b) if a.digest != b.digest => tools.push(diff_tool(a, b)),
            ToolPair::Both(..) => {}
        }
    }

    let (old_cover, new_cover) = (Coverage::of(old), Coverage::of(new));
    let common = old_cover.common(new_cover);
    let mut items = Vec::new();
    if common.prompts {
        items.extend(diff_items(
            ItemKind::Prompt,
            old.prompts
                .iter()
                .map(|p| (p.name.as_str(), p.digest, p.content.as_str()))
                .collect(),
            new.prompts
                .iter()
                .map(|p| (p.name.as_str(), p.digest, p.content.as_str()))
                .collect(),
        ));
    }
    if common.resource_templates {
        items.extend(diff_items(
            ItemKind::ResourceTemplate,
            old.resource_templates
                .iter()
                .map(|t| (t.uri_template.as_str(), t.digest, t.content.as_str()))
                .collect(),
            new.resource_templates
                .iter()
                .map(|t| (t.uri_template.as_str(), t.digest, t.content.as_str()))
                .collect(),
        ));
    }

    let instructions = (common.instructions && old.instructions_digest != new.instructions_digest)
        .then(|| {
            field_change(
                "instructions",
                old.instructions.as_deref(),
                new.instructions.as_deref(),
            )
        });

    // A part one side did not capture is not compared, and said so: a tools-only capture is
    // not evidence that the prompts were removed.
    let mut coverage = Vec::new();
    for ((what, before), (_, after)) in old_cover.parts().into_iter().zip(new_cover.parts()) {
        if before != after {
            let side = if before { "before" } else { "after" };
            coverage.push(format!(
                "{what}: captured only on the {side} side, so not compared"
            ));
        }
    }

    let mut notes = Vec::new();
    if common.instructions && old.server_info != new.server_info {
        notes.push(format!(
            "serverInfo: {} -> {}",
            old.server_info.as_deref().unwrap_or("(none)"),
            new.server_info.as_deref().unwrap_or("(none)")
        ));
    }
    if common.instructions && old.protocol_version != new.protocol_version {
        notes.push(format!(
            "protocol version: {} -> {}",
            old.protocol_version.as_deref().unwrap_or("(unknown)"),
            new.protocol_version.as_deref().unwrap_or("(unknown)")
        ));
    }
    if let (Some(before), Some(after)) = (&old.authorization, &new.authorization)
        && before != after
    {
        notes.push(format!("authorization demanded: {before} -> {after}"));
    }
    let changed = if common == old_cover && common == new_cover {
        old.server_digest != new.server_digest
    } else {
        projected_server_digest(old, common) != projected_server_digest(new, common)
    };
    let restated = !changed
        && old.tools.len() == new.tools.len()
        && old
            .tools
            .iter()
            .zip(&new.tools)
            .any(|(a, b)| a.digest == b.digest && a.annotations != b.annotations);
    if restated {
        notes.push(
            "the content differs only in ways no client can observe (e.g. an annotation hint stated at its default); \
             relock to refresh the stored form"
                .to_string(),
        );
    }

    ServerDiff {
        server: new.name.clone(),
        change: changed.then_some(Change::Changed),
        before: Some(old.server_digest),
        after: Some(new.server_digest),
        tools,
        items,
        instructions,
        coverage,
        tokens: Tokens {
            before: Some(old.total_tokens),
            after: Some(new.total_tokens),
        },
        notes,
        changes: Vec::new(),
    }
}

fn diff_items(
    kind: ItemKind,
    old: Vec<(&str, Digest, &str)>,
    new: Vec<(&str, Digest, &str)>,
) -> Vec<ItemDiff> {
    let mut out = Vec::new();
    for (key, digest, content) in &old {
        match new.iter().find(|(k, ..)| k == key) {
            None => out.push(ItemDiff {
                kind,
                key: key.to_string(),
                change: Change::Removed,
                before: Some(*digest),
                after: None,
                unified: None,
            }),
            Some((_, d, c)) if d != digest => out.push(ItemDiff {
                kind,
                key: key.to_string(),
                change: Change::Changed,
                before: Some(*digest),
                after: Some(*d),
                unified: Some(unified(content, c)),
            }),
            Some(_) => {}
        }
    }
    for (key, digest, _) in &new {
        if !old.iter().any(|(k, ..)| k == key) {
            out.push(ItemDiff {
                kind,
                key: key.to_string(),
                change: Change::Added,
                before: None,
                after: Some(*digest),
                unified: None,
            });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// Field-level differences of one tool present on both sides.
fn diff_tool(old: &LockedTool, new: &LockedTool) -> ToolDiff {
    // Stored content was verified before any diff is made, so it parses.
    let a = tool_object(old).unwrap_or_default();
    let b = tool_object(new).unwrap_or_default();
    let mut sections = Vec::new();
    for section in Section::ALL {
        let (before, after) = match section {
            Section::Surface => (old.surface, new.surface),
            Section::Behavior => (old.behavior, new.behavior),
            Section::Permissions => (old.permissions, new.permissions),
            Section::Economy => (old.economy, new.economy),
        };
        if before == after {
            continue;
        }
        let fields = match section {
            Section::Surface => SURFACE_KEYS
                .iter()
                .filter_map(|k| value_change(k, a.get(*k), b.get(*k)))
                .collect(),
            Section::Behavior => behavior_changes(&a, &b),
            Section::Permissions => PERMISSION_HINTS
                .iter()
                .filter_map(|(hint, default)| {
                    let x = effective_hint(&a, hint, *default);
                    let y = effective_hint(&b, hint, *default);
                    (x != y).then(|| FieldChange {
                        field: format!("annotations.{hint}"),
                        before: Some(json::canonical(&x)),
                        after: Some(json::canonical(&y)),
                        unified: None,
                    })
                })
                .collect(),
            Section::Economy => {
                let mut fields = Vec::new();
                for (name, x, y) in [
                    ("tokens", old.tokens, new.tokens),
                    ("bytes", old.bytes, new.bytes),
                ] {
                    if x != y {
                        fields.push(FieldChange {
                            field: name.to_string(),
                            before: Some(x.to_string()),
                            after: Some(y.to_string()),
                            unified: None,
                        });
                    }
                }
                fields
            }
        };
        sections.push(SectionChange {
            section,
            before,
            after,
            fields,
        });
    }
    ToolDiff {
        name: new.name.clone(),
        change: Change::Changed,
        before: Some(old.digest),
        after: Some(new.digest),
        sections,
        tokens: Tokens {
            before: Some(old.tokens),
            after: Some(new.tokens),
        },
    }
}

fn effective_hint(tool: &Map<String, Value>, hint: &str, default: bool) -> Value {
    tool.get("annotations")
        .and_then(Value::as_object)
        .and_then(|a| a.get(hint))
        .cloned()
        .unwrap_or(Value::Bool(default))
}

fn behavior_changes(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<FieldChange> {
    let mut keys: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| !SURFACE_KEYS.contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        if key == "annotations" {
            let rest = |m: &Map<String, Value>| -> Option<Value> {
                match m.get("annotations") {
                    Some(Value::Object(o)) => {
                        let kept: Map<String, Value> = o
                            .iter()
                            .filter(|(k, _)| !PERMISSION_HINTS.iter().any(|(h, _)| h == k))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        (!kept.is_empty()).then_some(Value::Object(kept))
                    }
                    other => other.cloned(),
                }
            };
            out.extend(value_change(
                "annotations",
                rest(a).as_ref(),
                rest(b).as_ref(),
            ));
        } else {
            out.extend(value_change(key, a.get(key), b.get(key)));
        }
    }
    out
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => json::canonical_pretty(other),
    }
}

fn value_change(field: &str, before: Option<&Value>, after: Option<&Value>) -> Option<FieldChange> {
    if before == after {
        return None;
    }
    // A string that became a non-string (or back) must not look unchanged in text form.
    let text = |v: Option<&Value>, other: Option<&Value>| {
        v.map(|v| match (v, other) {
            (Value::String(_), Some(Value::String(_)) | None) => value_text(v),
            _ => json::canonical_pretty(v),
        })
    };
    let before_text = text(before, after);
    let after_text = text(after, before);
    Some(field_change(
        field,
        before_text.as_deref(),
        after_text.as_deref(),
    ))
}

fn field_change(field: &str, before: Option<&str>, after: Option<&str>) -> FieldChange {
    let multiline =
        before.is_some_and(|s| s.contains('\n')) || after.is_some_and(|s| s.contains('\n'));
    FieldChange {
        field: field.to_string(),
        before: before.map(str::to_string),
        after: after.map(str::to_string),
        unified: multiline.then(|| unified(before.unwrap_or(""), after.unwrap_or(""))),
    }
}

/// A unified diff of two texts, hunks only (the caller names the sides).
pub fn unified(before: &str, after: &str) -> String {
    let mut before = before.to_string();
    let mut after = after.to_string();
    // Compare whole lines: a missing final newline would otherwise show as a change.
    if !before.ends_with('\n') {
        before.push('\n');
    }
    if !after.ends_with('\n') {
        after.push('\n');
    }
    let diff = similar::TextDiff::from_lines(&before, &after);
    let mut out = String::new();
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&hunk.to_string());
    }
    out
}
