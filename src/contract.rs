//! The contract of one MCP server and its digests (`catalock-digest-v1`).
//!
//! The algorithm is specified in `docs/digest-spec.md`; this module is its implementation and
//! the two must change together (test vectors in `tests/vectors/` pin them to each other).
//!
//! Every top-level key of a tool lands in exactly one section:
//! - **surface**: `name`, `title`, `description`, `inputSchema`, `outputSchema`, `icons`;
//! - **permissions**: the four annotation hints, as effective values (spec defaults applied);
//! - **behavior**: every other key, including `execution`, `_meta`, unknown keys and the
//!   annotations other than the four hints.
//!
//! **economy** (tokens and bytes of the model view) is derived from the surface, so it owns no
//! key and is left out of the tool digest: a tokenizer upgrade can never change a contract
//! digest, and an economy change without a surface change is impossible by construction.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::json::{self, write_string};

/// Identifier of the digest algorithm in this module, recorded in every lockfile.
pub const DIGEST_ALGORITHM: &str = "catalock-digest-v1";
/// Identifier of the catalog revision format, see [`catalog_revision`].
pub const CATALOG_REVISION_FORMAT: &str = "ram-tool-catalog-v1";
/// The tokenizer that counts the economy section.
pub const TOKENIZER: &str = "o200k_base";

/// Top-level tool keys owned by the surface section, in RFC 8785 order.
pub const SURFACE_KEYS: [&str; 6] = [
    "description",
    "icons",
    "inputSchema",
    "name",
    "outputSchema",
    "title",
];
/// Annotation hints owned by the permissions section, in RFC 8785 order, with the default the
/// specification gives each when absent (`schema.ts`, `ToolAnnotations`, 2025-03-26 onward).
pub const PERMISSION_HINTS: [(&str, bool); 4] = [
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
    ("readOnlyHint", false),
];

/// The hints in the order people read them (`show`): what the tool may do, then how.
pub const PERMISSION_HINTS_DISPLAY: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// A SHA-256 digest, written `sha256:<64 lowercase hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// SHA-256 over `tag`, a zero byte, then `canonical` (domain separation: equal bytes
    /// hashed for two different purposes never give equal digests).
    pub fn tagged(tag: &str, canonical: &[u8]) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(DIGEST_ALGORITHM.as_bytes());
        hasher.update(b"/");
        hasher.update(tag.as_bytes());
        hasher.update([0u8]);
        hasher.update(canonical);
        Digest(hasher.finalize().into())
    }

    /// Plain SHA-256, for formats that define their own input (the catalog revision).
    pub fn plain(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// The first 12 hex digits, for one-line messages.
    pub fn short(&self) -> String {
        let full = self.to_string();
        full[..7 + 12].to_string()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            text[2 * i] = HEX[(b >> 4) as usize];
            text[2 * i + 1] = HEX[(b & 0xf) as usize];
        }
        f.write_str("sha256:")?;
        f.write_str(std::str::from_utf8(&text).expect("hex is ASCII"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Digest {
    type Err = String;
    fn from_str(s: &str) -> Result<Digest, String> {
        let hex = s
            .strip_prefix("sha256:")
            .ok_or_else(|| format!("digest {s:?} does not start with \"sha256:\""))?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(format!(
                "digest {s:?} is not sha256: and 64 lowercase hex digits"
            ));
        }
        let mut out = [0u8; 32];
        for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
            let nibble = |c: u8| {
                if c.is_ascii_digit() {
                    c - b'0'
                } else {
                    c - b'a' + 10
                }
            };
            out[i] = nibble(chunk[0]) << 4 | nibble(chunk[1]);
        }
        Ok(Digest(out))
    }
}

/// The sections a tool's contract is split into.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    Surface,
    Behavior,
    Permissions,
    Economy,
}

impl Section {
    pub const ALL: [Section; 4] = [
        Section::Surface,
        Section::Behavior,
        Section::Permissions,
        Section::Economy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Section::Surface => "surface",
            Section::Behavior => "behavior",
            Section::Permissions => "permissions",
            Section::Economy => "economy",
        }
    }

    /// The section that owns top-level tool key `key` (annotations are split by sub-key; see
    /// [`Section::owner_of_annotation`]).
    pub fn owner_of(key: &str) -> Section {
        if SURFACE_KEYS.contains(&key) {
            Section::Surface
        } else {
            Section::Behavior
        }
    }

    pub fn owner_of_annotation(key: &str) -> Section {
        if PERMISSION_HINTS.iter().any(|(hint, _)| *hint == key) {
            Section::Permissions
        } else {
            Section::Behavior
        }
    }
}

