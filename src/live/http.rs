//! The streamable HTTP transport (2025-03-26 onward, both eras).
//!
//! Every message is a POST to the one MCP endpoint; the answer is JSON or an SSE stream
//! (multi-line `data`, comments, empty priming events, server requests before the response).
//! Legacy sessions carry `Mcp-Session-Id` and end with a DELETE; modern requests carry
//! `MCP-Protocol-Version` and `Mcp-Method`. The user's headers (credentials) go on every
//! request to the endpoint and nowhere else: redirects are not followed, and header values
//! never appear in a message.

use std::io::BufReader;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Era, Limits, LiveError, Routed, Transport, route};

/// How to reach an HTTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSpec {
    pub url: String,
    /// `Name: value` pairs sent on every request (values are secrets).
    pub headers: Vec<(String, String)>,
    /// How messages name the server: never built from expanded `${VAR}` values.
    pub label: String,
}

pub struct HttpTransport {
    agent: ureq::Agent,
    spec: HttpSpec,
    limits: Limits,
    session: Option<String>,
    /// The version for `MCP-Protocol-Version` once known (legacy: after initialize).
    version: Option<String>,
    label: String,
    warnings: Vec<String>,
    closed: bool,
}

/// The URL without credentials or query, for messages and the lockfile.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

impl HttpTransport {
    pub fn new(spec: &HttpSpec, limits: &Limits) -> Result<HttpTransport, LiveError> {
        let label = spec.label.clone();
        if !(spec.url.starts_with("http://") || spec.url.starts_with("https://")) {
            return Err(LiveError::Protocol {
                server: label,
                message: "is not an http:// or https:// URL".into(),
            });
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(limits.request_timeout))
            .build()
            .into();
        Ok(HttpTransport {
            agent,
            spec: spec.clone(),
            limits: limits.clone(),
            session: None,
            version: None,
            label,
            warnings: Vec::new(),
            closed: false,
        })
    }

