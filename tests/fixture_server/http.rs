//! Streamable HTTP at `/mcp`: a minimal HTTP/1.1 server on `std::net`, one thread per
//! connection, keep-alive, `Content-Length` (or chunked) request bodies. JSON responses carry
//! `Content-Length`; `--sse` responses are chunked `text/event-stream`.

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::EraArg;
use crate::protocol::{
    Era, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, Incoming, LEGACY_VERSIONS,
    META_PROTOCOL_VERSION, METHOD_NOT_FOUND, MODERN_METHODS, Obj, PARSE_ERROR, Reply, RpcError,
    Server, Session, UNSUPPORTED_PROTOCOL_VERSION, append_line, error_text, json_string, meta,
    notification_text, open_append, parse_message, request_text,
};

const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;
const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
const PRM_ROOT_PATH: &str = "/.well-known/oauth-protected-resource";

pub fn run(server: Arc<Server>, addr: SocketAddr) -> io::Result<()> {
    if addr.ip() != IpAddr::V4(Ipv4Addr::LOCALHOST) {
        return Err(io::Error::other(format!(
            "refusing to bind {addr}: only 127.0.0.1 is allowed"
        )));
    }
    let listener = TcpListener::bind(addr)?;
    let port = listener.local_addr()?.port();
    let record_http = match &server.args.record_http {
        Some(path) => Some(Mutex::new(open_append(path).map_err(io::Error::other)?)),
        None => None,
    };
    let http = Arc::new(Http {
        server,
        port,
        sessions: Mutex::new(HashSet::new()),
        record_http,
        ping_first_done: AtomicBool::new(false),
        session_counter: AtomicU64::new(0),
    });
    eprintln!("fixture: listening on http://127.0.0.1:{port}/mcp");
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                let http = http.clone();
                std::thread::spawn(move || http.connection(stream));
            }
            Err(err) => eprintln!("fixture: accept: {err}"),
        }
    }
    Ok(())
}

struct Http {
    server: Arc<Server>,
    port: u16,
    /// Live legacy sessions.
    sessions: Mutex<HashSet<String>>,
    record_http: Option<Mutex<File>>,
    ping_first_done: AtomicBool,
    session_counter: AtomicU64,
}

struct Request {
    method: String,
    path: String,
    /// Names in lower case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, lower_name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| name == lower_name)
            .map(|(_, value)| value.as_str())
    }
}

enum Body {
    Empty,
    Json(String),
    Text(String),
    /// Events of a `text/event-stream`, each sent as one chunk.
    Events(Vec<String>),
}

struct HttpResponse {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Body,
    /// Carries a JSON-RPC response (for `--slow-ms` and `--crash-after`).
    jsonrpc: bool,
}

impl HttpResponse {
    fn new(status: u16, body: Body) -> HttpResponse {
        HttpResponse {
            status,
            headers: Vec::new(),
            body,
            jsonrpc: false,
        }
    }

    /// A JSON-RPC error without an id (transport-level rejections).
    fn rpc_error(status: u16, code: i64, message: &str) -> HttpResponse {
        HttpResponse::new(
            status,
            Body::Json(error_text("null", &RpcError::new(code, message))),
        )
    }
}

enum Answer {
    Respond(HttpResponse),
    /// Never answer; hold the connection until the client closes it.
    Hang,
}

impl Http {
    fn connection(&self, stream: TcpStream) {
        let Ok(read_half) = stream.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(read_half);
        let mut writer = stream;
        loop {
            let request = match read_request(&mut reader, &mut writer) {
                Ok(Some(request)) => request,
                Ok(None) => return,
                Err(err) => {
                    let response = HttpResponse::new(400, Body::Text(format!("{err}\n")));
                    let _ = write_response(&mut writer, &response, true);
                    return;
                }
            };
            let close = request
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            match self.route(&request) {
                Answer::Hang => {
                    let mut sink = [0u8; 4096];
                    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                    return;
                }
                Answer::Respond(response) => {
                    if response.jsonrpc {
                        self.server.delay();
                    }
                    if write_response(&mut writer, &response, close).is_err() {
                        return;
                    }
                    if response.jsonrpc {
                        self.server.response_sent();
                    }
                    if close {
                        return;
                    }
                }
            }
        }
    }

