//! Self-verification of a lockfile: every digest recomputed from the content stored beside it.
//!
//! A hand-edited or corrupted entry is named with its line. `check` and `diff` run the same
//! verification (without recounting tokens, which only `verify` does) and refuse to compare
//! against a lockfile that fails it.

use serde::Serialize;

use crate::build::{BuiltItem, server_digest, tool_object};
use crate::contract::{
    self, Digest, Economy, ItemKind, canonical_sections, catalog_entry,
    catalog_revision_from_entries,
};
use crate::json;
use crate::lockfile::{LockFile, LockedServer, ReadLockFile};
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

/// Verifies one server entry.
pub fn verify_server(server: &LockedServer, depth: Depth) -> Vec<Finding> {
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
    let mut catalog_entries: Vec<String> = Vec::with_capacity(server.tools.len());
    let mut tools_ok = true;
    for (i, tool) in server.tools.iter().enumerate() {
        let entry = Some(format!("tool {}", tool.name));
        if i > 0 && server.tools[i - 1].name >= tool.name {
            tools_ok = false;
            let dup = server.tools[i - 1].name == tool.name;
            out.push(at(
                tool.line,
                entry.clone(),
                if dup { "duplicate" } else { "order" },
                if dup {
                    format!("tool {:?} appears twice", tool.name)
                } else {
                    format!(
                        "tool {:?} is out of order (tools are sorted by name)",
                        tool.name
                    )
                },
            ));
        }
        let map = match tool_object(tool) {
            Ok(map) => map,
            Err(why) => {
                tools_ok = false;
                out.push(at(tool.line, entry, "invalid-content", why));
                continue;
            }
        };
        let canonical = canonical_sections(&map);
        let bytes = canonical.model_view.len() as u64;
        let stored_economy = Economy {
            tokens: tool.tokens,
            bytes: tool.bytes,
        };
        let digests = canonical.digests(stored_economy);
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
        if !mismatched.is_empty() {
            tools_ok = false;
            out.push(at(
                tool.line,
                entry.clone(),
                "digest-mismatch",
                mismatched.join("; "),
            ));
        }
        if bytes != tool.bytes {
            out.push(at(
                tool.line,
                entry.clone(),
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
                out.push(at(
                    tool.line,
                    entry.clone(),
                    "token-mismatch",
                    format!(
                        "tokens is {} but {} counts {counted}",
                        tool.tokens,
                        contract::TOKENIZER
                    ),
                ));
            }
        }
        for (field, text) in [
            ("annotations", &tool.annotations),
            ("other", &tool.other),
            ("input-schema", &tool.input_schema),
            ("output-schema", &tool.output_schema),
            ("icons", &tool.icons),
        ] {
            if let Some(text) = text {
                if let Ok(value) = json::parse_strict(text) {
                    if json::canonical_pretty(&value) != *text {
                        out.push(at(
                            tool.line,
                            entry.clone(),
                            "not-canonical",
                            format!("{field} is not pretty canonical JSON"),
                        ));
                    }
                }
            }
        }
        let mut e = String::new();
        catalog_entry(&map, &mut e);
        catalog_entries.push(e);
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
    if tools_ok {
        let revision = catalog_revision_from_entries(catalog_entries.iter().map(String::as_str));
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
