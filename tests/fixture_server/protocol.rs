//! Transport-independent MCP handling: parsing messages, both eras, pagination and the faults
//! that change what a response says. Responses are built as JSON text so that catalog items
//! (raw JSON) are spliced in unchanged.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::catalog::{Catalog, minify};
use crate::{Args, EraArg};

pub const MODERN_VERSION: &str = "2026-07-28";
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
pub const DEFAULT_LEGACY_VERSION: &str = "2025-11-25";
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Methods a modern server knows (all others: -32601).
pub const MODERN_METHODS: [&str; 5] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The era a request is answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

/// One message from the client.
pub enum Incoming {
    Request {
        /// Raw JSON text of the id, echoed unchanged.
        id: String,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response to a request this server sent.
    Response {
        id: Value,
        error_code: Option<i64>,
        is_result: bool,
    },
    /// Not a JSON-RPC message: answer this error.
    Invalid {
        id: String,
        code: i64,
        message: String,
    },
}

#[derive(Deserialize)]
struct Envelope {
    id: Option<Box<RawValue>>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Box<RawValue>>,
    error: Option<Value>,
}

pub fn parse_message(text: &str) -> Incoming {
    let invalid = |id: &str, code, message: &str| Incoming::Invalid {
        id: id.to_string(),
        code,
        message: message.to_string(),
    };
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Value>(text) {
            Ok(_) => invalid("null", INVALID_REQUEST, "Batches are not supported"),
            Err(_) => invalid("null", PARSE_ERROR, "Parse error"),
        };
    }
    let envelope: Envelope = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(err) if err.is_data() => {
            return invalid("null", INVALID_REQUEST, "Invalid Request");
        }
        Err(_) => return invalid("null", PARSE_ERROR, "Parse error"),
    };
    let id = envelope.id.map(|raw| minify(raw.get()));
    match (envelope.method, id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method,
            params: envelope.params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: envelope.params,
        },
        (Some(_), id) => invalid(
            id.as_deref().unwrap_or("null"),
            INVALID_REQUEST,
            "Invalid Request",
        ),
        (None, Some(id)) if envelope.result.is_some() || envelope.error.is_some() => {
            Incoming::Response {
                id: serde_json::from_str(&id).unwrap_or(Value::Null),
                error_code: envelope
                    .error
                    .as_ref()
                    .and_then(|e| e.get("code"))
                    .and_then(Value::as_i64),
                is_result: envelope.result.is_some(),
            }
        }
        (None, id) => invalid(
            id.as_deref().unwrap_or("null"),
            INVALID_REQUEST,
            "Invalid Request",
        ),
    }
}

/// Per-connection state of the legacy era.
#[derive(Debug, Default)]
pub struct Session {
    pub initialized: bool,
}

/// A JSON-RPC response to send.
#[derive(Debug)]
pub struct Response {
    pub text: String,
    pub era: Era,
    /// The error code, when it is an error response.
    pub error: Option<i64>,
}

pub enum Reply {
    Send(Response),
    /// Never answer this request.
    Hang,
}

/// A JSON-RPC error, before it gets an id.
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// Raw JSON.
    pub data: Option<String>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// Builds a JSON object from raw JSON member values, in order.
pub struct Obj(String);

impl Obj {
    pub fn new() -> Obj {
        Obj(String::from("{"))
    }

    pub fn raw(mut self, key: &str, raw_json: &str) -> Obj {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&json_string(key));
        self.0.push(':');
        self.0.push_str(raw_json);
        self
    }

    pub fn str(self, key: &str, value: &str) -> Obj {
        let value = json_string(value);
        self.raw(key, &value)
    }

    pub fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

pub fn result_text(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

pub fn error_text(id: &str, error: &RpcError) -> String {
    let mut body = Obj::new()
        .raw("code", &error.code.to_string())
        .str("message", &error.message);
    if let Some(data) = &error.data {
        body = body.raw("data", data);
    }
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#, body.finish())
}

pub fn request_text(id: &str, method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{params}}}"#,
        json_string(method)
    )
}

pub fn notification_text(method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":{},"params":{params}}}"#,
        json_string(method)
    )
}

/// The paginated lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
    ResourceTemplates,
}

impl ListKind {
    pub fn from_method(method: &str) -> Option<ListKind> {
        match method {
            "tools/list" => Some(ListKind::Tools),
            "prompts/list" => Some(ListKind::Prompts),
            "resources/list" => Some(ListKind::Resources),
            "resources/templates/list" => Some(ListKind::ResourceTemplates),
            _ => None,
        }
    }

