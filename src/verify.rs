//! Self-verification of a lockfile: every digest recomputed from the content stored beside it.
//!
//! A hand-edited or corrupted entry is named with its line. `check` and `diff` run the same
//! verification (without recounting tokens, which only `verify` does) and refuse to compare
//! against a lockfile that fails it.

use std::borrow::Cow;

use serde::Serialize;

use crate::build::{BuiltItem, server_digest, tool_object};
use crate::contract::{
    self, Digest, Economy, ItemKind, ToolDigests, ToolPieces, canonical_sections,
    catalog_revision_from_entries,
};
use crate::json;
use crate::lockfile::{LockFile, LockedServer, LockedTool, ReadLockFile};
use crate::tokens;

/// One problem found in a lockfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// 1-based line of the entry in the lockfile (0 when unknown).
    pub line: usize,
    /// The server entry, when the problem is inside one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// `tool NAME`, `prompt NAME` or `resource template URI`, when the problem is in one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Stable code: `digest-mismatch`, `invalid-content`, `count-mismatch`, `token-mismatch`,
    /// `order`, `duplicate`, `not-canonical`.
    pub code: &'static str,
    pub message: String,
}

/// How thorough to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Every digest from stored content; token counts taken as stored.
    Digests,
    /// Also recount every tool's tokens with the tokenizer.
    Full,
}

/// Verifies a whole lockfile.
pub fn verify_lockfile(read: &ReadLockFile, depth: Depth) -> Vec<Finding> {
    let mut findings = Vec::new();
    let lockfile: &LockFile = &read.lockfile;
    for pair in lockfile.servers.windows(2) {
        if pair[0].name >= pair[1].name {
            findings.push(Finding {
                line: pair[1].line,
                server: Some(pair[1].name.clone()),
                entry: None,
                code: if pair[0].name == pair[1].name {
                    "duplicate"
                } else {
                    "order"
                },
                message: if pair[0].name == pair[1].name {
                    format!("server {:?} appears twice", pair[1].name)
                } else {
                    format!(
                        "server {:?} is out of order (servers are sorted by name)",
                        pair[1].name
                    )
                },
            });
        }
    }
    for server in &lockfile.servers {
        findings.extend(verify_server(server, depth));
    }
    if findings.is_empty() && !read.canonical {
        findings.push(Finding {
            line: 0,
            server: None,
            entry: None,
            code: "not-canonical",
            message: format!(
                "{} is valid but not in the form catalock writes (was it edited by hand?)",
                read.path
            ),
        });
    }
    findings
}

/// What verifying one tool found.
#[derive(Debug, Default)]
pub struct ToolCheck {
    pub findings: Vec<Finding>,
    /// The stored digests all match the content (formatting aside).
    pub sound: bool,
    /// The tool's `ram-tool-catalog-v1` entry (computed at [`Depth::Full`] only).
    pub catalog_entry: Option<String>,
}

/// The pieces of a stored tool, from its canonical text: schemas are not parsed again, only
/// stripped of layout (see [`json::strip_pretty`]); `annotations` and `other` are parsed.
fn stored_pieces(tool: &LockedTool) -> Result<ToolPieces<'_>, String> {
    let mut pieces = ToolPieces::default();
    let string = |key: &'static str, value: &str, pieces: &mut ToolPieces<'_>| {
        let mut text = String::with_capacity(value.len() + 2);
        json::write_string(value, &mut text);
        pieces.members.push((Cow::Borrowed(key), Cow::Owned(text)));
    };
    string("name", &tool.name, &mut pieces);
    if let Some(t) = &tool.title {
        string("title", t, &mut pieces);
    }
    if let Some(d) = &tool.description {
        string("description", d, &mut pieces);
    }
    for (key, text) in [
        ("inputSchema", &tool.input_schema),
        ("outputSchema", &tool.output_schema),
        ("icons", &tool.icons),
    ] {
        if let Some(text) = text {
            let mut compact = String::with_capacity(text.len());
            json::strip_pretty(text, &mut compact);
            pieces
                .members
                .push((Cow::Borrowed(key), Cow::Owned(compact)));
        }
    }
    if let Some(text) = &tool.annotations {
        let value =
            json::parse_strict(text).map_err(|e| format!("annotations is not valid JSON: {e}"))?;
        pieces.annotations = Some(Cow::Owned(value));
    }
    if let Some(text) = &tool.other {
        match json::parse_strict(text).map_err(|e| format!("other is not valid JSON: {e}"))? {
            serde_json::Value::Object(other) => {
                for (key, value) in other {
                    let taken =
                        key == "annotations" || pieces.members.iter().any(|(k, _)| *k == key);
                    if taken {
                        return Err(format!(
                            "other repeats key {key:?}, which has a field of its own"
                        ));
                    }
                    pieces
                        .members
                        .push((Cow::Owned(key), Cow::Owned(json::canonical(&value))));
                }
            }
            v => {
                return Err(format!(
                    "other is {}, not a JSON object",
                    contract::json_kind(&v)
                ));
            }
        }
    }
    Ok(pieces)
}

