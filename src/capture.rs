//! Reading captured catalogs: `tools/list`, `prompts/list`, `resources/templates/list` and
//! `initialize` / `server/discover` results, in every shape users save them.
//!
//! Accepted per file: one result object; a JSON-RPC response wrapping it; a JSON array of
//! results or responses (pages); a JSONL file of responses (requests and notifications in it
//! are skipped); a bare array of tool objects. Several files may be given and are merged.
//!
//! Items are kept as byte ranges of the source text and parsed one at a time later, so a
//! 30 MB capture is held once, not once more as a tree.

use std::io::Read;
use std::path::Path;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::contract::ItemKind;
use crate::error::Error;
use crate::json::{self, line_col};

/// One input file (or standard input) and its text.
#[derive(Debug)]
pub struct CaptureSource {
    /// As the user named it; `-` for standard input.
    pub label: String,
    pub text: String,
}

/// An item (tool, prompt, template) located in a source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawItem {
    pub source: usize,
    pub start: usize,
    pub end: usize,
}

/// What a capture says about the server itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerMeta {
    pub protocol_version: Option<String>,
    pub server_info: Option<Value>,
    pub instructions: Option<String>,
}

/// Everything read from one or more capture files.
#[derive(Debug, Default)]
pub struct Capture {
    pub sources: Vec<CaptureSource>,
    /// `Some` once a tools list (possibly empty) was seen.
    pub tools: Option<Vec<RawItem>>,
    pub prompts: Option<Vec<RawItem>>,
    pub resource_templates: Option<Vec<RawItem>>,
    pub server: ServerMeta,
    /// Things skipped or assumed, for the user to read.
    pub notes: Vec<String>,
    /// How the lockfile's `source` describes it, when it is not files (a live server).
    pub description: Option<String>,
    /// What shaped the catalog, when it comes from a live session.
    pub origin: Option<crate::live::Origin>,
}

impl Capture {
    /// Reads and merges capture files. `-` reads standard input.
    pub fn read_paths(paths: &[String]) -> Result<Capture, Error> {
        let mut capture = Capture::default();
        for path in paths {
            let text = read_text(path)?;
            capture.add_source(path.clone(), text)?;
        }
        if capture.tools.is_none() {
            return Err(Error::input(
                format!(
                    "{} holds no tools/list result; catalock locks a server's tools, so capture tools/list too",
                    describe_paths(paths)
                ),
                "catalock lock --from tools-list.json",
            ));
        }
        Ok(capture)
    }

    /// Adds one source text (already read) to the capture.
    pub fn add_source(&mut self, label: String, text: String) -> Result<(), Error> {
        let text = match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        };
        let index = self.sources.len();
        self.sources.push(CaptureSource { label, text });
        let source = &self.sources[index];
        let mut reader = SourceReader {
            capture_notes: Vec::new(),
            found: Found::default(),
            index,
            source,
        };
        reader.read_document()?;
        let SourceReader {
            capture_notes,
            found,
            ..
        } = reader;
        self.notes.extend(capture_notes);
        self.merge(found);
        Ok(())
    }

    fn merge(&mut self, found: Found) {
        if let Some(tools) = found.tools {
            self.tools.get_or_insert_with(Vec::new).extend(tools);
        }
        if let Some(prompts) = found.prompts {
            self.prompts.get_or_insert_with(Vec::new).extend(prompts);
        }
        if let Some(templates) = found.resource_templates {
            self.resource_templates
                .get_or_insert_with(Vec::new)
                .extend(templates);
        }
        let meta = found.server;
        if self.server.protocol_version.is_none() {
            self.server.protocol_version = meta.protocol_version;
        }
        if self.server.server_info.is_none() {
            self.server.server_info = meta.server_info;
        }
        if self.server.instructions.is_none() {
            self.server.instructions = meta.instructions;
        }
    }

    /// The JSON text of an item.
    pub fn text_of(&self, item: &RawItem) -> &str {
        &self.sources[item.source].text[item.start..item.end]
    }

    /// "FILE line L column C" of an item's start.
    pub fn locate(&self, item: &RawItem) -> String {
        let source = &self.sources[item.source];
        let (line, column) = line_col(&source.text, item.start);
        format!(
            "{} line {line} column {column}",
            display_label(&source.label)
        )
    }

    /// Parses an item strictly, with errors positioned in its source file.
    pub fn parse_item(&self, item: &RawItem) -> Result<Value, Error> {
        json::parse_strict(self.text_of(item)).map_err(|e| self.item_error(item, e))
    }

    /// An error inside an item, positioned in its source file.
    pub fn item_error(&self, item: &RawItem, e: json::JsonError) -> Error {
        let source = &self.sources[item.source];
        {
            let (line, column) = line_col(&source.text, item.start);
            let e = e.offset_by(line, column);
            Error::input(
                format!(
                    "{}: {} at line {} column {}",
                    display_label(&source.label),
                    e.message,
                    e.line,
                    e.column
                ),
                "fix the capture, or capture the server again",
            )
        }
    }

    pub fn items(&self, kind: ItemKind) -> Option<&[RawItem]> {
        match kind {
            ItemKind::Prompt => self.prompts.as_deref(),
            ItemKind::ResourceTemplate => self.resource_templates.as_deref(),
        }
    }

    /// A name for the server when none is given: from serverInfo, else the first file's stem.
    pub fn default_server_name(&self) -> String {
        if let Some(name) = self
            .server
            .server_info
            .as_ref()
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
        {
            let derived = crate::lockfile::sanitize_server_name(name);
            if !derived.is_empty() {
                return derived;
            }
        }
        let first = self
            .sources
            .first()
            .map(|s| s.label.as_str())
            .unwrap_or("-");
        if first == "-" {
            return "server".to_string();
        }
        let stem = Path::new(first)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("server");
        let derived = crate::lockfile::sanitize_server_name(stem);
        if derived.is_empty() {
            "server".to_string()
        } else {
            derived
        }
    }

    /// How the capture is described in the lockfile's `source` field.
    pub fn describe(&self) -> String {
        if let Some(description) = &self.description {
            return description.clone();
        }
        let labels: Vec<String> = self
            .sources
            .iter()
            .map(|s| display_label(&s.label))
            .collect();
        format!("capture: {}", labels.join(", "))
    }
}

