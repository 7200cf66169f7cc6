//! Live discovery: ask a running MCP server for its contract, in whichever protocol era it
//! speaks, and hand the responses, verbatim, to the same capture reader a file goes through.
//!
//! No SDK: a typed client drops what it does not model (unknown tool keys, `execution`), and
//! the lockfile must hash what the server sent. catalock only discovers: it sends
//! `server/discover` or `initialize`, `notifications/initialized`, and the `*/list` requests,
//! answers `ping`, and refuses every other server request; it never calls a tool, reads a
//! resource or gets a prompt.

pub mod http;
pub mod sse;
pub mod sse_legacy;
pub mod stdio;

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::capture::Capture;
use crate::error::Error;

/// The protocol versions catalock speaks.
pub const MODERN_VERSION: &str = "2026-07-28";
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Limits on a live session. Every wait has a deadline; every message has a size cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Per request.
    pub request_timeout: Duration,
    /// How long a `server/discover` probe waits before assuming a legacy server.
    pub probe_timeout: Duration,
    /// The whole session.
    pub total_timeout: Duration,
    /// Largest message accepted (one stdout line, one HTTP body).
    pub max_message: usize,
    /// Most pages followed in one list before giving up.
    pub max_pages: usize,
    /// How long a server gets to exit after stdin closes, and again after SIGTERM.
    pub shutdown_grace: Duration,
    /// Non-JSON output and unknown protocol versions are errors, not warnings.
    pub strict: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(3),
            total_timeout: Duration::from_secs(300),
            max_message: 64 << 20,
            max_pages: 1000,
            shutdown_grace: Duration::from_secs(2),
            strict: false,
        }
    }
}

/// Which protocol era to speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// Probe with `server/discover`, fall back to `initialize` as the specification says.
    Auto,
    Modern,
    Legacy,
    /// A legacy version to offer in `initialize`, or the modern one.
    Version(String),
}

impl std::str::FromStr for ProtocolChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ProtocolChoice::Auto),
            "modern" => Ok(ProtocolChoice::Modern),
            "legacy" => Ok(ProtocolChoice::Legacy),
            v if v == MODERN_VERSION || LEGACY_VERSIONS.contains(&v) => {
                Ok(ProtocolChoice::Version(v.to_string()))
            }
            other => Err(format!(
                "unknown protocol {other:?}: use auto, modern, legacy, {MODERN_VERSION} or one of {}",
                LEGACY_VERSIONS.join(", ")
            )),
        }
    }
}

/// What catalock says about itself: servers may return different tools for different
/// client capabilities, so the lockfile records this and `check` asks the same question.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientIdentity {
    pub info: Value,
    pub capabilities: Value,
}

impl Default for ClientIdentity {
    fn default() -> Self {
        ClientIdentity {
            info: json!({"name": "catalock", "version": env!("CARGO_PKG_VERSION")}),
            capabilities: json!({}),
        }
    }
}

/// A session failure. Messages never include header or environment values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveError {
    Start {
        command: String,
        reason: String,
    },
    Exited {
        server: String,
        status: String,
        when: String,
        stderr: String,
    },
    Timeout {
        server: String,
        waiting_for: String,
        stderr: String,
    },
    Protocol {
        server: String,
        message: String,
    },
    Rpc {
        server: String,
        method: String,
        code: i64,
        message: String,
    },
    /// HTTP 401/403: what the server demands (scheme, scopes, authorization servers).
    Auth {
        server: String,
        status: u16,
        credential_sent: bool,
        demands: String,
    },
}