/// Verifies one stored tool against its digests.
pub fn verify_tool(server: &str, tool: &LockedTool, depth: Depth) -> ToolCheck {
    let mut check = ToolCheck::default();
    let finding = |code: &'static str, message: String| Finding {
        line: tool.line,
        server: Some(server.to_string()),
        entry: Some(format!("tool {}", tool.name)),
        code,
        message,
    };
    let pieces = match stored_pieces(tool) {
        Ok(p) => p,
        Err(why) => {
            check.findings.push(finding("invalid-content", why));
            return check;
        }
    };
    let stored_economy = Economy {
        tokens: tool.tokens,
        bytes: tool.bytes,
    };
    let mut canonical = pieces.sections();
    let mut digests = canonical.digests(stored_economy);
    let content_matches = |d: &ToolDigests| {
        d.surface == tool.surface
            && d.behavior == tool.behavior
            && d.permissions == tool.permissions
    };
    if !content_matches(&digests) {
        // Stripping layout gives canonical JSON only if the stored text was canonical; parse
        // it to tell a reformatted entry from a changed one.
        match tool_object(tool) {
            Ok(map) => {
                canonical = canonical_sections(&map);
                digests = canonical.digests(stored_economy);
                if content_matches(&digests) {
                    check.findings.push(finding(
                        "not-canonical",
                        "stored JSON is not in canonical form".into(),
                    ));
                }
            }
            Err(why) => {
                check.findings.push(finding("invalid-content", why));
                return check;
            }
        }
    }
    let mut mismatched: Vec<String> = Vec::new();
    for (name, stored, computed) in [
        ("surface", tool.surface, digests.surface),
        ("behavior", tool.behavior, digests.behavior),
        ("permissions", tool.permissions, digests.permissions),
        ("economy", tool.economy, digests.economy),
        ("digest", tool.digest, digests.tool),
    ] {
        if stored != computed {
            mismatched.push(format!(
                "{name} is {} but the content gives {}",
                stored.short(),
                computed.short()
            ));
        }
    }
    check.sound = mismatched.is_empty();
    if !mismatched.is_empty() {
        check
            .findings
            .push(finding("digest-mismatch", mismatched.join("; ")));
    }
    let bytes = canonical.model_view.len() as u64;
    if bytes != tool.bytes {
        check.sound = false;
        check.findings.push(finding(
            "count-mismatch",
            format!(
                "bytes is {} but the model view has {bytes} bytes",
                tool.bytes
            ),
        ));
    }
    if depth == Depth::Full {
        let counted = tokens::count(&canonical.model_view);
        if counted != tool.tokens {
            check.findings.push(finding(
                "token-mismatch",
                format!(
                    "tokens is {} but {} counts {counted}",
                    tool.tokens,
                    contract::TOKENIZER
                ),
            ));
        }
        for (field, text) in [
            ("annotations", &tool.annotations),
            ("other", &tool.other),
            ("input-schema", &tool.input_schema),
            ("output-schema", &tool.output_schema),
            ("icons", &tool.icons),
        ] {
            let Some(text) = text else { continue };
            // The digests were checked on the text without its layout; only a parse shows
            // whether the layout itself is sound (a newline inside `false` strips away).
            match json::parse_strict(text) {
                Ok(value) if json::canonical_pretty(&value) != *text => {
                    check.findings.push(finding(
                        "not-canonical",
                        format!("{field} is not pretty canonical JSON"),
                    ));
                }
                Ok(_) => {}
                Err(e) => {
                    check.sound = false;
                    check.findings.push(finding(
                        "invalid-content",
                        format!("{field} is not valid JSON: {e}"),
                    ));
                }
            }
        }
        let mut entry = String::new();
        pieces.catalog_entry(&mut entry);
        check.catalog_entry = Some(entry);
    }
    check
}