/// `stdin` for `-`, the file name otherwise (never a directory path: the lockfile must not hold
/// machine paths, and the `source` field is only a description).
pub fn display_label(label: &str) -> String {
    if label == "-" {
        return "stdin".to_string();
    }
    Path::new(label)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or(label)
        .to_string()
}

fn describe_paths(paths: &[String]) -> String {
    let labels: Vec<String> = paths.iter().map(|p| display_label(p)).collect();
    labels.join(", ")
}

/// Reads a whole file, or standard input for `-`.
pub fn read_text(path: &str) -> Result<String, Error> {
    let mut bytes = Vec::new();
    let result = if path == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map(|_| ())
    };
    result.map_err(|e| {
        Error::input(
            format!(
                "cannot read {}: {}",
                if path == "-" { "stdin" } else { path },
                crate::error::io_reason(&e)
            ),
            "check the path given to --from",
        )
    })?;
    String::from_utf8(bytes).map_err(|e| {
        Error::input(
            format!(
                "{} is not UTF-8 text (invalid byte at offset {})",
                display_label(path),
                e.utf8_error().valid_up_to()
            ),
            "captures are JSON, which must be UTF-8; capture the server again",
        )
    })
}

#[derive(Default)]
struct Found {
    tools: Option<Vec<RawItem>>,
    prompts: Option<Vec<RawItem>>,
    resource_templates: Option<Vec<RawItem>>,
    server: ServerMeta,
    /// Pages of tools/list and whether each carried a non-null nextCursor.
    tool_pages: usize,
    tool_pages_with_cursor: usize,
    last_cursor: Option<String>,
}

struct SourceReader<'s> {
    capture_notes: Vec<String>,
    found: Found,
    index: usize,
    source: &'s CaptureSource,
}

/// A member of a [`Shallow`] object. The lists a capture is made of are split into their
/// elements and a JSON-RPC `result` into its members during the one pass over the text, so a
/// 30 MB catalog is skimmed once before each tool is parsed, not three times.
enum Member<'a> {
    Raw(&'a RawValue),
    List(Vec<&'a RawValue>),
    Object(Shallow<'a>),
    /// A list or `result` member of another JSON type (its kind, for the error).
    Unexpected(&'static str),
}

/// Keys whose values are lists of items.
const LIST_KEYS: [&str; 3] = ["tools", "prompts", "resourceTemplates"];

/// A JSON object whose members are left unparsed, with duplicate keys rejected.
struct Shallow<'a>(Vec<(String, Member<'a>)>);

impl<'a> Shallow<'a> {
    fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }
    fn member(&self, key: &str) -> Option<&Member<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// A member kept as raw JSON (every member but lists and `result`).
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        match self.member(key) {
            Some(Member::Raw(raw)) => Some(raw),
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_str()).collect()
    }
}