impl From<LiveError> for Error {
    fn from(e: LiveError) -> Error {
        let with_stderr = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("; its stderr ended: {s}")
            }
        };
        match e {
            LiveError::Start { command, reason } => Error::server(
                format!("cannot start {command:?}: {reason}"),
                "check the command (is it installed and on PATH?) and --cwd",
            ),
            LiveError::Exited {
                server,
                status,
                when,
                stderr,
            } => Error::server(
                format!("server {server:?} {status} {when}{}", with_stderr(&stderr)),
                "run the server command by hand to see why it stops; the lockfile is unchanged",
            ),
            LiveError::Timeout {
                server,
                waiting_for,
                stderr,
            } => Error::server(
                format!(
                    "server {server:?} did not answer {waiting_for} in time{}",
                    with_stderr(&stderr)
                ),
                "raise --timeout if it is just slow; the lockfile is unchanged",
            ),
            LiveError::Protocol { server, message } => Error::server(
                format!("server {server:?} {message}"),
                "report it to the server's authors; the lockfile is unchanged",
            ),
            LiveError::Auth {
                server,
                status,
                credential_sent,
                demands,
            } => Error::server(
                format!(
                    "server {server:?} answered HTTP {status}: {} ({})",
                    if status == 401 {
                        "authorization required"
                    } else {
                        "the credential lacks permission"
                    },
                    if demands.is_empty() {
                        "no challenge given".to_string()
                    } else {
                        format!("it demands {demands}")
                    },
                ),
                if credential_sent {
                    "the credential sent was refused: obtain one with the scopes above and pass --header 'Authorization: Bearer …'".to_string()
                } else {
                    "obtain a token from the authorization server above and pass --header 'Authorization: Bearer …'".to_string()
                },
            ),
            LiveError::Rpc {
                server,
                method,
                code,
                message,
            } => Error::server(
                format!("server {server:?} answered {method} with error {code}: {message:?}"),
                "the lockfile is unchanged; check the server's own logs",
            ),
        }
    }
}

impl LiveError {
    /// A message that is not valid JSON-RPC while waiting for the answer to `method`.
    pub(crate) fn malformed(server: &str, method: &str, why: &str) -> LiveError {
        LiveError::Protocol {
            server: server.to_string(),
            message: format!("sent malformed JSON-RPC while answering {method}: {why}"),
        }
    }
}

/// Reads and discards a small response body (its status is what matters).
pub(crate) fn drain(response: &mut ureq::http::Response<ureq::Body>) {
    let _ = response
        .body_mut()
        .with_config()
        .limit(1 << 16)
        .read_to_string();
}

/// A way to exchange JSON-RPC messages with a server.
pub trait Transport {
    /// Sends request `id` (its JSON text) and returns the text of its response.
    fn call(
        &mut self,
        id: u64,
        method: &str,
        request: &str,
        timeout: Duration,
    ) -> Result<String, LiveError>;
    /// Sends a notification.
    fn notify(&mut self, message: &str) -> Result<(), LiveError>;
    /// Ends the session (idempotent).
    fn close(&mut self);
    /// Warnings gathered so far (skipped output, say).
    fn take_warnings(&mut self) -> Vec<String>;
    /// The protocol version is settled (HTTP sends it as a header from then on).
    fn negotiated(&mut self, _version: &str, _era: Era) {}
}

/// What to do with one incoming message while waiting for a response.
pub(crate) enum Routed {
    /// It is the awaited response.
    Response,
    /// A server request: send this reply and keep waiting.
    Reply(String),
    /// A notification, or a response to something else (a timed-out probe).
    Ignore,
    Malformed(String),
}

#[derive(Deserialize)]
struct Incoming {
    /// `Some(Null)` for `"id": null` (an error about an unparseable request), `None` when
    /// absent (a notification).
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

pub(crate) fn route(text: &str, expected: u64) -> Routed {
    if text.starts_with('[') {
        return Routed::Malformed("JSON-RPC batches are not supported".to_string());
    }
    let incoming: Incoming = match serde_json::from_str(text) {
        Ok(i) => i,
        Err(e) => return Routed::Malformed(e.to_string()),
    };
    match (incoming.method.as_deref(), incoming.id) {
        (Some("ping"), Some(id)) => Routed::Reply(json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string()),
        (Some(method), Some(id)) => Routed::Reply(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("catalock only discovers; it does not handle {method}")}})
                .to_string(),
        ),
        (Some(_), None) => Routed::Ignore,
        (None, Some(Value::Null)) => Routed::Response,
                (None, Some(id)) if id.as_u64() == Some(expected) => Routed::Response,
        // Some servers echo numeric ids as strings.
        (None, Some(Value::String(id))) if id.parse::<u64>().ok() == Some(expected) => Routed::Response,
        (None, Some(_)) => Routed::Ignore,
        (None, None) => Routed::Malformed("a message with neither \"id\" nor \"method\"".to_string()),
    }
}