/// The canonical bytes of each section of one tool: what the digests are computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCanonical {
    pub surface: String,
    pub behavior: String,
    pub permissions: String,
    /// `{name, description, inputSchema}`, what a model is shown of the tool; tokens and
    /// bytes of the economy section are counted over it.
    pub model_view: String,
}

/// Token and byte cost of a tool's model view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Economy {
    pub tokens: u64,
    pub bytes: u64,
}

impl Economy {
    pub fn canonical(&self) -> String {
        format!(
            "{{\"bytes\":{},\"tokenizer\":\"{TOKENIZER}\",\"tokens\":{}}}",
            self.bytes, self.tokens
        )
    }
    pub fn digest(&self) -> Digest {
        Digest::tagged("economy", self.canonical().as_bytes())
    }
}

/// Every digest of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDigests {
    pub surface: Digest,
    pub behavior: Digest,
    pub permissions: Digest,
    pub economy: Digest,
    pub tool: Digest,
}

impl ToolDigests {
    pub fn section(&self, section: Section) -> Digest {
        match section {
            Section::Surface => self.surface,
            Section::Behavior => self.behavior,
            Section::Permissions => self.permissions,
            Section::Economy => self.economy,
        }
    }
}

/// Why a tool object cannot be digested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolShapeError {
    NotAnObject(&'static str),
    MissingName,
    NameNotString,
    EmptyName,
}

impl fmt::Display for ToolShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolShapeError::NotAnObject(kind) => write!(f, "is {kind}, not an object"),
            ToolShapeError::MissingName => f.write_str("has no \"name\""),
            ToolShapeError::NameNotString => f.write_str("has a \"name\" that is not a string"),
            ToolShapeError::EmptyName => f.write_str("has an empty \"name\""),
        }
    }
}

pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that `value` is an object with a string `name`, returning both.
pub fn as_named_object<'v>(
    value: &'v Value,
    name_key: &str,
) -> Result<(&'v Map<String, Value>, &'v str), ToolShapeError> {
    // An empty name cannot be called, listed apart or written as a lockfile key.
    let map = value
        .as_object()
        .ok_or(ToolShapeError::NotAnObject(json_kind(value)))?;
    match map.get(name_key) {
        None => Err(ToolShapeError::MissingName),
        Some(Value::String(name)) if name.is_empty() => Err(ToolShapeError::EmptyName),
        Some(Value::String(name)) => Ok((map, name)),
        Some(_) => Err(ToolShapeError::NameNotString),
    }
}

/// Writes an object from `(key, compact canonical JSON text)` members in RFC 8785 order.
fn write_object_of_texts(entries: &mut [(&str, &str)], out: &mut String) {
    if entries.iter().any(|(k, _)| k.bytes().any(|b| b >= 0xEE)) {
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    } else {
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    let size: usize = entries.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    out.reserve(size + 2);
    out.push('{');
    for (i, (key, text)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        out.push_str(text);
    }
    out.push('}');
}

/// A tool's top-level members as compact RFC 8785 texts, from which every section is
/// assembled. Built from a parsed tool ([`ToolPieces::from_object`]), or by `verify` from a
/// lockfile's stored canonical text without parsing the schemas again: both go through the
/// same assembly, so they cannot disagree on the algorithm.
#[derive(Debug, Clone, Default)]
pub struct ToolPieces<'a> {
    /// `(key, compact canonical JSON)` for every member except `annotations`.
    pub members: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// `annotations`, parsed: permissions need the hint values.
    pub annotations: Option<Cow<'a, Value>>,
}