fn kind_name(unexpected: de::Unexpected<'_>) -> &'static str {
    match unexpected {
        de::Unexpected::Bool(_) => "a boolean",
        de::Unexpected::Str(_) => "a string",
        de::Unexpected::Map => "an object",
        de::Unexpected::Seq => "an array",
        de::Unexpected::Unit => "null",
        _ => "a number",
    }
}

/// Deserializes a member by what its key says it should be.
struct MemberSeed<'k, 'a>(&'k str, std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for MemberSeed<'_, 'a> {
    type Value = Member<'a>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Member<'a>, D::Error> {
        if LIST_KEYS.contains(&self.0) {
            d.deserialize_any(ShapeVisitor {
                want_list: true,
                _life: std::marker::PhantomData,
            })
        } else if self.0 == "result" {
            d.deserialize_any(ShapeVisitor {
                want_list: false,
                _life: std::marker::PhantomData,
            })
        } else {
            <&'a RawValue>::deserialize(d).map(Member::Raw)
        }
    }
}

/// Accepts any JSON value: the expected shape (a list, or an object) becomes a member, any
/// other is consumed and reported by kind.
struct ShapeVisitor<'a> {
    want_list: bool,
    _life: std::marker::PhantomData<&'a ()>,
}

impl<'de: 'a, 'a> Visitor<'de> for ShapeVisitor<'a> {
    type Value = Member<'a>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Member<'a>, A::Error> {
        if self.want_list {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(16));
            while let Some(item) = seq.next_element::<&'a RawValue>()? {
                items.push(item);
            }
            Ok(Member::List(items))
        } else {
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(Member::Unexpected("an array"))
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Member<'a>, A::Error> {
        let object = visit_shallow(map)?;
        Ok(if self.want_list {
            Member::Unexpected("an object")
        } else {
            Member::Object(object)
        })
    }
    fn visit_bool<E>(self, v: bool) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected(kind_name(de::Unexpected::Bool(v))))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected("a number"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected("a string"))
    }
    fn visit_unit<E>(self) -> Result<Member<'a>, E> {
        Ok(Member::Unexpected("null"))
    }
}

fn visit_shallow<'de: 'a, 'a, A: MapAccess<'de>>(mut map: A) -> Result<Shallow<'a>, A::Error> {
    let mut out: Vec<(String, Member<'a>)> = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
        if out.iter().any(|(k, _)| *k == key) {
            return Err(de::Error::custom(format_args!(
                "duplicate object key {key:?}"
            )));
        }
        let value = map.next_value_seed(MemberSeed(&key, std::marker::PhantomData))?;
        out.push((key, value));
    }
    Ok(Shallow(out))
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Shallow<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Shallow<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Shallow<'a>, A::Error> {
                visit_shallow(map)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn first_byte(raw: &RawValue) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

impl<'s> SourceReader<'s> {
    fn label(&self) -> String {
        display_label(&self.source.label)
    }

    fn offset_of(&self, raw: &RawValue) -> usize {
        raw.get().as_ptr() as usize - self.source.text.as_ptr() as usize
    }

    fn item(&self, raw: &RawValue) -> RawItem {
        let start = self.offset_of(raw);
        RawItem {
            source: self.index,
            start,
            end: start + raw.get().len(),
        }
    }

    fn at_offset(&self, offset: usize) -> String {
        let (line, column) = line_col(&self.source.text, offset);
        format!("{} line {line} column {column}", self.label())
    }

    fn syntax_error(&self, err: &serde_json::Error, base: usize) -> Error {
        let (line, column) = line_col(&self.source.text, base);
        let e = json::JsonError {
            message: strip_position(err),
            line: err.line(),
            column: err.column(),
        }
        .offset_by(line, column);
        Error::input(
            format!(
                "{} is not valid JSON: {} at line {} column {}",
                self.label(),
                e.message,
                e.line,
                e.column
            ),
            "fix the file, or capture the server again",
        )
    }

    fn shape_error(&self, raw: &RawValue, what: String) -> Error {
        self.shape_error_at(self.offset_of(raw), what)
    }

    fn shape_error_at(&self, offset: usize, what: String) -> Error {
        Error::input(
            format!("{}: {what}", self.at_offset(offset)),
            "give a tools/list result, a JSON-RPC response, an array of them, JSONL of responses, or an array of tools",
        )
    }