/// Verifies one server entry.
pub fn verify_server(server: &LockedServer, depth: Depth) -> Vec<Finding> {
    let checks = crate::build::process_in_parallel(&server.tools, |_, tool| {
        Ok(verify_tool(&server.name, tool, depth))
    })
    .expect("verify_tool does not fail");
    let sound = checks.iter().all(|c| c.sound);
    let mut out: Vec<Finding> = Vec::new();
    let mut entries = Vec::with_capacity(checks.len());
    for check in checks {
        out.extend(check.findings);
        entries.extend(check.catalog_entry);
    }
    let revision_input = (depth == Depth::Full && sound).then_some(entries);
    out.extend(verify_totals(server, sound, revision_input));
    out
}

/// Checks of a server entry as a whole, once its tools were verified (`tools_sound`). The
/// catalog revision is checked when the tools' catalog entries are given.
pub fn verify_totals(
    server: &LockedServer,
    tools_sound: bool,
    catalog_entries: Option<Vec<String>>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = |line: usize, entry: Option<String>, code: &'static str, message: String| Finding {
        line,
        server: Some(server.name.clone()),
        entry,
        code,
        message,
    };
    if crate::lockfile::validate_server_name(&server.name).is_err() {
        out.push(at(
            server.line,
            None,
            "invalid-content",
            format!(
                "server name {:?} is not 1-64 letters, digits, '.', '_' or '-'",
                server.name
            ),
        ));
    }
    let mut names_ok = true;
    for pair in server.tools.windows(2) {
        if pair[0].name >= pair[1].name {
            names_ok = false;
            let dup = pair[0].name == pair[1].name;
            out.push(at(
                pair[1].line,
                Some(format!("tool {}", pair[1].name)),
                if dup { "duplicate" } else { "order" },
                if dup {
                    format!("tool {:?} appears twice", pair[1].name)
                } else {
                    format!(
                        "tool {:?} is out of order (tools are sorted by name)",
                        pair[1].name
                    )
                },
            ));
        }
    }

    let prompts = verify_items(server, ItemKind::Prompt, &mut out);
    let templates = verify_items(server, ItemKind::ResourceTemplate, &mut out);

    if server.tool_count != server.tools.len() as u64 {
        out.push(at(
            server.line,
            None,
            "count-mismatch",
            format!(
                "tool-count is {} but {} tools are listed",
                server.tool_count,
                server.tools.len()
            ),
        ));
    }
    let total: u64 = server.tools.iter().map(|t| t.tokens).sum();
    if server.total_tokens != total {
        out.push(at(
            server.line,
            None,
            "count-mismatch",
            format!(
                "total-tokens is {} but the tools add up to {total}",
                server.total_tokens
            ),
        ));
    }
    for (field, count, listed) in [
        ("prompt-count", server.prompt_count, server.prompts.len()),
        (
            "resource-template-count",
            server.resource_template_count,
            server.resource_templates.len(),
        ),
    ] {
        match count {
            Some(n) if n != listed as u64 => out.push(at(
                server.line,
                None,
                "count-mismatch",
                format!("{field} is {n} but {listed} are listed"),
            )),
            None if listed > 0 => out.push(at(
                server.line,
                None,
                "count-mismatch",
                format!("{field} is missing but {listed} are listed"),
            )),
            _ => {}
        }
    }
    let instructions = match (&server.instructions, server.instructions_digest) {
        (Some(text), Some(stored)) => {
            let computed = contract::instructions_digest(text);
            if computed != stored {
                out.push(at(
                    server.line,
                    None,
                    "digest-mismatch",
                    format!(
                        "instructions-digest is {} but the instructions give {}",
                        stored.short(),
                        computed.short()
                    ),
                ));
            }
            Some(computed)
        }
        (None, None) => None,
        (Some(_), None) => {
            out.push(at(
                server.line,
                None,
                "invalid-content",
                "instructions without instructions-digest".into(),
            ));
            None
        }
        (None, Some(d)) => {
            out.push(at(
                server.line,
                None,
                "invalid-content",
                "instructions-digest without instructions".into(),
            ));
            Some(d)
        }
    };
    if let Some(info) = &server.server_info {
        match json::parse_strict(info) {
            Ok(v) if json::canonical(&v) == *info => {}
            Ok(_) => out.push(at(
                server.line,
                None,
                "not-canonical",
                "server-info is not compact canonical JSON".into(),
            )),
            Err(e) => out.push(at(
                server.line,
                None,
                "invalid-content",
                format!("server-info is not valid JSON: {e}"),
            )),
        }
    }

    // Whole-server digests only mean something once every part checked out.
    if tools_sound && names_ok {
        if let Some(entries) = catalog_entries {
            let revision = catalog_revision_from_entries(entries.iter().map(String::as_str));
            if revision != server.catalog_revision {
                out.push(at(
                    server.line,
                    None,
                    "digest-mismatch",
                    format!(
                        "catalog-revision is {} but the tools give {}",
                        server.catalog_revision.short(),
                        revision.short()
                    ),
                ));
            }
        }
        let prompt_count_known = server.prompt_count.is_some();
        let template_count_known = server.resource_template_count.is_some();
        let digest = server_digest(
            &server.tools,
            instructions,
            prompt_count_known.then_some(prompts.as_slice()),
            template_count_known.then_some(templates.as_slice()),
        );
        if digest != server.server_digest {
            out.push(at(
                server.line,
                None,
                "digest-mismatch",
                format!(
                    "server-digest is {} but the entry gives {}",
                    server.server_digest.short(),
                    digest.short()
                ),
            ));
        }
    }
    out
}

