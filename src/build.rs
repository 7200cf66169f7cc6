//! From a capture to a locked server entry: parse each item, canonicalize, digest, count.
//!
//! Tools are processed on every core in chunks; each is parsed on its own from the capture's
//! text, so memory holds the text once plus one tool per worker. Token counts are reused from
//! the previous entry when the surface digest is unchanged: the count depends only on the
//! surface (see `contract`), so it cannot have changed.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::capture::{Capture, RawItem};
use crate::contract::{
    self, Digest, Economy, ItemKind, ServerDigestInput, ToolDigests, ToolPieces, as_named_object,
    catalog_revision_from_entries,
};
use crate::error::Error;
use crate::json;
use crate::lockfile::{LockedPrompt, LockedResourceTemplate, LockedServer, LockedTool};
use crate::tokens;

/// What to build and how.
pub struct BuildOptions<'a> {
    pub name: String,
    /// The lockfile `source` description.
    pub source: String,
    /// The entry being replaced or compared with: its token counts are reused.
    pub previous: Option<&'a LockedServer>,
    pub detail: Detail,
}

/// How much of each tool to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything the lockfile stores.
    Full,
    /// Digests and annotations only, for a fast comparison: no content is rendered, tokens
    /// are not counted (0 unless reused from `previous`), and `catalog-revision` is not
    /// computed (zero). Never written to a lockfile.
    Skeleton,
}

/// Builds the lockfile entry of the server a capture describes.
pub fn build_server(capture: &Capture, options: &BuildOptions<'_>) -> Result<LockedServer, Error> {
    let items = capture.tools.as_deref().unwrap_or(&[]);
    let reuse: HashMap<&str, (Digest, u64, u64)> = options
        .previous
        .map(|p| {
            p.tools
                .iter()
                .map(|t| (t.name.as_str(), (t.surface, t.tokens, t.bytes)))
                .collect()
        })
        .unwrap_or_default();

    let mut built = process_in_parallel(items, |index, item| {
        build_tool(capture, index, item, &reuse, options.detail)
    })?;
    built.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
    if let Some(pair) = built.windows(2).find(|w| w[0].tool.name == w[1].tool.name) {
        return Err(Error::input(
            format!(
                "duplicate tool name {:?}: at {} and at {}",
                pair[0].tool.name,
                capture.locate(&pair[0].item),
                capture.locate(&pair[1].item)
            ),
            "a server must list each tool once; fix the capture or the server",
        ));
    }

    let catalog_revision = match options.detail {
        Detail::Full => {
            catalog_revision_from_entries(built.iter().map(|b| b.catalog_entry.as_str()))
        }
        Detail::Skeleton => Digest([0; 32]),
    };
    let prompts = build_items(capture, ItemKind::Prompt)?;
    let templates = build_items(capture, ItemKind::ResourceTemplate)?;
    let instructions = capture.server.instructions.clone();
    let instructions_digest = instructions.as_deref().map(contract::instructions_digest);

    let tools: Vec<LockedTool> = built.into_iter().map(|b| b.tool).collect();
    let server_digest = server_digest(
        &tools,
        instructions_digest,
        prompts.as_deref(),
        templates.as_deref(),
    );
    let prompt_list: Vec<LockedPrompt> = prompts
        .unwrap_or_default()
        .into_iter()
        .map(|i| LockedPrompt {
            name: i.key,
            digest: i.digest,
            content: i.content,
            line: 0,
        })
        .collect();
    let template_list: Vec<LockedResourceTemplate> = templates
        .as_ref()
        .map(|list| {
            list.iter()
                .map(|i| LockedResourceTemplate {
                    uri_template: i.key.clone(),
                    digest: i.digest,
                    content: i.content.clone(),
                    line: 0,
                })
                .collect()
        })
        .unwrap_or_default();
    let origin = capture.origin.as_ref();
    Ok(LockedServer {
        name: options.name.clone(),
        source: options.source.clone(),
        transport: origin.map(|o| o.transport.to_string()),
        command: origin.and_then(|o| o.command.clone()),
        args: origin.map(|o| o.args.clone()).unwrap_or_default(),
        url: origin.and_then(|o| o.url.clone()),
        era: origin.and_then(|o| o.era).map(|e| e.name().to_string()),
        client_info: origin.map(|o| json::canonical(&o.client.info)),
        client_capabilities: origin.map(|o| json::canonical(&o.client.capabilities)),
        authorization: origin
            .and_then(|o| o.authorization.as_ref())
            .map(json::canonical),
        protocol_version: capture.server.protocol_version.clone(),
        server_info: capture.server.server_info.as_ref().map(json::canonical),
        previous_versions: previous_versions(capture, options.previous),
        server_digest,
        catalog_revision,
        tool_count: tools.len() as u64,
        total_tokens: tools.iter().map(|t| t.tokens).sum(),
        prompt_count: capture.prompts.as_ref().map(|p| p.len() as u64),
        resource_template_count: templates.as_ref().map(|t| t.len() as u64),
        instructions_digest,
        instructions,
        prompts: prompt_list,
        resource_templates: template_list,
        tools,
        line: 0,
    })
}