    fn key(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::ResourceTemplates => "resourceTemplates",
        }
    }

    /// The catalog's items; `None` when the catalog lacks the list (and, for resources and
    /// templates, the other one too: either one makes both methods exist).
    fn items(self, catalog: &Catalog) -> Option<&[String]> {
        let (resources, templates) = (&catalog.resources, &catalog.resource_templates);
        match self {
            ListKind::Tools => catalog.tools.as_deref(),
            ListKind::Prompts => catalog.prompts.as_deref(),
            ListKind::Resources => resources.as_deref().or(templates.as_ref().map(|_| &[][..])),
            ListKind::ResourceTemplates => {
                templates.as_deref().or(resources.as_ref().map(|_| &[][..]))
            }
        }
    }

    fn not_supported(self) -> &'static str {
        match self {
            ListKind::Tools => "Tools not supported",
            ListKind::Prompts => "Prompts not supported",
            ListKind::Resources | ListKind::ResourceTemplates => "Resources not supported",
        }
    }

    /// An item for `--endless` pages beyond the catalog.
    fn synthetic(self, page: usize, index: usize) -> String {
        let name = format!("endless-{page}-{index}");
        match self {
            ListKind::Tools => format!(
                r#"{{"name":"{name}","description":"Synthetic tool on endless page {page}","inputSchema":{{"type":"object"}}}}"#
            ),
            ListKind::Prompts => format!(
                r#"{{"name":"{name}","description":"Synthetic prompt on endless page {page}"}}"#
            ),
            ListKind::Resources => {
                format!(r#"{{"uri":"endless://{page}/{index}","name":"{name}"}}"#)
            }
            ListKind::ResourceTemplates => {
                format!(r#"{{"uriTemplate":"endless://{page}/{index}/{{id}}","name":"{name}"}}"#)
            }
        }
    }
}

pub struct Server {
    pub args: Args,
    pub catalog: Catalog,
    record: Option<Mutex<File>>,
    oversized_done: AtomicBool,
    responses_sent: AtomicU64,
}

impl Server {
    pub fn new(args: Args, catalog: Catalog) -> Result<Server, String> {
        let record = match &args.record {
            Some(path) => Some(Mutex::new(open_append(path)?)),
            None => None,
        };
        Ok(Server {
            args,
            catalog,
            record,
            oversized_done: AtomicBool::new(false),
            responses_sent: AtomicU64::new(0),
        })
    }

    /// Appends a message received from the client to the `--record` file: as received, or
    /// compacted when it has line breaks (HTTP bodies may).
    pub fn record(&self, message: &str) {
        if let Some(file) = &self.record {
            let message = message.trim();
            if message.contains(['\n', '\r']) {
                append_line(file, &minify(message));
            } else {
                append_line(file, message);
            }
        }
    }

    /// `--crash-after 0`: crash on the first message.
    pub fn crash_if_due_on_receive(&self) {
        if self.args.crash_after == Some(0) {
            crash();
        }
    }

    /// Call after a response was written: `--crash-after N` exits after the Nth.
    pub fn response_sent(&self) {
        let sent = self.responses_sent.fetch_add(1, Ordering::SeqCst) + 1;
        if self.args.crash_after == Some(sent) {
            crash();
        }
    }

    /// `--slow-ms`: call before writing a response.
    pub fn delay(&self) {
        if let Some(ms) = self.args.slow_ms {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }

    /// `both`: `server/discover` and requests with the modern `_meta` keys are modern.
    pub fn request_era(&self, method: &str, params: Option<&Value>) -> Era {
        match self.args.era {
            EraArg::Legacy => Era::Legacy,
            EraArg::Modern => Era::Modern,
            EraArg::Both => {
                let meta = meta(params);
                let modern_meta = meta.is_some_and(|m| {
                    m.get(META_PROTOCOL_VERSION).is_some()
                        || m.get(META_CLIENT_CAPABILITIES).is_some()
                });
                if method == "server/discover" || modern_meta {
                    Era::Modern
                } else {
                    Era::Legacy
                }
            }
        }
    }

    /// Answers one request.
    pub fn handle(
        &self,
        session: &mut Session,
        id: &str,
        method: &str,
        params: Option<&Value>,
    ) -> Reply {
        if self.args.hang_on.iter().any(|m| m == method)
            || (self.args.silent_on_discover && method == "server/discover")
        {
            eprintln!("fixture: not answering {method} (id {id})");
            return Reply::Hang;
        }
        let era = self.request_era(method, params);
        if self.args.malformed && method == "tools/list" {
            return Reply::Send(Response {
                text: format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#),
                era,
                error: None,
            });
        }
        let result = match era {
            Era::Modern => self.modern(method, params),
            Era::Legacy => self.legacy(session, method, params),
        };
        Reply::Send(match result {
            Ok(result) => Response {
                text: result_text(id, &result),
                era,
                error: None,
            },
            Err(error) => Response {
                text: error_text(id, &error),
                era,
                error: Some(error.code),
            },
        })
    }

    fn legacy(
        &self,
        session: &mut Session,
        method: &str,
        params: Option<&Value>,
    ) -> Result<String, RpcError> {
        match method {
            "initialize" => {
                session.initialized = true;
                Ok(self.initialize_result(params))
            }
            "ping" => Ok("{}".to_string()),
            _ if !session.initialized => Err(RpcError::new(METHOD_NOT_FOUND, "Method not found")),
            _ => match ListKind::from_method(method) {
                Some(kind) => self.list(kind, params, Era::Legacy),
                None => Err(RpcError::new(METHOD_NOT_FOUND, "Method not found")),
            },
        }
    }

    fn initialize_result(&self, params: Option<&Value>) -> String {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = match (&self.args.legacy_version, requested) {
            (Some(forced), _) => forced.as_str(),
            (None, Some(v)) if LEGACY_VERSIONS.contains(&v) => v,
            _ => DEFAULT_LEGACY_VERSION,
        };
        let mut result = Obj::new()
            .str("protocolVersion", version)
            .raw("capabilities", &self.catalog.capabilities)
            .raw("serverInfo", &self.catalog.server_info);
        if let Some(instructions) = &self.catalog.instructions {
            result = result.raw("instructions", instructions);
        }
        result.finish()
    }

    fn modern(&self, method: &str, params: Option<&Value>) -> Result<String, RpcError> {
        if !MODERN_METHODS.contains(&method) {
            return Err(RpcError::new(METHOD_NOT_FOUND, "Method not found"));
        }
        check_modern_meta(params)?;
        match ListKind::from_method(method) {
            Some(kind) => self.list(kind, params, Era::Modern),
            None => Ok(self.discover_result()),
        }
    }

    fn discover_result(&self) -> String {
        let mut result = Obj::new()
            .str("resultType", "complete")
            .raw(
                "supportedVersions",
                &format!("[{}]", json_string(MODERN_VERSION)),
            )
            .raw("capabilities", &self.catalog.capabilities);
        if let Some(instructions) = &self.catalog.instructions {
            result = result.raw("instructions", instructions);
        }
        result
            .raw("ttlMs", &self.args.ttl_ms.to_string())
            .str("cacheScope", &self.args.cache_scope)
            .raw("_meta", &self.result_meta(None))
            .finish()
    }

    /// Modern result `_meta` (serverInfo), and the `--oversized` padding when given.
    fn result_meta(&self, padding: Option<&str>) -> String {
        let mut meta = Obj::new().raw(META_SERVER_INFO, &self.catalog.server_info);
        if let Some(padding) = padding {
            meta = meta.raw("fixture/padding", padding);
        }
        meta.finish()
    }

    fn list(&self, kind: ListKind, params: Option<&Value>, era: Era) -> Result<String, RpcError> {
        let Some(items) = kind.items(&self.catalog) else {
            return Err(RpcError::new(METHOD_NOT_FOUND, kind.not_supported()));
        };
        let pages = self.pages(items.len());
        let cursor = params.and_then(|p| p.get("cursor"));
        let page = self.page_for_cursor(cursor, pages.len())?;

        let mut page_items: Vec<String> = if page < pages.len() {
            items[pages[page].clone()].to_vec()
        } else {
            // Only `--endless` gets here.
            let count = self.args.page_size.unwrap_or(1) as usize;
            (0..count).map(|i| kind.synthetic(page + 1, i)).collect()
        };
        if self.args.duplicate_across_pages
            && page == 1
            && let Some(first) = items[pages[0].clone()].first()
        {
            page_items.insert(0, first.clone());
        }

        let mut result = Obj::new().raw(kind.key(), &format!("[{}]", page_items.join(",")));
        if let Some(next) = self.next_cursor(page, pages.len()) {
            result = result.str("nextCursor", &next);
        }
        let padding = match self.args.oversized {
            Some(bytes)
                if kind == ListKind::Tools && !self.oversized_done.swap(true, Ordering::SeqCst) =>
            {
                Some(json_string(&"x".repeat(bytes)))
            }
            _ => None,
        };
        match era {
            Era::Modern => {
                result = result
                    .str("resultType", "complete")
                    .raw("ttlMs", &self.args.ttl_ms.to_string())
                    .str("cacheScope", &self.args.cache_scope)
                    .raw("_meta", &self.result_meta(padding.as_deref()));
            }
            Era::Legacy => {
                if let Some(padding) = padding {
                    result = result.raw(
                        "_meta",
                        &Obj::new().raw("fixture/padding", &padding).finish(),
                    );
                }
            }
        }
        Ok(result.finish())
    }

    /// The item ranges of the catalog pages; the cursor faults need at least two pages.
    fn pages(&self, count: usize) -> Vec<Range<usize>> {
        let size = match self.args.page_size {
            Some(size) => size as usize,
            None => count.max(1),
        };
        let mut pages: Vec<Range<usize>> = (0..count.div_ceil(size).max(1))
            .map(|p| p * size..((p + 1) * size).min(count))
            .collect();
        let need_two = self.args.empty_cursor || self.args.duplicate_across_pages;
        if need_two && pages.len() < 2 {
            let half = count.div_ceil(2);
            pages = vec![0..half, half..count];
        }
        pages
    }

    /// The page (0-based) a cursor asks for.
    fn page_for_cursor(&self, cursor: Option<&Value>, pages: usize) -> Result<usize, RpcError> {
        let cursor = match cursor {
            None | Some(Value::Null) => return Ok(0),
            Some(Value::String(cursor)) => cursor.as_str(),
            Some(_) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "Invalid cursor: not a string",
                ));
            }
        };
        let invalid = || RpcError::new(INVALID_PARAMS, format!("Invalid cursor: {cursor:?}"));
        if cursor.is_empty() {
            return if self.args.empty_cursor {
                Ok(1)
            } else {
                Err(invalid())
            };
        }
        let number: usize = cursor
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .filter(|n| *n >= 2)
            .ok_or_else(invalid)?;
        if self.args.endless {
            Ok(number - 1)
        } else if self.args.repeat_cursor && number == 2 {
            Ok(1.min(pages - 1))
        } else if number <= pages {
            Ok(number - 1)
        } else {
            Err(invalid())
        }
    }

    fn next_cursor(&self, page: usize, pages: usize) -> Option<String> {
        if self.args.repeat_cursor {
            Some("p2".to_string())
        } else if self.args.endless {
            Some(format!("p{}", page + 2))
        } else if self.args.empty_cursor && page == 0 {
            Some(String::new())
        } else if page + 1 < pages {
            Some(format!("p{}", page + 2))
        } else {
            None
        }
    }
}