    fn route(&self, request: &Request) -> Answer {
        self.record_http(request);
        let path = request.path.split('?').next().unwrap_or("");
        if self.server.args.auth_token.is_some()
            && request.method == "GET"
            && (path == PRM_PATH || path == PRM_ROOT_PATH)
        {
            let port = self.port;
            let body = format!(
                r#"{{"resource":"http://127.0.0.1:{port}/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["tools:read"]}}"#
            );
            return Answer::Respond(HttpResponse::new(200, Body::Json(body)));
        }
        if path != "/mcp" {
            return Answer::Respond(HttpResponse::new(404, Body::Text("Not Found\n".into())));
        }
        if let Some(response) = self.check_auth(request) {
            return Answer::Respond(response);
        }
        match request.method.as_str() {
            "POST" => self.post(request),
            "DELETE" => Answer::Respond(self.delete(request)),
            _ => {
                let mut response =
                    HttpResponse::new(405, Body::Text("Method Not Allowed\n".into()));
                response.headers.push(("Allow", "POST, DELETE".into()));
                Answer::Respond(response)
            }
        }
    }

    fn check_auth(&self, request: &Request) -> Option<HttpResponse> {
        let token = self.server.args.auth_token.as_ref()?;
        let sent = request.header("authorization");
        let valid = sent
            .and_then(|v| v.split_once(' '))
            .is_some_and(|(scheme, value)| {
                scheme.eq_ignore_ascii_case("bearer") && value.trim() == token
            });
        if valid {
            return None;
        }
        let port = self.port;
        let params =
            format!(r#"resource_metadata="http://127.0.0.1:{port}{PRM_PATH}", scope="tools:read""#);
        let (challenge, description) = match sent {
            None => (format!("Bearer {params}"), "Missing Authorization header"),
            Some(_) => (
                format!(r#"Bearer error="invalid_token", {params}"#),
                "Invalid access token",
            ),
        };
        let body = Obj::new()
            .str("error", "invalid_token")
            .str("error_description", description)
            .finish();
        let mut response = HttpResponse::new(401, Body::Json(body));
        response.headers.push(("WWW-Authenticate", challenge));
        Some(response)
    }

    fn post(&self, request: &Request) -> Answer {
        let Ok(text) = std::str::from_utf8(&request.body) else {
            return Answer::Respond(HttpResponse::rpc_error(400, PARSE_ERROR, "Parse error"));
        };
        self.server.record(text);
        self.server.crash_if_due_on_receive();
        let (id, method, params) = match parse_message(text) {
            Incoming::Invalid { id, code, message } => {
                let mut response = HttpResponse::new(
                    400,
                    Body::Json(error_text(&id, &RpcError::new(code, message))),
                );
                response.jsonrpc = true;
                return Answer::Respond(response);
            }
            Incoming::Notification { method, params } => {
                let era = self.server.request_era(&method, params.as_ref());
                if era == Era::Legacy
                    && let Err(response) = self.check_session(request)
                {
                    return Answer::Respond(response);
                }
                return Answer::Respond(HttpResponse::new(202, Body::Empty));
            }
            Incoming::Response { .. } => {
                return Answer::Respond(HttpResponse::new(202, Body::Empty));
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        let params = params.as_ref();
        let era = self.server.request_era(&method, params);
        let mut session = Session::default();
        match era {
            Era::Modern => {
                if MODERN_METHODS.contains(&method.as_str())
                    && let Err(error) = check_modern_headers(request, &method, params)
                {
                    let mut response = HttpResponse::new(400, Body::Json(error_text(&id, &error)));
                    response.jsonrpc = true;
                    return Answer::Respond(response);
                }
            }
            Era::Legacy if method != "initialize" => {
                if let Err(response) = self
                    .check_session(request)
                    .and_then(|()| self.check_legacy_version_header(request))
                {
                    return Answer::Respond(response);
                }
                session.initialized = true;
            }
            Era::Legacy => {}
        }

        let response = match self.server.handle(&mut session, &id, &method, params) {
            Reply::Hang => return Answer::Hang,
            Reply::Send(response) => response,
        };
        let status = match (response.era, response.error) {
            (Era::Modern, Some(METHOD_NOT_FOUND)) => 404,
            (
                Era::Modern,
                Some(
                    INVALID_PARAMS
                    | UNSUPPORTED_PROTOCOL_VERSION
                    | HEADER_MISMATCH
                    | PARSE_ERROR
                    | INVALID_REQUEST
                    | -32021,
                ),
            ) => 400,
            _ => 200,
        };
        let mut headers = Vec::new();
        if response.era == Era::Legacy && method == "initialize" && response.error.is_none() {
            let session_id = self.new_session_id();
            self.lock_sessions().insert(session_id.clone());
            headers.push(("Mcp-Session-Id", session_id));
        }
        let body = if status == 200 && self.server.args.sse {
            let prelude = if method == "tools/list"
                && self.server.args.ping_first
                && !self.ping_first_done.swap(true, Ordering::SeqCst)
            {
                ping_first_messages()
            } else {
                Vec::new()
            };
            Body::Events(sse_events(&prelude, &response.text))
        } else {
            Body::Json(response.text)
        };
        Answer::Respond(HttpResponse {
            status,
            headers,
            body,
            jsonrpc: true,
        })
    }

    fn delete(&self, request: &Request) -> HttpResponse {
        if self.server.args.era == EraArg::Modern {
            let mut response = HttpResponse::new(405, Body::Text("Method Not Allowed\n".into()));
            response.headers.push(("Allow", "POST".into()));
            return response;
        }
        if let Err(response) = self.check_session(request) {
            return response;
        }
        if let Some(id) = request.header("mcp-session-id") {
            self.lock_sessions().remove(id);
        }
        HttpResponse::new(200, Body::Empty)
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Legacy: `Mcp-Session-Id` is required (400) and must name a live session (404).
    fn check_session(&self, request: &Request) -> Result<(), HttpResponse> {
        match request.header("mcp-session-id") {
            None => Err(HttpResponse::rpc_error(
                400,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            )),
            Some(id) if self.lock_sessions().contains(id) => Ok(()),
            Some(_) => Err(HttpResponse::rpc_error(404, -32001, "Session not found")),
        }
    }

    /// Legacy: an `MCP-Protocol-Version` header, when sent, must name a legacy version.
    fn check_legacy_version_header(&self, request: &Request) -> Result<(), HttpResponse> {
        match request.header("mcp-protocol-version") {
            Some(version)
                if !LEGACY_VERSIONS.contains(&version)
                    && self.server.args.legacy_version.as_deref() != Some(version) =>
            {
                Err(HttpResponse::rpc_error(
                    400,
                    -32000,
                    &format!("Bad Request: Unsupported protocol version: {version}"),
                ))
            }
            _ => Ok(()),
        }
    }

    fn new_session_id(&self) -> String {
        let n = self.session_counter.fetch_add(1, Ordering::SeqCst);
        let a = RandomState::new().hash_one(n);
        let b = RandomState::new().hash_one(std::time::SystemTime::now());
        format!("{a:016x}{b:016x}")
    }

    fn record_http(&self, request: &Request) {
        let Some(file) = &self.record_http else {
            return;
        };
        let mut headers = serde_json::Map::new();
        for (name, value) in &request.headers {
            let merged = match headers.get(name).and_then(Value::as_str) {
                Some(before) => format!("{before}, {value}"),
                None => value.clone(),
            };
            headers.insert(name.clone(), Value::String(merged));
        }
        let line = serde_json::json!({
            "method": request.method,
            "path": request.path,
            "headers": headers,
            "body": String::from_utf8_lossy(&request.body),
        });
        append_line(file, &line.to_string());
    }
}

/// Modern: `MCP-Protocol-Version` must equal the `_meta` version; `Mcp-Method`, when sent,
/// must equal the method. (A missing `_meta` version is the handler's -32602.)
fn check_modern_headers(
    request: &Request,
    method: &str,
    params: Option<&Value>,
) -> Result<(), RpcError> {
    let mismatch = |header: &str, expected: &str, received: Option<&str>| {
        let received = received.map_or("null".to_string(), json_string);
        RpcError {
            code: HEADER_MISMATCH,
            message: format!("Header mismatch: {header}"),
            data: Some(
                Obj::new()
                    .str("header", header)
                    .str("expected", expected)
                    .raw("received", &received)
                    .finish(),
            ),
        }
    };
    let meta_version = meta(params)
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    if let Some(version) = meta_version {
        let header = request.header("mcp-protocol-version");
        if header != Some(version) {
            return Err(mismatch("MCP-Protocol-Version", version, header));
        }
    }
    if let Some(header) = request.header("mcp-method")
        && header != method
    {
        return Err(mismatch("Mcp-Method", method, Some(header)));
    }
    Ok(())
}

/// `--ping-first` over SSE: sent before the first `tools/list` response, not waited for.
fn ping_first_messages() -> Vec<String> {
    vec![
        notification_text(
            "notifications/message",
            r#"{"level":"info","logger":"fixture","data":"about to list tools"}"#,
        ),
        request_text(r#""fixture-ping-1""#, "ping", "{}"),
        request_text(
            r#""fixture-sampling-1""#,
            "sampling/createMessage",
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"Say hi"}}],"maxTokens":16}"#,
        ),
    ]
}

/// A priming event (id, empty data), a comment, the prelude messages, then the response
/// split over two `data:` lines (joined with a newline, which JSON ignores between tokens).
fn sse_events(prelude: &[String], response: &str) -> Vec<String> {
    let mut events = vec![
        "id: 1\ndata:\n\n".to_string(),
        ": keepalive\n\n".to_string(),
    ];
    let mut next_id = 2;
    for message in prelude {
        events.push(format!(
            "event: message\nid: {next_id}\ndata: {message}\n\n"
        ));
        next_id += 1;
    }
    let (first, second) = split_after_first_member(response);
    events.push(format!(
        "event: message\nid: {next_id}\ndata: {first}\ndata: {second}\n\n"
    ));
    events
}

/// Splits JSON text after the first comma that is outside strings.
fn split_after_first_member(json: &str) -> (&str, &str) {
    let mut in_string = false;
    let mut escaped = false;
    for (i, b) in json.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b',' {
            return json.split_at(i + 1);
        }
    }
    (json, "")
}

/// Reads one request; `None` when the client closed the connection before a new one.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(io::Error::other("bad request line"));
    };
    let (method, path) = (method.to_string(), path.to_string());

    let mut headers = Vec::new();
    let mut header_bytes = 0;
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        header_bytes += n;
        if n == 0 || header_bytes > MAX_HEADER_BYTES {
            return Err(io::Error::other("truncated or oversized headers"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(io::Error::other("bad header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };

    if request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        writer.flush()?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let length: usize = match request.header("content-length") {
            Some(v) => v
                .parse()
                .map_err(|_| io::Error::other("bad Content-Length"))?,
            None => 0,
        };
        if length > MAX_BODY_BYTES {
            return Err(io::Error::other("body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Some(Request { body, ..request }))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size = line.trim().split(';').next().unwrap_or("");
        let size =
            usize::from_str_radix(size, 16).map_err(|_| io::Error::other("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                line.clear();
                if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(io::Error::other("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        line.clear();
        reader.read_line(&mut line)?;
    }
}

fn write_response(writer: &mut TcpStream, response: &HttpResponse, close: bool) -> io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Unknown",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", response.status);
    let content_type = match &response.body {
        Body::Empty => None,
        Body::Json(_) => Some("application/json"),
        Body::Text(_) => Some("text/plain; charset=utf-8"),
        Body::Events(_) => Some("text/event-stream"),
    };
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    match &response.body {
        Body::Events(events) => {
            head.push_str("Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
            writer.write_all(head.as_bytes())?;
            for event in events {
                writer.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())?;
                writer.flush()?;
            }
            writer.write_all(b"0\r\n\r\n")?;
        }
        Body::Empty => {
            head.push_str("Content-Length: 0\r\n\r\n");
            writer.write_all(head.as_bytes())?;
        }
        Body::Json(text) | Body::Text(text) => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", text.len()));
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(text.as_bytes());
            writer.write_all(&bytes)?;
        }
    }
    writer.flush()
}