/// The server digest of an entry's tools and server-level contract.
pub fn server_digest(
    tools: &[LockedTool],
    instructions: Option<Digest>,
    prompts: Option<&[BuiltItem]>,
    templates: Option<&[BuiltItem]>,
) -> Digest {
    let tool_pairs: Vec<(&str, Digest)> =
        tools.iter().map(|t| (t.name.as_str(), t.digest)).collect();
    let prompt_pairs = item_pairs(prompts);
    let template_pairs = item_pairs(templates);
    ServerDigestInput {
        tools: &tool_pairs,
        instructions,
        prompts: prompt_pairs.as_deref(),
        resource_templates: template_pairs.as_deref(),
    }
    .digest()
}

/// Which server-level parts an entry covers. Captures may hold only `tools/list`; a part is
/// compared only when both sides cover it, so a partial capture never reads as a removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// A handshake (`initialize` / `server/discover`) result was seen, so absent instructions
    /// mean "none".
    pub instructions: bool,
    pub prompts: bool,
    pub resource_templates: bool,
}

impl Coverage {
    pub fn of(server: &LockedServer) -> Coverage {
        Coverage {
            instructions: server.protocol_version.is_some()
                || server.server_info.is_some()
                || server.instructions.is_some(),
            prompts: server.prompt_count.is_some(),
            resource_templates: server.resource_template_count.is_some(),
        }
    }