/// Discovers a stdio server. A legacy server that dies on the `server/discover` probe is
/// started again and asked the legacy way.
pub fn discover_stdio(
    spec: &stdio::StdioSpec,
    limits: &Limits,
    client: &ClientIdentity,
    choice: &ProtocolChoice,
) -> Result<Discovered, Error> {
    let run = |choice: &ProtocolChoice| -> Result<Discovered, LiveError> {
        let mut transport = stdio::StdioTransport::start(spec, limits)?;
        Session::new(&mut transport, &spec.label, limits, client).discover(choice)
    };
    match run(choice) {
        Err(LiveError::Exited { when, .. })
            if *choice == ProtocolChoice::Auto && when.contains("server/discover") =>
        {
            let mut discovered = run(&ProtocolChoice::Legacy)?;
            discovered.notes.push("the server exited on the server/discover probe; started again and asked the legacy way".into());
            Ok(discovered)
        }
        other => Ok(other?),
    }
}

/// Discovers a streamable HTTP server.
pub fn discover_http(
    spec: &http::HttpSpec,
    limits: &Limits,
    client: &ClientIdentity,
    choice: &ProtocolChoice,
) -> Result<Discovered, Error> {
    let mut transport = http::HttpTransport::new(spec, limits)?;
    let label = spec.label.clone();
    // With credentials, learn what the server demands of a client without them.
    let demanded = if spec.headers.is_empty() {
        None
    } else {
        transport.authorization_demanded()
    };
    let result = discover_http_with(&mut transport, spec, &label, limits, client, choice);
    result.map(|mut d| {
        d.authorization = demanded;
        d
    })
}

fn discover_http_with(
    transport: &mut http::HttpTransport,
    spec: &http::HttpSpec,
    label: &str,
    limits: &Limits,
    client: &ClientIdentity,
    choice: &ProtocolChoice,
) -> Result<Discovered, Error> {
    let label = label.to_string();
    match Session::new(transport, &label, limits, client).discover(choice) {
        // The streamable POST refused without a JSON-RPC answer (400/404/405): a 2024-11-05
        // server may serve the older HTTP+SSE transport at this URL instead.
        Err(LiveError::Rpc {
            method,
            code: -32400 | -32404 | -32405,
            ..
        }) if method == "initialize"
            && matches!(choice, ProtocolChoice::Auto | ProtocolChoice::Legacy) =>
        {
            let mut legacy = sse_legacy::SseLegacyTransport::open(spec, limits)?;
            let mut discovered = Session::new(&mut legacy, &label, limits, client)
                .discover(&ProtocolChoice::Legacy)?;
            discovered.notes.push("the server speaks the 2024-11-05 HTTP+SSE transport (deprecated): consider streamable HTTP".into());
            Ok(discovered)
        }
        other => Ok(other?),
    }
}

/// What shaped a live catalog, recorded in the lockfile so `check` asks the same question
/// `lock` asked. Never holds a secret: no environment values, no headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    pub era: Option<Era>,
    pub client: ClientIdentity,
    /// What the server demands of a client without credentials (scheme, scope, authorization
    /// servers); never the credential.
    pub authorization: Option<Value>,
}

/// The protocol era a session used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Legacy,
    Modern,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// The result of a discovery session.
#[derive(Debug)]
pub struct Discovered {
    /// Every response that carries contract (handshake and list pages), one per line.
    pub transcript: String,
    pub era: Era,
    pub protocol_version: String,
    pub notes: Vec<String>,
    /// What an HTTP server demands of a client without credentials (see the lockfile's
    /// `authorization`).
    pub authorization: Option<Value>,
}