    fn post(
        &self,
        method: &str,
        body: &str,
        timeout: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, LiveError> {
        let mut request = self
            .agent
            .post(&self.spec.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        // Mcp-Method mirrors a request's or notification's method; a response has none.
        if !method.is_empty() {
            request = request.header("Mcp-Method", method);
        }
        let version = self.version.clone().or_else(|| modern_version_of(body));
        if let Some(v) = &version {
            request = request.header("MCP-Protocol-Version", v);
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        for (name, value) in &self.spec.headers {
            request = request.header(name, value);
        }
        request
            .config()
            .timeout_global(Some(timeout))
            .build()
            .send(body)
            .map_err(|e| self.transport_error(method, &e))
    }

    fn transport_error(&self, method: &str, e: &ureq::Error) -> LiveError {
        match e {
            ureq::Error::Timeout(_) => LiveError::Timeout {
                server: self.label.clone(),
                waiting_for: method.to_string(),
                stderr: String::new(),
            },
            other => LiveError::Protocol {
                server: self.label.clone(),
                message: format!("could not be reached for {method}: {other}"),
            },
        }
    }

    /// Reads a body up to the message cap.
    fn body_text(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        method: &str,
    ) -> Result<String, LiveError> {
        response
            .body_mut()
            .with_config()
            .limit(self.limits.max_message as u64)
            .read_to_string()
            .map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!(
                    "sent an unreadable {method} response body (over --max-message-bytes?): {e}"
                ),
            })
    }

    /// What the server demands of an anonymous client, asked with one request without the
    /// user's headers: `None` when it answers without demanding authorization. Recorded in
    /// the lockfile (scheme, scope, authorization servers), never the credential.
    pub fn authorization_demanded(&self) -> Option<Value> {
        let body =
            json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": super::MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }}})
            .to_string();
        let mut response = self
            .agent
            .post(&self.spec.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Method", "server/discover")
            .header("MCP-Protocol-Version", super::MODERN_VERSION)
            .send(&body)
            .ok()?;
        let status = response.status().as_u16();
        super::drain(&mut response);
        if status != 401 && status != 403 {
            return None;
        }
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let scheme = challenge
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string();
        let params = parse_challenge(&challenge);
        let mut demand = serde_json::Map::new();
        demand.insert("scheme".into(), Value::String(scheme));
        if let Some((_, scope)) = params.iter().find(|(k, _)| k == "scope") {
            demand.insert("scope".into(), Value::String(scope.clone()));
        }
        if let Some((_, metadata)) = params.iter().find(|(k, _)| k == "resource_metadata")
            && let Some((servers, scopes)) = self.protected_resource(metadata)
        {
            demand.insert("authorization_servers".into(), json!(servers));
            demand.insert("scopes_supported".into(), json!(scopes));
        }
        Some(Value::Object(demand))
    }

    /// 401 and 403: what the server demands, from `WWW-Authenticate` and its protected-
    /// resource metadata. Never prints the credential.
    fn auth_error(&self, status: u16, response: &ureq::http::Response<ureq::Body>) -> LiveError {
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let params = parse_challenge(&challenge);
        let sent = !self
            .spec
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
        let mut demands = Vec::new();
        if let Some(scope) = params.iter().find(|(k, _)| k == "scope") {
            demands.push(format!("scope {:?}", scope.1));
        }
        if let Some(error) = params.iter().find(|(k, _)| k == "error") {
            demands.push(format!("error {:?}", error.1));
        }
        if let Some(metadata) = params
            .iter()
            .find(|(k, _)| k == "resource_metadata")
            .map(|(_, v)| v.clone())
            && let Some((servers, scopes)) = self.protected_resource(&metadata)
        {
            if !servers.is_empty() {
                demands.push(format!("authorization server {}", servers.join(", ")));
            }
            if !scopes.is_empty() && !params.iter().any(|(k, _)| k == "scope") {
                demands.push(format!("scopes {}", scopes.join(" ")));
            }
        }
        LiveError::Auth {
            server: self.label.clone(),
            status,
            credential_sent: !sent,
            demands: if demands.is_empty() {
                challenge.split(' ').next().unwrap_or("").to_string()
            } else {
                demands.join(", ")
            },
        }
    }

    /// `authorization_servers` and `scopes_supported` from protected-resource metadata
    /// (fetched without credentials: it is public, and the URL came from the server).
    fn protected_resource(&self, url: &str) -> Option<(Vec<String>, Vec<String>)> {
        let mut response = self
            .agent
            .get(url)
            .header("Accept", "application/json")
            .call()
            .ok()?;
        if response.status().as_u16() != 200 {
            return None;
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        let strings = |key: &str| -> Vec<String> {
            value
                .get(key)
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        Some((
            strings("authorization_servers"),
            strings("scopes_supported"),
        ))
    }

    /// Reads an SSE stream until the response to `id` arrives, answering server requests.
    fn read_stream(
        &mut self,
        response: ureq::http::Response<ureq::Body>,
        id: u64,
        method: &str,
    ) -> Result<String, LiveError> {
        let reader = BufReader::new(response.into_body().into_reader());
        let mut events = super::sse::EventReader::new(reader, self.limits.max_message);
        loop {
            let event = match events.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!("closed its {method} event stream without a response"),
                    });
                }
                Err(super::sse::SseError::TooLong(limit)) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!(
                            "sent an event longer than {limit} bytes (raise --max-message-bytes)"
                        ),
                    });
                }
                Err(super::sse::SseError::Io(e))
                    if e.kind() == std::io::ErrorKind::TimedOut
                        || e.to_string().contains("timeout") =>
                {
                    return Err(LiveError::Timeout {
                        server: self.label.clone(),
                        waiting_for: method.to_string(),
                        stderr: String::new(),
                    });
                }
                Err(super::sse::SseError::Io(e)) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!("broke its {method} event stream: {e}"),
                    });
                }
            };
            match route(&event.data, id) {
                Routed::Response => return Ok(event.data),
                Routed::Reply(reply) => self.post_reply(&reply)?,
                Routed::Ignore => {}
                Routed::Malformed(why) => {
                    return Err(LiveError::malformed(&self.label, method, &why));
                }
            }
        }
    }

    /// Answers a server request received on a stream (legacy `ping`).
    fn post_reply(&mut self, reply: &str) -> Result<(), LiveError> {
        let mut response = self.post("", reply, self.limits.request_timeout)?;
        super::drain(&mut response);
        Ok(())
    }
}