    /// Each part with its name, in report order.
    pub fn parts(self) -> [(&'static str, bool); 3] {
        [
            ("instructions (initialize result)", self.instructions),
            ("prompts", self.prompts),
            ("resource templates", self.resource_templates),
        ]
    }

    pub fn common(self, other: Coverage) -> Coverage {
        Coverage {
            instructions: self.instructions && other.instructions,
            prompts: self.prompts && other.prompts,
            resource_templates: self.resource_templates && other.resource_templates,
        }
    }
}

/// The server digest of an entry restricted to `coverage` (equal to `server-digest` when the
/// coverage is the entry's own).
pub fn projected_server_digest(server: &LockedServer, coverage: Coverage) -> Digest {
    let prompts: Vec<BuiltItem> = server
        .prompts
        .iter()
        .map(|p| BuiltItem {
            key: p.name.clone(),
            digest: p.digest,
            content: String::new(),
        })
        .collect();
    let templates: Vec<BuiltItem> = server
        .resource_templates
        .iter()
        .map(|t| BuiltItem {
            key: t.uri_template.clone(),
            digest: t.digest,
            content: String::new(),
        })
        .collect();
    let instructions = if coverage.instructions {
        server.instructions_digest
    } else {
        None
    };
    server_digest(
        &server.tools,
        instructions,
        coverage.prompts.then_some(prompts.as_slice()),
        coverage.resource_templates.then_some(templates.as_slice()),
    )
}

fn item_pairs(items: Option<&[BuiltItem]>) -> Option<Vec<(&str, Digest)>> {
    items.map(|list| list.iter().map(|i| (i.key.as_str(), i.digest)).collect())
}

struct BuiltTool {
    tool: LockedTool,
    catalog_entry: String,
    item: RawItem,
}

/// A digested prompt or resource template.
#[derive(Debug, Clone)]
pub struct BuiltItem {
    pub key: String,
    pub digest: Digest,
    pub content: String,
}

fn build_tool(
    capture: &Capture,
    index: usize,
    item: &RawItem,
    reuse: &HashMap<&str, (Digest, u64, u64)>,
    detail: Detail,
) -> Result<BuiltTool, Error> {
    if detail == Detail::Skeleton
        && let Some(built) = skeleton_from_text(capture, item)?
    {
        return Ok(built);
    }
    let value = capture.parse_item(item)?;
    let (map, name) = as_named_object(&value, "name").map_err(|why| {
        Error::input(
            format!("tool #{} at {} {why}", index + 1, capture.locate(item)),
            "every tools/list entry must be an object with a string \"name\"; fix the capture or the server",
        )
    })?;
    let pieces = ToolPieces::from_object(map);
    let canonical = pieces.sections();
    let surface = canonical.surface_digest();
    let bytes = canonical.model_view.len() as u64;
    let economy = match (reuse.get(name), detail) {
        (Some((previous, tokens, _)), _) if *previous == surface => Economy {
            tokens: *tokens,
            bytes,
        },
        (_, Detail::Full) => Economy {
            tokens: tokens::count(&canonical.model_view),
            bytes,
        },
        (_, Detail::Skeleton) => Economy { tokens: 0, bytes },
    };
    let digests = canonical.digests(economy);
    let mut entry = String::new();
    let tool = match detail {
        Detail::Full => {
            pieces.catalog_entry(&mut entry);
            locked_tool(name, map, &digests, economy)
        }
        Detail::Skeleton => {
            let mut tool = skeleton_tool(name, &digests, economy);
            tool.annotations = map.get("annotations").map(json::canonical_pretty);
            tool
        }
    };
    Ok(BuiltTool {
        tool,
        catalog_entry: entry,
        item: *item,
    })
}

/// The skeleton of a tool read straight from its text into canonical pieces (no JSON tree;
/// see [`json::canonical_members`]). `None` when the item is not an object with a string name:
/// the tree path then reports exactly what is wrong.
fn skeleton_from_text(capture: &Capture, item: &RawItem) -> Result<Option<BuiltTool>, Error> {
    let text = capture.text_of(item);
    if !text.starts_with('{') {
        return Ok(None);
    }
    let members = json::canonical_members(text).map_err(|e| capture.item_error(item, e))?;
    let Some(name) = members
        .iter()
        .find(|m| m.key == "name")
        .and_then(|m| serde_json::from_str::<String>(&m.canonical).ok())
    else {
        return Ok(None);
    };
    if name.is_empty() {
        return Ok(None);
    }
    let mut pieces = ToolPieces::default();
    for member in members {
        if member.key == "annotations" {
            let value = json::parse_strict(member.raw).map_err(|e| capture.item_error(item, e))?;
            pieces.annotations = Some(std::borrow::Cow::Owned(value));
        } else {
            pieces
                .members
                .push((member.key, std::borrow::Cow::Owned(member.canonical)));
        }
    }
    let canonical = pieces.sections();
    let economy = Economy {
        tokens: 0,
        bytes: canonical.model_view.len() as u64,
    };
    let digests = canonical.digests(economy);
    let mut tool = skeleton_tool(&name, &digests, economy);
    tool.annotations = pieces.annotations.as_deref().map(json::canonical_pretty);
    Ok(Some(BuiltTool {
        tool,
        catalog_entry: String::new(),
        item: *item,
    }))
}

fn skeleton_tool(name: &str, digests: &ToolDigests, economy: Economy) -> LockedTool {
    LockedTool {
        name: name.to_string(),
        digest: digests.tool,
        surface: digests.surface,
        behavior: digests.behavior,
        permissions: digests.permissions,
        economy: digests.economy,
        tokens: economy.tokens,
        bytes: economy.bytes,
        title: None,
        description: None,
        annotations: None,
        other: None,
        input_schema: None,
        output_schema: None,
        icons: None,
        line: 0,
    }
}

/// The lockfile record of a tool: digests plus content, split into readable fields.
pub fn locked_tool(
    name: &str,
    map: &Map<String, Value>,
    digests: &ToolDigests,
    economy: Economy,
) -> LockedTool {
    let mut tool = skeleton_tool(name, digests, economy);
    let mut other = Map::new();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("name", _) => {}
            ("title", Value::String(s)) => tool.title = Some(s.clone()),
            ("description", Value::String(s)) => tool.description = Some(s.clone()),
            ("annotations", v) => tool.annotations = Some(json::canonical_pretty(v)),
            ("inputSchema", v) => tool.input_schema = Some(json::canonical_pretty(v)),
            ("outputSchema", v) => tool.output_schema = Some(json::canonical_pretty(v)),
            ("icons", v) => tool.icons = Some(json::canonical_pretty(v)),
            _ => {
                other.insert(key.clone(), value.clone());
            }
        }
    }
    if !other.is_empty() {
        tool.other = Some(json::canonical_pretty(&Value::Object(other)));
    }
    tool
}