pub fn meta(params: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
}

/// The modern `_meta` rules: both required keys, and the one version this server speaks.
fn check_modern_meta(params: Option<&Value>) -> Result<(), RpcError> {
    let meta = meta(params);
    let missing = |key: &str, what: &str| {
        RpcError::new(
            INVALID_PARAMS,
            format!("Invalid params: params._meta[\"{key}\"] is {what}"),
        )
    };
    let version = match meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) {
        None => return Err(missing(META_PROTOCOL_VERSION, "missing")),
        Some(Value::String(v)) => v,
        Some(_) => return Err(missing(META_PROTOCOL_VERSION, "not a string")),
    };
    match meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)) {
        None => return Err(missing(META_CLIENT_CAPABILITIES, "missing")),
        Some(Value::Object(_)) => {}
        Some(_) => return Err(missing(META_CLIENT_CAPABILITIES, "not an object")),
    }
    if version != MODERN_VERSION {
        let data = Obj::new()
            .raw("supported", &format!("[{}]", json_string(MODERN_VERSION)))
            .str("requested", version)
            .finish();
        return Err(RpcError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version".to_string(),
            data: Some(data),
        });
    }
    Ok(())
}

pub fn crash() -> ! {
    eprintln!("fixture: crashing");
    std::process::exit(3);
}

pub fn open_append(path: &std::path::Path) -> Result<File, String> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes one line in a single `write` call, so concurrent writers do not interleave.
pub fn append_line(file: &Mutex<File>, line: &str) {
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(err) = file.write_all(buf.as_bytes()) {
        eprintln!("fixture: cannot record: {err}");
    }
}
