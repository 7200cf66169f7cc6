//! The stdio transport: one JSON-RPC message per line on stdin and stdout.

use std::io::{BufRead, StdinLock, Write};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use crate::protocol::{Incoming, METHOD_NOT_FOUND, Reply, RpcError, Server, Session};
use crate::protocol::{error_text, notification_text, parse_message, request_text};

pub fn run(server: &Server) -> ExitCode {
    let mut stdio = Stdio {
        server,
        input: std::io::stdin().lock(),
        session: Session::default(),
        wrote_anything: false,
        ping_first_done: false,
    };
    while let Some(line) = stdio.read_line() {
        stdio.server.record(&line);
        stdio.process(&line);
    }
    stdio.at_eof();
    ExitCode::SUCCESS
}

struct Stdio<'a> {
    server: &'a Server,
    input: StdinLock<'static>,
    session: Session,
    /// `--garbage-lines` go before the first line written.
    wrote_anything: bool,
    ping_first_done: bool,
}

impl Stdio<'_> {
    /// The next non-blank line, without its line ending; `None` at EOF.
    fn read_line(&mut self) -> Option<String> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match self.input.read_until(b'\n', &mut buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(err) => {
                    eprintln!("fixture: reading stdin: {err}");
                    return None;
                }
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if !line.trim().is_empty() {
                return Some(line.to_string());
            }
        }
    }

    /// Returns (to exit with status 0) unless `--ignore-stdin-eof`.
    fn at_eof(&self) {
        if self.server.args.ignore_stdin_eof {
            eprintln!("fixture: stdin closed; staying alive (--ignore-stdin-eof)");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }

    /// Handles one message (already recorded).
    fn process(&mut self, line: &str) {
        self.server.crash_if_due_on_receive();
        match parse_message(line) {
            Incoming::Request { id, method, params } => {
                if method == "tools/list" && self.server.args.ping_first && !self.ping_first_done {
                    self.ping_first_done = true;
                    self.ping_first();
                }
                let reply = self
                    .server
                    .handle(&mut self.session, &id, &method, params.as_ref());
                if let Reply::Send(response) = reply {
                    self.respond(&response.text);
                }
            }
            // Notifications (`notifications/initialized`, …) and responses to our requests
            // outside `--ping-first` need no answer.
            Incoming::Notification { .. } | Incoming::Response { .. } => {}
            Incoming::Invalid { id, code, message } => {
                self.respond(&error_text(&id, &RpcError::new(code, message)));
            }
        }
    }

    fn respond(&mut self, text: &str) {
        self.server.delay();
        self.write_line(text);
        self.server.response_sent();
    }

    fn write_line(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let mut written = Ok(());
        if self.server.args.garbage_lines && !self.wrote_anything {
            written = out.write_all(b"Server started on stdio\n{not json\n");
        }
        self.wrote_anything = true;
        let written = written
            .and_then(|()| out.write_all(text.as_bytes()))
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(err) = written {
            eprintln!("fixture: writing stdout: {err}");
            std::process::exit(1);
        }
    }

    /// `--ping-first`: a log notification, then a `ping` and a `sampling/createMessage`
    /// request, each waited for.
    fn ping_first(&mut self) {
        self.write_line(&notification_text(
            "notifications/message",
            r#"{"level":"info","logger":"fixture","data":"about to list tools"}"#,
        ));

        self.write_line(&request_text(r#""fixture-ping-1""#, "ping", "{}"));
        match self.wait_for_response("fixture-ping-1") {
            Incoming::Response {
                is_result: true, ..
            } => eprintln!("fixture: client answered ping"),
            _ => eprintln!("fixture: client answered ping with an error"),
        }

        self.write_line(&request_text(
            r#""fixture-sampling-1""#,
            "sampling/createMessage",
            r#"{"messages":[{"role":"user","content":{"type":"text","text":"Say hi"}}],"maxTokens":16}"#,
        ));
        match self.wait_for_response("fixture-sampling-1") {
            Incoming::Response {
                error_code: Some(METHOD_NOT_FOUND),
                ..
            } => eprintln!("fixture: client refused sampling/createMessage with -32601"),
            Incoming::Response { error_code, .. } => eprintln!(
                "fixture: UNEXPECTED answer to sampling/createMessage (error code {error_code:?}; expected -32601)"
            ),
            _ => unreachable!("wait_for_response returns responses"),
        }
    }

    /// Reads (and handles) messages until the response with this id arrives; exits at EOF.
    fn wait_for_response(&mut self, id: &str) -> Incoming {
        loop {
            let Some(line) = self.read_line() else {
                eprintln!("fixture: stdin closed while waiting for the answer to {id}");
                self.at_eof();
                std::process::exit(0);
            };
            self.server.record(&line);
            match parse_message(&line) {
                response @ Incoming::Response { .. } => {
                    if matches!(&response, Incoming::Response { id: Value::String(got), .. } if got == id)
                    {
                        return response;
                    }
                }
                _ => self.process(&line),
            }
        }
    }
}