fn verify_items(server: &LockedServer, kind: ItemKind, out: &mut Vec<Finding>) -> Vec<BuiltItem> {
    let entries: Vec<(&str, Digest, &str, usize)> = match kind {
        ItemKind::Prompt => server
            .prompts
            .iter()
            .map(|p| (p.name.as_str(), p.digest, p.content.as_str(), p.line))
            .collect(),
        ItemKind::ResourceTemplate => server
            .resource_templates
            .iter()
            .map(|t| {
                (
                    t.uri_template.as_str(),
                    t.digest,
                    t.content.as_str(),
                    t.line,
                )
            })
            .collect(),
    };
    let mut built = Vec::with_capacity(entries.len());
    for (i, (key, stored, content, line)) in entries.iter().enumerate() {
        let finding = |code: &'static str, message: String| Finding {
            line: *line,
            server: Some(server.name.clone()),
            entry: Some(format!("{} {key}", kind.noun())),
            code,
            message,
        };
        if i > 0 && entries[i - 1].0 >= *key {
            out.push(finding(
                "order",
                format!(
                    "{} {key:?} is out of order or repeated (sorted by {})",
                    kind.noun(),
                    kind.key_field()
                ),
            ));
        }
        let value = match json::parse_strict(content) {
            Ok(v) => v,
            Err(e) => {
                out.push(finding(
                    "invalid-content",
                    format!("content is not valid JSON: {e}"),
                ));
                continue;
            }
        };
        if value.get(kind.key_field()).and_then(|v| v.as_str()) != Some(key) {
            out.push(finding(
                "invalid-content",
                format!("content's {:?} is not {key:?}", kind.key_field()),
            ));
        }
        let computed = contract::item_digest(kind, &value);
        if computed != *stored {
            out.push(finding(
                "digest-mismatch",
                format!(
                    "digest is {} but the content gives {}",
                    stored.short(),
                    computed.short()
                ),
            ));
        }
        if json::canonical_pretty(&value) != *content {
            out.push(finding(
                "not-canonical",
                "content is not pretty canonical JSON".into(),
            ));
        }
        built.push(BuiltItem {
            key: key.to_string(),
            digest: computed,
            content: content.to_string(),
        });
    }
    built
}

/// Reads and verifies a lockfile for comparison, without holding its content: each tool is
/// verified as it streams in and kept only as digests and annotations. Token counts are taken
/// as stored, and the catalog revision is not checked (`catalock verify` checks both).
pub fn read_verified_digests(
    path: &std::path::Path,
) -> Result<(ReadLockFile, Vec<Finding>), crate::error::Error> {
    let mut findings = Vec::new();
    let mut sound: Vec<(String, bool)> = Vec::new();
    let mut read = crate::lockfile::read_lockfile_streaming(path, &mut |server, tool| {
        let check = verify_tool(&server.name, &tool, Depth::Digests);
        findings.extend(check.findings);
        match sound.last_mut() {
            Some((name, ok)) if *name == server.name => *ok &= check.sound,
            _ => sound.push((server.name.clone(), check.sound)),
        }
        Some(skeleton_of(tool))
    })?;
    for server in &mut read.lockfile.servers {
        let tools_sound = sound
            .iter()
            .find(|(n, _)| *n == server.name)
            .is_none_or(|(_, ok)| *ok);
        findings.extend(verify_totals(server, tools_sound, None));
    }
    Ok((read, findings))
}

/// A tool reduced to what a comparison needs: digests, counts and annotations.
pub fn skeleton_of(tool: LockedTool) -> LockedTool {
    LockedTool {
        title: None,
        description: None,
        other: None,
        input_schema: None,
        output_schema: None,
        icons: None,
        ..tool
    }
}