/// `_meta["io.modelcontextprotocol/protocolVersion"]` of a request, for the header.
fn modern_version_of(body: &str) -> Option<String> {
    if !body.contains("io.modelcontextprotocol/protocolVersion") {
        return None;
    }
    let value: Value = serde_json::from_str(body).ok()?;
    value
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The auth-params of a `WWW-Authenticate: Bearer k="v", k2=v2` challenge.
fn parse_challenge(challenge: &str) -> Vec<(String, String)> {
    let rest = challenge.trim();
    let rest = rest.split_once(' ').map(|(_, r)| r).unwrap_or("");
    let mut out = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let value: String = if chars.peek() == Some(&'"') {
            chars.next();
            let mut v = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => v.extend(chars.next()),
                    '"' => break,
                    c => v.push(c),
                }
            }
            v
        } else {
            chars
                .by_ref()
                .take_while(|c| *c != ',')
                .collect::<String>()
                .trim()
                .to_string()
        };
        out.push((key.trim().to_string(), value));
    }
    out
}

impl Transport for HttpTransport {
    fn call(
        &mut self,
        id: u64,
        method: &str,
        request: &str,
        timeout: Duration,
    ) -> Result<String, LiveError> {
        let mut response = self.post(method, request, timeout)?;
        let status = response.status().as_u16();
        if status == 401 || status == 403 {
            return Err(self.auth_error(status, &response));
        }
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(redact_url)
                .unwrap_or_default();
            return Err(LiveError::Protocol {
                server: self.label.clone(),
                message: format!(
                    "redirected {method} ({status}) to {to}; pass that URL (credentials are not sent across redirects)"
                ),
            });
        }
        if method == "initialize"
            && let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            self.session = Some(session.to_string());
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if status == 200 && content_type.starts_with("text/event-stream") {
            return self.read_stream(response, id, method);
        }
        let body = self.body_text(&mut response, method)?;
        // A JSON-RPC answer (even with a 4xx status: modern errors come as 400 + body) is
        // the response; anything else becomes an error response, so the session decides
        // (an HTML 404 to server/discover means "legacy server", say).
        if content_type.starts_with("application/json")
            && let Routed::Response = route(&body, id)
        {
            return Ok(body);
        }
        let snippet: String = body
            .chars()
            .take(120)
            .collect::<String>()
            .replace(['\n', '\r'], " ");
        Ok(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32000 - i64::from(status), "message": format!("HTTP {status} {}", snippet.trim())}
        })
        .to_string())
    }

    fn notify(&mut self, message: &str) -> Result<(), LiveError> {
        let method = serde_json::from_str::<Value>(message)
            .ok()
            .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        let mut response = self.post(&method, message, self.limits.request_timeout)?;
        let status = response.status().as_u16();
        super::drain(&mut response);
        if status == 401 || status == 403 {
            return Err(self.auth_error(status, &response));
        }
        if !(200..300).contains(&status) {
            self.warnings
                .push(format!("the server answered {method} with HTTP {status}"));
        }
        Ok(())
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        // Legacy sessions end with a DELETE; 405 means the server keeps none.
        if let Some(session) = self.session.take() {
            let mut request = self
                .agent
                .delete(&self.spec.url)
                .header("Mcp-Session-Id", &session);
            if let Some(version) = &self.version {
                request = request.header("MCP-Protocol-Version", version);
            }
            for (name, value) in &self.spec.headers {
                request = request.header(name, value);
            }
            let _ = request.call();
        }
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn negotiated(&mut self, version: &str, era: Era) {
        // 2025-03-26 servers predate the header; 2025-06-18 onward require it.
        if era == Era::Modern || version != "2025-03-26" && version != "2024-11-05" {
            self.version = Some(version.to_string());
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed() {
        let params = parse_challenge(
            r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="files:read a", error=insufficient_scope"#,
        );
        assert_eq!(
            params,
            vec![
                (
                    "resource_metadata".to_string(),
                    "https://x/.well-known/oauth-protected-resource".to_string()
                ),
                ("scope".to_string(), "files:read a".to_string()),
                ("error".to_string(), "insufficient_scope".to_string()),
            ]
        );
    }

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            redact_url("https://user:secret@mcp.example.com:8443/mcp?token=abc#x"),
            "https://mcp.example.com:8443/mcp"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:3001/mcp"),
            "http://127.0.0.1:3001/mcp"
        );
    }
}