impl<'a> ToolPieces<'a> {
    pub fn from_object(tool: &'a Map<String, Value>) -> ToolPieces<'a> {
        let mut pieces = ToolPieces {
            members: Vec::with_capacity(tool.len()),
            annotations: None,
        };
        for (key, value) in tool {
            if key == "annotations" {
                pieces.annotations = Some(Cow::Borrowed(value));
            } else {
                pieces.members.push((
                    Cow::Borrowed(key.as_str()),
                    Cow::Owned(json::canonical(value)),
                ));
            }
        }
        pieces
    }

    fn member(&self, key: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Splits the tool into its canonical sections. Normalizations (all listed in
    /// `docs/digest-spec.md`): key order (RFC 8785), annotation hints replaced by their
    /// effective values in permissions and removed from behavior, and an annotations object
    /// left empty by that removal is treated as absent.
    pub fn sections(&self) -> ToolCanonical {
        let mut surface: Vec<(&str, &str)> = Vec::with_capacity(6);
        let mut behavior: Vec<(&str, &str)> = Vec::new();
        let mut model: Vec<(&str, &str)> = Vec::with_capacity(3);
        for (key, text) in &self.members {
            let (key, text) = (key.as_ref(), text.as_ref());
            if SURFACE_KEYS.contains(&key) {
                surface.push((key, text));
                if matches!(key, "name" | "description" | "inputSchema") {
                    model.push((key, text));
                }
            } else {
                behavior.push((key, text));
            }
        }
        let mut hints: [Option<&Value>; 4] = [None; 4];
        let mut annotation_rest = String::new();
        match self.annotations.as_deref() {
            Some(Value::Object(annotations)) => {
                let mut rest: Vec<(&str, &Value)> = Vec::new();
                for (key, value) in annotations {
                    match PERMISSION_HINTS.iter().position(|(hint, _)| hint == key) {
                        Some(i) => hints[i] = Some(value),
                        None => rest.push((key, value)),
                    }
                }
                if !rest.is_empty() {
                    let texts: Vec<(&str, String)> =
                        rest.iter().map(|(k, v)| (*k, json::canonical(v))).collect();
                    let mut entries: Vec<(&str, &str)> =
                        texts.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    write_object_of_texts(&mut entries, &mut annotation_rest);
                }
            }
            // Not an object: the hints cannot be read from it, so they keep their defaults
            // and the value itself is behavior, kept exactly.
            Some(other) => annotation_rest = json::canonical(other),
            None => {}
        }
        if !annotation_rest.is_empty() {
            behavior.push(("annotations", &annotation_rest));
        }
        let mut permissions = String::with_capacity(96);
        permissions.push('{');
        for (i, ((hint, default), value)) in PERMISSION_HINTS.iter().zip(hints).enumerate() {
            if i > 0 {
                permissions.push(',');
            }
            write_string(hint, &mut permissions);
            permissions.push(':');
            match value {
                Some(v) => json::write_canonical(v, &mut permissions),
                None => permissions.push_str(if *default { "true" } else { "false" }),
            }
        }
        permissions.push('}');

        let mut out = ToolCanonical {
            surface: String::new(),
            behavior: String::new(),
            permissions,
            model_view: String::new(),
        };
        write_object_of_texts(&mut surface, &mut out.surface);
        write_object_of_texts(&mut behavior, &mut out.behavior);
        write_object_of_texts(&mut model, &mut out.model_view);
        out
    }

    /// This tool's entry of the `ram-tool-catalog-v1` revision.
    pub fn catalog_entry(&self, out: &mut String) {
        let annotations = self.annotations.as_deref().map(json::canonical);
        let mut kept: Vec<(&str, &str)> = Vec::with_capacity(5);
        if let Some(a) = annotations.as_deref() {
            kept.push(("annotations", a));
        }
        for key in ["description", "inputSchema", "name", "title"] {
            if let Some(text) = self.member(key) {
                kept.push((key, text));
            }
        }
        write_object_of_texts(&mut kept, out);
    }
}

/// Splits a parsed tool object into its canonical sections (see [`ToolPieces::sections`]).
pub fn canonical_sections(tool: &Map<String, Value>) -> ToolCanonical {
    ToolPieces::from_object(tool).sections()
}

impl ToolCanonical {
    /// The digests, given the economy of the model view (see [`crate::tokens`]).
    pub fn digests(&self, economy: Economy) -> ToolDigests {
        let surface = Digest::tagged("surface", self.surface.as_bytes());
        let behavior = Digest::tagged("behavior", self.behavior.as_bytes());
        let permissions = Digest::tagged("permissions", self.permissions.as_bytes());
        ToolDigests {
            surface,
            behavior,
            permissions,
            economy: economy.digest(),
            tool: tool_digest(&surface, &behavior, &permissions),
        }
    }

    pub fn surface_digest(&self) -> Digest {
        Digest::tagged("surface", self.surface.as_bytes())
    }
}

/// The tool digest: over the canonical object of its three content section digests.
pub fn tool_digest(surface: &Digest, behavior: &Digest, permissions: &Digest) -> Digest {
    let text = format!(
        "{{\"behavior\":\"{behavior}\",\"permissions\":\"{permissions}\",\"surface\":\"{surface}\"}}"
    );
    Digest::tagged("tool", text.as_bytes())
}

/// Digest of a prompt or resource template object, exactly as received (key order aside).
pub fn item_digest(kind: ItemKind, item: &Value) -> Digest {
    Digest::tagged(kind.tag(), json::canonical(item).as_bytes())
}

/// Digest of the server instructions string.
pub fn instructions_digest(instructions: &str) -> Digest {
    let mut text = String::with_capacity(instructions.len() + 2);
    write_string(instructions, &mut text);
    Digest::tagged("instructions", text.as_bytes())
}

/// Server-level list items locked beside tools.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ItemKind {
    Prompt,
    ResourceTemplate,
}

impl ItemKind {
    pub fn tag(self) -> &'static str {
        match self {
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource-template",
        }
    }
    /// The key that identifies an item of this kind within a server.
    pub fn key_field(self) -> &'static str {
        match self {
            ItemKind::Prompt => "name",
            ItemKind::ResourceTemplate => "uriTemplate",
        }
    }
    pub fn noun(self) -> &'static str {
        match self {
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource template",
        }
    }
    /// The member of a list result that carries items of this kind.
    pub fn list_field(self) -> &'static str {
        match self {
            ItemKind::Prompt => "prompts",
            ItemKind::ResourceTemplate => "resourceTemplates",
        }
    }
}