    fn read_document(&mut self) -> Result<(), Error> {
        let text: &'s str = &self.source.text;
        if text.trim().is_empty() {
            return Err(Error::input(
                format!("{} is empty", self.label()),
                "capture the server's tools/list into it",
            ));
        }
        // An object (the usual capture) is read in one pass; anything else is located first.
        let start = text.len() - text.trim_start().len();
        let result = if text[start..].starts_with('{') {
            let mut de = serde_json::Deserializer::from_str(text);
            Shallow::deserialize(&mut de)
                .and_then(|obj| de.end().map(|()| obj))
                .map(|obj| self.read_message(&obj, start).and_then(|()| self.finish()))
        } else {
            serde_json::from_str::<&'s RawValue>(text).map(|raw| self.read_top(raw))
        };
        match result {
            Ok(done) => done,
            Err(err) if strip_position(&err) == "trailing characters" => self.read_lines(),
            Err(err) => Err(self.syntax_error(&err, 0)),
        }
    }

    /// JSONL: one JSON document per non-blank line.
    fn read_lines(&mut self) -> Result<(), Error> {
        let text: &'s str = &self.source.text;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            if body.trim().is_empty() {
                continue;
            }
            let raw: &'s RawValue =
                serde_json::from_str(body).map_err(|e| self.syntax_error(&e, start))?;
            match first_byte(raw) {
                b'{' => {
                    let obj: Shallow<'s> = self.parse(raw)?;
                    self.read_message(&obj, self.offset_of(raw))?
                }
                _ => {
                    return Err(self.shape_error(
                        raw,
                        "a JSONL line must hold one JSON-RPC response or result object".into(),
                    ));
                }
            }
        }
        self.finish()
    }

    fn read_top(&mut self, raw: &'s RawValue) -> Result<(), Error> {
        match first_byte(raw) {
            b'{' => {
                let obj: Shallow<'s> = self.parse(raw)?;
                self.read_message(&obj, self.offset_of(raw))
                    .and_then(|()| self.finish())
            }
            b'[' => {
                let elements: Vec<&'s RawValue> = self.parse(raw)?;
                // A bare array of tools, or an array of pages/responses?
                let mut tools_like = elements.is_empty();
                if let Some(first) = elements.first() {
                    if first_byte(first) == b'{' {
                        let obj: Shallow<'s> = self.parse(first)?;
                        tools_like = obj.has("name")
                            && ![
                                "tools",
                                "result",
                                "error",
                                "jsonrpc",
                                "prompts",
                                "resourceTemplates",
                            ]
                            .iter()
                            .any(|k| obj.has(k));
                    } else {
                        tools_like = true; // reported below as "tool #1 is not an object"
                    }
                }
                if tools_like {
                    let items = elements.iter().map(|e| self.item(e)).collect::<Vec<_>>();
                    self.found.tools.get_or_insert_with(Vec::new).extend(items);
                    self.found.tool_pages += 1;
                    return self.finish();
                }
                for element in elements {
                    if first_byte(element) != b'{' {
                        return Err(self.shape_error(
                            element,
                            format!(
                                "array element is {}, not a result or response object",
                                kind_of(element)
                            ),
                        ));
                    }
                    let obj: Shallow<'s> = self.parse(element)?;
                    self.read_message(&obj, self.offset_of(element))?;
                }
                self.finish()
            }
            _ => Err(self.shape_error(
                raw,
                format!(
                    "the document is {}; expected an object or an array",
                    kind_of(raw)
                ),
            )),
        }
    }

    /// Checks made once the whole source is read.
    fn finish(&mut self) -> Result<(), Error> {
        let f = &self.found;
        if f.tool_pages > 0 && f.tool_pages == f.tool_pages_with_cursor {
            let cursor = f.last_cursor.clone().unwrap_or_default();
            return Err(Error::input(
                format!(
                    "{} is incomplete: every tools/list page in it has a nextCursor (last {cursor:?}), so the final page is missing",
                    self.label()
                ),
                "capture every page: repeat tools/list with params.cursor until nextCursor is absent",
            ));
        }
        Ok(())
    }

    fn parse<T: serde::Deserialize<'s>>(&self, raw: &'s RawValue) -> Result<T, Error> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let value =
            T::deserialize(&mut de).map_err(|e| self.syntax_error(&e, self.offset_of(raw)))?;
        Ok(value)
    }

    /// A JSON-RPC message or a bare result object, starting at byte `at` of the source.
    fn read_message(&mut self, obj: &Shallow<'s>, at: usize) -> Result<(), Error> {
        let is_envelope =
            obj.has("jsonrpc") || (obj.has("id") && (obj.has("result") || obj.has("error")));
        if !is_envelope {
            return self.read_result(obj, at);
        }
        if let Some(error) = obj.get("error") {
            let detail: Value = self.parse(error).unwrap_or(Value::Null);
            let code = detail
                .get("code")
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into());
            let message = detail.get("message").and_then(Value::as_str).unwrap_or("");
            return Err(Error::input(
                format!(
                    "{}: the capture holds a JSON-RPC error response (code {code}: {message:?})",
                    self.at_offset(at)
                ),
                "capture a successful tools/list response",
            ));
        }
        match obj.member("result") {
            Some(Member::Object(inner)) => return self.read_result(inner, at),
            Some(Member::Unexpected(kind)) => {
                return Err(self.shape_error_at(at, format!("\"result\" is {kind}, not an object")));
            }
            _ => {}
        }
        if obj.has("method") {
            return Ok(()); // a request or notification in a transcript
        }
        Err(self.shape_error_at(
            at,
            "a JSON-RPC message with neither \"result\", \"error\" nor \"method\"".into(),
        ))
    }

    fn read_result(&mut self, obj: &Shallow<'s>, at: usize) -> Result<(), Error> {
        let mut recognized = false;
        if let Some(tools) = obj.member("tools") {
            recognized = true;
            let items = self.list_items(tools, "tools", at)?;
            self.found.tools.get_or_insert_with(Vec::new).extend(items);
            self.found.tool_pages += 1;
            if let Some(cursor) = obj.get("nextCursor") {
                let value: Value = self.parse(cursor)?;
                if let Value::String(s) = value {
                    self.found.tool_pages_with_cursor += 1;
                    self.found.last_cursor = Some(s);
                }
            }
        }
        for kind in [ItemKind::Prompt, ItemKind::ResourceTemplate] {
            if let Some(list) = obj.member(kind.list_field()) {
                recognized = true;
                let items = self.list_items(list, kind.list_field(), at)?;
                let slot = match kind {
                    ItemKind::Prompt => &mut self.found.prompts,
                    ItemKind::ResourceTemplate => &mut self.found.resource_templates,
                };
                slot.get_or_insert_with(Vec::new).extend(items);
            }
        }
        if obj.has("resources") {
            recognized = true;
            self.capture_notes.push(format!(
                "{}: a resources/list result was skipped: resources are content, not contract (resource templates are locked)",
                self.label()
            ));
        }
        // initialize (legacy) or server/discover (modern) results describe the server.
        let is_handshake = [
            "protocolVersion",
            "serverInfo",
            "supportedVersions",
            "capabilities",
        ]
        .iter()
        .any(|k| obj.has(k));
        if is_handshake {
            recognized = true;
            if let Some(v) = obj.get("protocolVersion") {
                if let Value::String(s) = self.parse::<Value>(v)? {
                    self.found.server.protocol_version.get_or_insert(s);
                }
            } else if let Some(v) = obj.get("supportedVersions")
                && let Value::Array(list) = self.parse::<Value>(v)?
                && let Some(Value::String(s)) = list.first()
            {
                self.found.server.protocol_version.get_or_insert(s.clone());
            }
            if let Some(v) = obj.get("instructions")
                && let Value::String(s) = self.parse::<Value>(v)?
            {
                self.found.server.instructions.get_or_insert(s);
            }
            if let Some(v) = obj.get("serverInfo") {
                let info: Value = self.parse(v)?;
                self.found.server.server_info.get_or_insert(info);
            }
        }
        // Modern results name the server in result _meta.
        if let Some(meta) = obj.get("_meta")
            && let Ok(Value::Object(meta)) = self.parse::<Value>(meta)
            && let Some(info) = meta.get("io.modelcontextprotocol/serverInfo")
        {
            self.found.server.server_info.get_or_insert(info.clone());
        }
        if !recognized {
            let keys = obj.keys();
            return Err(self.shape_error_at(
                at,
                if keys.is_empty() {
                    "an empty object; expected a tools/list result".to_string()
                } else {
                    format!("an object with keys {} is not a tools/list, prompts/list, resources/templates/list or initialize result", keys.join(", "))
                },
            ));
        }
        Ok(())
    }

    fn list_items(&self, list: &Member<'s>, field: &str, at: usize) -> Result<Vec<RawItem>, Error> {
        match list {
            Member::List(elements) => Ok(elements.iter().map(|e| self.item(e)).collect()),
            Member::Unexpected(kind) => {
                Err(self.shape_error_at(at, format!("\"{field}\" is {kind}, not an array")))
            }
            Member::Raw(_) | Member::Object(_) => unreachable!("list keys are read as lists"),
        }
    }
}

fn kind_of(raw: &RawValue) -> &'static str {
    match first_byte(raw) {
        b'{' => "an object",
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "a number",
    }
}

fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(idx) => text[..idx].to_string(),
        None => text,
    }
}