impl Discovered {
    /// The capture these responses make, exactly as if they had been saved to a file and
    /// read with `--from`: one code path digests both.
    pub fn into_capture(
        self,
        label: &str,
        description: String,
        mut origin: Origin,
    ) -> Result<Capture, Error> {
        let mut capture = Capture::default();
        capture.add_source(label.to_string(), self.transcript)?;
        // The negotiated version, not the first of a discover result's supportedVersions.
        capture.server.protocol_version = Some(self.protocol_version);
        capture.notes.extend(self.notes);
        capture.description = Some(description);
        origin.era = Some(self.era);
        origin.authorization = self.authorization;
        capture.origin = Some(origin);
        Ok(capture)
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

#[derive(Deserialize)]
struct PageCursor {
    #[serde(rename = "nextCursor", default)]
    next_cursor: Option<Value>,
}

/// One discovery session over a transport.
pub struct Session<'t> {
    transport: &'t mut dyn Transport,
    label: String,
    limits: Limits,
    client: ClientIdentity,
    next_id: u64,
    deadline: Instant,
    lines: Vec<String>,
    notes: Vec<String>,
}

/// How the `server/discover` probe came out.
enum Probe {
    Modern(String),
    /// The server is dual-era but refuses the modern version; these legacy versions it takes.
    Legacy(Option<String>),
}

impl<'t> Session<'t> {
    pub fn new(
        transport: &'t mut dyn Transport,
        label: &str,
        limits: &Limits,
        client: &ClientIdentity,
    ) -> Session<'t> {
        Session {
            transport,
            label: label.to_string(),
            limits: limits.clone(),
            client: client.clone(),
            next_id: 0,
            deadline: Instant::now() + limits.total_timeout,
            lines: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn timeout(&self, per_request: Duration) -> Result<Duration, LiveError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(LiveError::Timeout {
                server: self.label.clone(),
                waiting_for: "the whole session (--total-timeout)".into(),
                stderr: String::new(),
            });
        }
        Ok(per_request.min(left))
    }

    /// Sends a request; returns the response text and its parsed envelope fields.
    fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<String, LiveError> {
        let modern = params.get("_meta").is_some();
        for attempt in 0..2 {
            self.next_id += 1;
            let id = self.next_id;
            let text =
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
            let response = self
                .transport
                .call(id, method, &text, self.timeout(timeout)?)?;
            // UnsupportedProtocolVersion that lists the version we sent: the specification
            // says to pick a supported version and retry; ours is supported, so retry once.
            if modern
                && attempt == 0
                && (response.contains("-32022") || response.contains("-32004"))
            {
                let envelope: Option<Value> = serde_json::from_str(&response).ok();
                let error = envelope.as_ref().and_then(|e| e.get("error"));
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
                let ours_supported = error
                    .and_then(|e| e.pointer("/data/supported"))
                    .and_then(Value::as_array)
                    .is_some_and(|list| list.iter().any(|v| v.as_str() == Some(MODERN_VERSION)));
                if matches!(code, Some(-32022 | -32004)) && ours_supported {
                    self.notes.push(format!("the server refused {method} as an unsupported version, then listed {MODERN_VERSION}: retried once"));
                    continue;
                }
            }
            return Ok(response);
        }
        unreachable!("the loop returns on its second pass")
    }

    /// Keeps a response for the capture, on one line: the transcript is JSONL, and raw
    /// newlines can only stand between tokens in valid JSON (an SSE event may carry them).
    fn record(&mut self, text: &str) {
        self.lines.push(if text.contains(['\n', '\r']) {
            text.replace(['\n', '\r'], " ")
        } else {
            text.to_string()
        });
    }