/// The inputs of the server digest. Lists are `(key, digest)` and must be sorted by key;
/// `None` means "not captured", which differs from "captured and empty".
pub struct ServerDigestInput<'a> {
    pub tools: &'a [(&'a str, Digest)],
    pub instructions: Option<Digest>,
    pub prompts: Option<&'a [(&'a str, Digest)]>,
    pub resource_templates: Option<&'a [(&'a str, Digest)]>,
}

impl ServerDigestInput<'_> {
    pub fn canonical(&self) -> String {
        fn list(out: &mut String, items: &[(&str, Digest)]) {
            out.push('[');
            for (i, (key, digest)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                write_string(key, out);
                out.push_str(",\"");
                out.push_str(&digest.to_string());
                out.push_str("\"]");
            }
            out.push(']');
        }
        // Keys in RFC 8785 order: instructions, prompts, resourceTemplates, tools.
        let mut out = String::from("{");
        if let Some(digest) = self.instructions {
            out.push_str(&format!("\"instructions\":\"{digest}\","));
        }
        if let Some(prompts) = self.prompts {
            out.push_str("\"prompts\":");
            list(&mut out, prompts);
            out.push(',');
        }
        if let Some(templates) = self.resource_templates {
            out.push_str("\"resourceTemplates\":");
            list(&mut out, templates);
            out.push(',');
        }
        out.push_str("\"tools\":");
        list(&mut out, self.tools);
        out.push('}');
        out
    }

    pub fn digest(&self) -> Digest {
        Digest::tagged("server", self.canonical().as_bytes())
    }
}

/// The `ram-tool-catalog-v1` revision: SHA-256 (no domain tag; the format names itself) of
/// the compact RFC 8785 JSON of `{"format":"ram-tool-catalog-v1","tools":[...]}`, each tool
/// reduced to `name`, `title`, `description`, `inputSchema`, `annotations` as received (absent
/// keys stay absent), tools sorted by name.
pub fn catalog_revision<'a>(tools: impl IntoIterator<Item = &'a Map<String, Value>>) -> Digest {
    let mut sorted: Vec<&Map<String, Value>> = tools.into_iter().collect();
    sorted.sort_by(|a, b| tool_name(a).cmp(tool_name(b)));
    let mut out = String::from("{\"format\":\"ram-tool-catalog-v1\",\"tools\":[");
    for (i, tool) in sorted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        catalog_entry(tool, &mut out);
    }
    out.push_str("]}");
    Digest::plain(out.as_bytes())
}

/// One tool's entry of the catalog revision, appended to `out`.
pub fn catalog_entry(tool: &Map<String, Value>, out: &mut String) {
    ToolPieces::from_object(tool).catalog_entry(out);
}

/// The catalog revision from entries already rendered by [`catalog_entry`], sorted by name.
pub fn catalog_revision_from_entries<'a>(entries: impl IntoIterator<Item = &'a str>) -> Digest {
    let mut hasher = Sha256::new();
    hasher.update(b"{\"format\":\"ram-tool-catalog-v1\",\"tools\":[");
    for (i, entry) in entries.into_iter().enumerate() {
        if i > 0 {
            hasher.update(b",");
        }
        hasher.update(entry.as_bytes());
    }
    hasher.update(b"]}");
    Digest(hasher.finalize().into())
}