/// The tool object a lockfile record stands for (the inverse of [`locked_tool`]).
pub fn tool_object(tool: &LockedTool) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    map.insert("name".to_string(), Value::String(tool.name.clone()));
    if let Some(t) = &tool.title {
        map.insert("title".to_string(), Value::String(t.clone()));
    }
    if let Some(d) = &tool.description {
        map.insert("description".to_string(), Value::String(d.clone()));
    }
    for (field, key, text) in [
        ("annotations", "annotations", &tool.annotations),
        ("input-schema", "inputSchema", &tool.input_schema),
        ("output-schema", "outputSchema", &tool.output_schema),
        ("icons", "icons", &tool.icons),
    ] {
        if let Some(text) = text {
            let value =
                json::parse_strict(text).map_err(|e| format!("{field} is not valid JSON: {e}"))?;
            map.insert(key.to_string(), value);
        }
    }
    if let Some(text) = &tool.other {
        match json::parse_strict(text).map_err(|e| format!("other is not valid JSON: {e}"))? {
            Value::Object(other) => {
                for (key, value) in other {
                    if map.contains_key(&key) {
                        return Err(format!(
                            "other repeats key {key:?}, which has a field of its own"
                        ));
                    }
                    map.insert(key, value);
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
    Ok(map)
}

fn build_items(capture: &Capture, kind: ItemKind) -> Result<Option<Vec<BuiltItem>>, Error> {
    let Some(items) = capture.items(kind) else {
        return Ok(None);
    };
    let mut built = Vec::with_capacity(items.len());
    let mut places: Vec<&RawItem> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let value = capture.parse_item(item)?;
        let (_, key) = as_named_object(&value, kind.key_field()).map_err(|why| {
            let why = why
                .to_string()
                .replace("\"name\"", &format!("{:?}", kind.key_field()));
            Error::input(
                format!(
                    "{} #{} at {} {why}",
                    kind.noun(),
                    index + 1,
                    capture.locate(item)
                ),
                format!(
                    "every {} entry must be an object with a string {:?}",
                    kind.list_field(),
                    kind.key_field()
                ),
            )
        })?;
        built.push(BuiltItem {
            key: key.to_string(),
            digest: contract::item_digest(kind, &value),
            content: json::canonical_pretty(&value),
        });
        places.push(item);
    }
    let mut order: Vec<usize> = (0..built.len()).collect();
    order.sort_by(|a, b| built[*a].key.cmp(&built[*b].key));
    if let Some(pair) = order
        .windows(2)
        .find(|w| built[w[0]].key == built[w[1]].key)
    {
        return Err(Error::input(
            format!(
                "duplicate {} {:?}: at {} and at {}",
                kind.noun(),
                built[pair[0]].key,
                capture.locate(places[pair[0]]),
                capture.locate(places[pair[1]])
            ),
            format!(
                "a server must list each {} once; fix the capture or the server",
                kind.noun()
            ),
        ));
    }
    let mut sorted: Vec<Option<BuiltItem>> = built.into_iter().map(Some).collect();
    Ok(Some(
        order
            .into_iter()
            .map(|i| sorted[i].take().expect("each index once"))
            .collect(),
    ))
}

/// Runs `work` over `items` on every core, keeping input order and reporting the first error
/// in input order.
pub fn process_in_parallel<T, R, F>(items: &[T], work: F) -> Result<Vec<R>, Error>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> Result<R, Error> + Sync,
{
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    if workers <= 1 || items.len() < 64 {
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| work(i, item))
            .collect();
    }
    let chunk = items.len().div_ceil(workers);
    let work = &work;
    let results: Vec<Result<Vec<R>, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    part.iter()
                        .enumerate()
                        .map(|(i, item)| work(c * chunk + i, item))
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in results {
        out.extend(part?);
    }
    Ok(out)
}

/// The previous entry's version history, with its version appended when the server's
/// version changed (see [`crate::version`]).
fn previous_versions(capture: &Capture, previous: Option<&LockedServer>) -> Vec<String> {
    let Some(previous) = previous else {
        return Vec::new();
    };
    let version = |info: Option<&Value>| -> Option<String> {
        match info?.get("version")? {
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    };
    let before = previous
        .server_info
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok());
    crate::version::next_history(
        &previous.previous_versions,
        version(before.as_ref()).as_deref(),
        version(capture.server.server_info.as_ref()).as_deref(),
    )
}
