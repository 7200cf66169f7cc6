//! The 2024-11-05 HTTP+SSE transport (deprecated since 2025-03-26, still served by some
//! servers): a GET opens an event stream whose first event, `endpoint`, names the URL to POST
//! messages to; every response comes back on the stream.
//!
//! Used only when the streamable POST is refused (400, 404 or 405 without a JSON-RPC body),
//! as the specification's backward-compatibility section says.

use std::io::BufReader;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use super::http::{HttpSpec, redact_url};
use super::sse::{Event, EventReader, SseError};
use super::{Limits, LiveError, Routed, Transport, route};

pub struct SseLegacyTransport {
    agent: ureq::Agent,
    spec: HttpSpec,
    endpoint: String,
    events: Receiver<Result<Event, String>>,
    limits: Limits,
    label: String,
}

/// `endpoint` resolved against the stream's URL; only the same origin is accepted, since the
/// user's credentials go with every POST.
fn resolve(base: &str, endpoint: &str) -> Option<String> {
    let (scheme, rest) = base.split_once("://")?;
    let origin = format!("{scheme}://{}", rest.split('/').next()?);
    if endpoint.starts_with('/') {
        return Some(format!("{origin}{endpoint}"));
    }
    if endpoint.starts_with(&format!("{origin}/")) {
        return Some(endpoint.to_string());
    }
    None
}

impl SseLegacyTransport {
    pub fn open(spec: &HttpSpec, limits: &Limits) -> Result<SseLegacyTransport, LiveError> {
        let label = spec.label.clone();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(limits.total_timeout))
            .build()
            .into();
        let mut request = agent.get(&spec.url).header("Accept", "text/event-stream");
        for (name, value) in &spec.headers {
            request = request.header(name, value);
        }
        let response = request.call().map_err(|e| LiveError::Protocol {
            server: label.clone(),
            message: format!("could not open its event stream: {e}"),
        })?;
        let status = response.status().as_u16();
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        if status != 200 || !is_stream {
            return Err(LiveError::Protocol {
                server: label,
                message: format!(
                    "refused both streamable HTTP and the 2024-11-05 HTTP+SSE transport (GET answered {status}); is the URL the MCP endpoint?"
                ),
            });
        }
        let (sender, events) = sync_channel(64);
        let limit = limits.max_message;
        std::thread::spawn(move || {
            let mut reader =
                EventReader::new(BufReader::new(response.into_body().into_reader()), limit);
            loop {
                let item = match reader.next_event() {
                    Ok(Some(event)) => Ok(event),
                    Ok(None) => Err("closed its event stream".to_string()),
                    Err(SseError::TooLong(limit)) => Err(format!(
                        "sent an event longer than {limit} bytes (raise --max-message-bytes)"
                    )),
                    Err(SseError::Io(e)) => Err(format!("broke its event stream: {e}")),
                };
                let end = item.is_err();
                if sender.send(item).is_err() || end {
                    return;
                }
            }
        });
        let deadline = Instant::now() + limits.request_timeout;
        let endpoint = loop {
            match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Ok(event)) if event.name == "endpoint" => break event.data.trim().to_string(),
                Ok(Ok(_)) => continue,
                Ok(Err(why)) => {
                    return Err(LiveError::Protocol {
                        server: label,
                        message: why,
                    });
                }
                Err(_) => {
                    return Err(LiveError::Timeout {
                        server: label,
                        waiting_for: "the endpoint event of its HTTP+SSE stream".into(),
                        stderr: String::new(),
                    });
                }
            }
        };
        let endpoint = resolve(&spec.url, &endpoint).ok_or_else(|| LiveError::Protocol {
            server: label.clone(),
            message: format!(
                "named a message endpoint on another origin ({}); credentials are not sent there",
                redact_url(&endpoint)
            ),
        })?;
        Ok(SseLegacyTransport {
            agent,
            spec: spec.clone(),
            endpoint,
            events,
            limits: limits.clone(),
            label,
        })
    }

    fn post(&self, body: &str) -> Result<(), LiveError> {
        let mut request = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json");
        for (name, value) in &self.spec.headers {
            request = request.header(name, value);
        }
        let mut response = request
            .config()
            .timeout_global(Some(self.limits.request_timeout))
            .build()
            .send(body)
            .map_err(|e| LiveError::Protocol {
                server: self.label.clone(),
                message: format!("refused a message: {e}"),
            })?;
        let status = response.status().as_u16();
        super::drain(&mut response);
        if !(200..300).contains(&status) {
            return Err(LiveError::Protocol {
                server: self.label.clone(),
                message: format!("answered a message POST with HTTP {status}"),
            });
        }
        Ok(())
    }
}

impl Transport for SseLegacyTransport {
    fn call(
        &mut self,
        id: u64,
        method: &str,
        request: &str,
        timeout: Duration,
    ) -> Result<String, LiveError> {
        self.post(request)?;
        let deadline = Instant::now() + timeout;
        loop {
            let event = match self
                .events
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Ok(event)) => event,
                Ok(Err(why)) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!("{why} before answering {method}"),
                    });
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(LiveError::Timeout {
                        server: self.label.clone(),
                        waiting_for: method.to_string(),
                        stderr: String::new(),
                    });
                }
            };
            if event.name != "message" {
                continue;
            }
            match route(&event.data, id) {
                Routed::Response => return Ok(event.data),
                Routed::Reply(reply) => self.post(&reply)?,
                Routed::Ignore => {}
                Routed::Malformed(why) => {
                    return Err(LiveError::malformed(&self.label, method, &why));
                }
            }
        }
    }

    fn notify(&mut self, message: &str) -> Result<(), LiveError> {
        self.post(message)
    }

    fn close(&mut self) {}

    fn take_warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base = "http://127.0.0.1:3001/sse";
        assert_eq!(
            super::resolve(base, "/message?sessionId=1").as_deref(),
            Some("http://127.0.0.1:3001/message?sessionId=1")
        );
        assert_eq!(
            super::resolve(base, "http://127.0.0.1:3001/m").as_deref(),
            Some("http://127.0.0.1:3001/m")
        );
        assert_eq!(super::resolve(base, "http://evil.example/m"), None);
    }
}