fn tool_name(tool: &Map<String, Value>) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Digest".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A SHA-256 digest: \"sha256:\" and 64 lowercase hex digits.",
            "type": "string",
            "pattern": "^sha256:[0-9a-f]{64}$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_strict;

    fn tool(text: &str) -> Map<String, Value> {
        parse_strict(text).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn digest_text_round_trips() {
        let d = Digest::plain(b"abc");
        assert_eq!(
            d.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
        assert!("sha256:BA78".parse::<Digest>().is_err());
        assert!("md5:00".parse::<Digest>().is_err());
    }

    #[test]
    fn sections_partition_the_tool() {
        let t = tool(
            r#"{"name":"a","description":"d","inputSchema":{"type":"object"},"icons":[],
                "annotations":{"readOnlyHint":true,"title":"T","destructiveHint":true},
                "execution":{"taskSupport":"optional"},"_meta":{"x":1},"vendor":null}"#,
        );
        let c = canonical_sections(&t);
        assert_eq!(
            c.surface,
            r#"{"description":"d","icons":[],"inputSchema":{"type":"object"},"name":"a"}"#
        );
        assert_eq!(
            c.behavior,
            r#"{"_meta":{"x":1},"annotations":{"title":"T"},"execution":{"taskSupport":"optional"},"vendor":null}"#
        );
        assert_eq!(
            c.permissions,
            r#"{"destructiveHint":true,"idempotentHint":false,"openWorldHint":true,"readOnlyHint":true}"#
        );
        assert_eq!(
            c.model_view,
            r#"{"description":"d","inputSchema":{"type":"object"},"name":"a"}"#
        );
    }

    #[test]
    fn default_hints_equal_absent_hints() {
        let explicit = tool(
            r#"{"name":"a","inputSchema":{},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}}"#,
        );
        let absent = tool(r#"{"name":"a","inputSchema":{}}"#);
        let economy = Economy {
            tokens: 1,
            bytes: 1,
        };
        assert_eq!(
            canonical_sections(&explicit).digests(economy),
            canonical_sections(&absent).digests(economy)
        );
        let flipped = tool(r#"{"name":"a","inputSchema":{},"annotations":{"readOnlyHint":true}}"#);
        let d = canonical_sections(&flipped).digests(economy);
        let base = canonical_sections(&absent).digests(economy);
        assert_ne!(d.permissions, base.permissions);
        assert_eq!(d.surface, base.surface);
        assert_eq!(d.behavior, base.behavior);
    }

    #[test]
    fn null_is_not_absent() {
        let null = tool(r#"{"name":"a","description":null}"#);
        let absent = tool(r#"{"name":"a"}"#);
        assert_ne!(
            canonical_sections(&null).surface,
            canonical_sections(&absent).surface
        );
    }

    #[test]
    fn non_object_annotations_are_behavior() {
        let t = tool(r#"{"name":"a","annotations":"readOnly"}"#);
        let c = canonical_sections(&t);
        assert_eq!(c.behavior, r#"{"annotations":"readOnly"}"#);
        assert!(c.permissions.contains("\"readOnlyHint\":false"));
    }

    #[test]
    fn server_digest_distinguishes_uncaptured_from_empty() {
        let tools = [("a", Digest::plain(b"x"))];
        let none = ServerDigestInput {
            tools: &tools,
            instructions: None,
            prompts: None,
            resource_templates: None,
        };
        let empty = ServerDigestInput {
            prompts: Some(&[]),
            ..none
        };
        assert_eq!(
            none.canonical(),
            format!("{{\"tools\":[[\"a\",\"{}\"]]}}", tools[0].1)
        );
        assert_ne!(none.digest(), empty.digest());
    }

    #[test]
    fn catalog_revision_keeps_only_five_keys_sorted_by_name() {
        let a = tool(r#"{"name":"b","inputSchema":{},"execution":{"taskSupport":"forbidden"}}"#);
        let b = tool(r#"{"name":"a","title":"A","_meta":{}}"#);
        let expected = Digest::plain(
            br#"{"format":"ram-tool-catalog-v1","tools":[{"name":"a","title":"A"},{"inputSchema":{},"name":"b"}]}"#,
        );
        assert_eq!(catalog_revision([&a, &b]), expected);
        let mut entries = [String::new(), String::new()];
        catalog_entry(&b, &mut entries[0]);
        catalog_entry(&a, &mut entries[1]);
        assert_eq!(
            catalog_revision_from_entries(entries.iter().map(String::as_str)),
            expected
        );
    }
}