    fn modern_meta(&self, version: &str) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": self.client.capabilities,
            "io.modelcontextprotocol/clientInfo": self.client.info,
        })
    }

    /// Runs the whole session.
    pub fn discover(mut self, choice: &ProtocolChoice) -> Result<Discovered, LiveError> {
        let result = self.run(choice);
        self.notes.extend(self.transport.take_warnings());
        self.transport.close();
        let (era, version) = result?;
        Ok(Discovered {
            transcript: self.lines.join("\n"),
            era,
            protocol_version: version,
            notes: self.notes,
            authorization: None,
        })
    }

    fn run(&mut self, choice: &ProtocolChoice) -> Result<(Era, String), LiveError> {
        let legacy_offer = match choice {
            ProtocolChoice::Version(v) if v != MODERN_VERSION => Some(v.clone()),
            _ => None,
        };
        let era = match choice {
            ProtocolChoice::Legacy => Probe::Legacy(None),
            ProtocolChoice::Version(v) if v != MODERN_VERSION => Probe::Legacy(Some(v.clone())),
            ProtocolChoice::Modern | ProtocolChoice::Version(_) => {
                self.discover_modern(self.limits.request_timeout, true)?
            }
            ProtocolChoice::Auto => self.discover_modern(self.limits.probe_timeout, false)?,
        };
        match era {
            Probe::Modern(capabilities) => {
                self.lists(Era::Modern, MODERN_VERSION, &capabilities)?;
                Ok((Era::Modern, MODERN_VERSION.to_string()))
            }
            Probe::Legacy(version) => {
                let offer = legacy_offer
                    .or(version)
                    .unwrap_or_else(|| LEGACY_VERSIONS[0].to_string());
                let (version, capabilities) = self.initialize(&offer)?;
                self.lists(Era::Legacy, &version, &capabilities)?;
                Ok((Era::Legacy, version))
            }
        }
    }

    /// `server/discover`. With `required`, any failure is an error; as a probe, anything that
    /// is not a recognized modern answer means "legacy" (never keyed to one error code).
    fn discover_modern(&mut self, timeout: Duration, required: bool) -> Result<Probe, LiveError> {
        let params = json!({"_meta": self.modern_meta(MODERN_VERSION)});
        let text = match self.request("server/discover", params, timeout) {
            Ok(text) => text,
            Err(LiveError::Timeout { .. }) if !required => {
                self.notes.push(format!(
                    "no answer to server/discover within {:?}: treated as a legacy server",
                    self.limits.probe_timeout
                ));
                return Ok(Probe::Legacy(None));
            }
            Err(e) => return Err(e),
        };
        let envelope: Envelope<'_> =
            serde_json::from_str(&text).map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!("sent an unreadable server/discover response: {e}"),
            })?;
        if let Some(error) = envelope.error {
            let supported: Vec<String> = error
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            // -32022 (and the release candidates' -32004): a modern server without our
            // version. A dual-era server may list legacy versions it still speaks.
            if matches!(error.code, -32022 | -32004) && !supported.is_empty() {
                if let Some(legacy) = supported
                    .iter()
                    .find(|v| LEGACY_VERSIONS.contains(&v.as_str()))
                {
                    return Ok(Probe::Legacy(Some(legacy.clone())));
                }
                return Err(LiveError::Protocol {
                    server: self.label.clone(),
                    message: format!(
                        "speaks only protocol versions {}; catalock speaks {MODERN_VERSION} and {}",
                        supported.join(", "),
                        LEGACY_VERSIONS.join(", ")
                    ),
                });
            }
            if required || matches!(error.code, -32021 | -32020 | -32003 | -32001) {
                return Err(LiveError::Rpc {
                    server: self.label.clone(),
                    method: "server/discover".into(),
                    code: error.code,
                    message: error.message,
                });
            }
            return Ok(Probe::Legacy(None));
        }
        let Some(result) = envelope.result else {
            return Err(LiveError::Protocol {
                server: self.label.clone(),
                message: "answered server/discover with neither result nor error".into(),
            });
        };
        let discover: Value =
            serde_json::from_str(result.get()).map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!("sent an unreadable server/discover result: {e}"),
            })?;
        let supported: Vec<&str> = discover
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !supported.contains(&MODERN_VERSION) {
            if let Some(legacy) = supported.iter().find(|v| LEGACY_VERSIONS.contains(v)) {
                return Ok(Probe::Legacy(Some(legacy.to_string())));
            }
            if !required && supported.is_empty() {
                return Ok(Probe::Legacy(None));
            }
            return Err(LiveError::Protocol {
                server: self.label.clone(),
                message: format!(
                    "supports protocol versions [{}], none of which catalock speaks",
                    supported.join(", ")
                ),
            });
        }
        self.record(&text);
        self.transport.negotiated(MODERN_VERSION, Era::Modern);
        Ok(Probe::Modern(
            discover
                .get("capabilities")
                .cloned()
                .unwrap_or(json!({}))
                .to_string(),
        ))
    }

    /// The legacy handshake; returns the version the server answered and its capabilities.
    fn initialize(&mut self, offer: &str) -> Result<(String, String), LiveError> {
        let params = json!({"protocolVersion": offer, "capabilities": self.client.capabilities, "clientInfo": self.client.info});
        let text = self.request("initialize", params, self.limits.request_timeout)?;
        let envelope: Envelope<'_> =
            serde_json::from_str(&text).map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!("sent an unreadable initialize response: {e}"),
            })?;
        if let Some(error) = envelope.error {
            return Err(LiveError::Rpc {
                server: self.label.clone(),
                method: "initialize".into(),
                code: error.code,
                message: error.message,
            });
        }
        let result: Value = envelope
            .result
            .map(|r| serde_json::from_str(r.get()))
            .transpose()
            .map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!("sent an unreadable initialize result: {e}"),
            })?
            .ok_or_else(|| LiveError::Protocol {
                server: self.label.clone(),
                message: "answered initialize with neither result nor error".into(),
            })?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !LEGACY_VERSIONS.contains(&version.as_str()) {
            let message = format!(
                "answered initialize with protocol version {version:?}, which catalock does not know"
            );
            if self.limits.strict {
                return Err(LiveError::Protocol {
                    server: self.label.clone(),
                    message,
                });
            }
            self.notes.push(format!("{message}; continuing as {offer}"));
        }
        self.record(&text);
        let settled = if LEGACY_VERSIONS.contains(&version.as_str()) {
            version.as_str()
        } else {
            offer
        };
        self.transport.negotiated(settled, Era::Legacy);
        self.transport.notify(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        )?;
        let capabilities = result
            .get("capabilities")
            .cloned()
            .unwrap_or(json!({}))
            .to_string();
        Ok((version, capabilities))
    }

    /// Lists tools, and prompts and resource templates when the server declares them.
    fn lists(&mut self, era: Era, version: &str, capabilities: &str) -> Result<(), LiveError> {
        let capabilities: Value = serde_json::from_str(capabilities).unwrap_or(json!({}));
        let declared = |key: &str| capabilities.get(key).is_some_and(|v| !v.is_null());
        if declared("tools") {
            self.paginate(era, version, "tools/list")?;
        } else {
            self.notes
                .push("the server declares no tools capability: locked with no tools".to_string());
            self.lines.push(r#"{"tools":[]}"#.to_string());
        }
        if declared("prompts") {
            self.paginate(era, version, "prompts/list")?;
        }
        if declared("resources") {
            self.paginate(era, version, "resources/templates/list")?;
        }
        Ok(())
    }

    /// Follows `nextCursor` until it is absent or null. An empty string is a cursor (the
    /// 2026-07-28 text says so, and servers rely on it); a repeated cursor or too many pages
    /// is an error, since only a broken or lying server produces either.
    fn paginate(&mut self, era: Era, version: &str, method: &str) -> Result<(), LiveError> {
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for page in 1..=self.limits.max_pages {
            let mut params = serde_json::Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), Value::String(c.clone()));
            }
            if era == Era::Modern {
                params.insert("_meta".into(), self.modern_meta(version));
            }
            let text = self.request(method, Value::Object(params), self.limits.request_timeout)?;
            let envelope: Envelope<'_> =
                serde_json::from_str(&text).map_err(|e| LiveError::Protocol {
                    server: self.label.clone(),
                    message: format!("sent an unreadable {method} response: {e}"),
                })?;
            if let Some(error) = envelope.error {
                return Err(LiveError::Rpc {
                    server: self.label.clone(),
                    method: method.into(),
                    code: error.code,
                    message: error.message,
                });
            }
            let Some(result) = envelope.result else {
                return Err(LiveError::Protocol {
                    server: self.label.clone(),
                    message: format!("answered {method} with neither result nor error"),
                });
            };
            let next: PageCursor =
                serde_json::from_str(result.get()).map_err(|e| LiveError::Protocol {
                    server: self.label.clone(),
                    message: format!("sent an unreadable {method} result: {e}"),
                })?;
            self.record(&text);
            match next.next_cursor {
                None | Some(Value::Null) => return Ok(()),
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(LiveError::Protocol {
                            server: self.label.clone(),
                            message: format!(
                                "repeated the {method} cursor {next:?} on page {}: its pagination never ends",
                                page + 1
                            ),
                        });
                    }
                    cursor = Some(next);
                }
                Some(other) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!(
                            "sent a {method} nextCursor that is not a string: {other}"
                        ),
                    });
                }
            }
        }
        Err(LiveError::Protocol {
            server: self.label.clone(),
            message: format!(
                "had more than {} pages of {method} (raise --max-pages if that is real)",
                self.limits.max_pages
            ),
        })
    }
}
