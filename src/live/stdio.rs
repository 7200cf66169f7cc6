//! The stdio transport: the server is a child process speaking newline-delimited JSON-RPC.
//!
//! stdout is read on a thread into a channel (so every wait has a deadline), with a cap on
//! line length; stderr is drained on another thread into a bounded tail that errors quote.
//! The child leads its own process group, so shutdown (close stdin, wait, SIGTERM, SIGKILL)
//! reaches the grandchildren that `npx` and `uvx` spawn, and none is left behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Limits, LiveError, Transport};

/// How to start a stdio server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioSpec {
    pub command: String,
    pub args: Vec<String>,
    /// Extra environment for the child (values are secrets: never printed or recorded).
    pub env: Vec<(String, String)>,
    pub cwd: Option<std::path::PathBuf>,
    /// How messages name the server: never built from expanded `${VAR}` values.
    pub label: String,
}

/// What the stdout reader thread reports.
enum Event {
    Message(String),
    /// A line that is not JSON (some servers print banners); its start, for the warning.
    Skipped(String),
    /// A line longer than the cap, discarded.
    TooLong(usize),
    Closed,
}

/// The last bytes a child wrote to stderr.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    total: usize,
}

const TAIL_BYTES: usize = 4096;

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len();
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > TAIL_BYTES {
            let cut = self.bytes.len() - TAIL_BYTES;
            self.bytes.drain(..cut);
        }
    }
}

pub struct StdioTransport {
    /// `None` once shut down (or handed to a reaper thread).
    child: Option<Child>,
    /// Lines for the writer thread (dropping it closes the server's stdin). Writes go through
    /// a thread so a server that stops reading cannot block catalock past its deadlines.
    stdin: Option<std::sync::mpsc::Sender<String>>,
    /// Set by the writer thread when a write failed (the server closed its stdin).
    write_failed: Arc<std::sync::atomic::AtomicBool>,
    events: Receiver<Event>,
    stderr: Arc<Mutex<Tail>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
    limits: Limits,
    /// `command` as given, for messages.
    label: String,
    /// Warnings to pass on (skipped lines).
    pub warnings: Vec<String>,
}

impl StdioTransport {
    pub fn start(spec: &StdioSpec, limits: &Limits) -> Result<StdioTransport, LiveError> {
        let mut command = Command::new(&spec.command);
        command
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: shutdown signals reach everything it starts.
            .process_group(0);
        for (key, value) in &spec.env {
            command.env(key, value);
        }
        if let Some(dir) = &spec.cwd {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|e| LiveError::Start {
            command: spec.label.clone(),
            reason: crate::error::io_reason(&e),
        })?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (sender, events) = sync_channel(64);
        let max_line = limits.max_message;
        std::thread::spawn(move || read_lines(stdout, max_line, &sender));
        let tail = Arc::new(Mutex::new(Tail::default()));
        let tail_writer = Arc::clone(&tail);
        let stderr_thread = std::thread::spawn(move || {
            let mut stderr = stderr;
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                tail_writer.lock().expect("stderr tail").push(&buf[..n]);
            }
        });
        install_signal_handler();
        GROUPS.lock().expect("groups").push(child.id() as i32);
        let mut pipe: ChildStdin = child.stdin.take().expect("piped stdin");
        let (stdin, lines) = std::sync::mpsc::channel::<String>();
        let write_failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let failed = Arc::clone(&write_failed);
        std::thread::spawn(move || {
            for line in lines {
                if pipe
                    .write_all(line.as_bytes())
                    .and_then(|()| pipe.write_all(b"\n"))
                    .and_then(|()| pipe.flush())
                    .is_err()
                {
                    failed.store(true, std::sync::atomic::Ordering::SeqCst);
                    return;
                }
            }
        });
        let stdin = Some(stdin);
        Ok(StdioTransport {
            child: Some(child),
            stdin,
            write_failed,
            events,
            stderr: tail,
            stderr_thread: Some(stderr_thread),
            limits: limits.clone(),
            label: spec.label.clone(),
            warnings: Vec::new(),
        })
    }

    /// The last lines the server wrote to stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().expect("stderr tail");
        let text = String::from_utf8_lossy(&tail.bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let last: Vec<&str> = lines.iter().rev().take(5).rev().copied().collect();
        last.join(" | ")
    }

    fn exit_status(&mut self) -> Option<String> {
        // The pipe closes a moment before the process is reaped.
        let deadline = Instant::now() + Duration::from_millis(200);
        loop {
            match self.child.as_mut().map_or(Ok(None), Child::try_wait) {
                Ok(Some(status)) => return Some(describe_status(status)),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => return None,
            }
        }
    }

    fn write_line(&mut self, text: &str) -> Result<(), LiveError> {
        if self.write_failed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(self.gone("while catalock was writing to it"));
        }
        let Some(stdin) = self.stdin.as_ref() else {
            return Err(self.gone("before catalock could write to it"));
        };
        stdin
            .send(text.to_string())
            .map_err(|_| self.gone("while catalock was writing to it"))
    }

    fn gone(&mut self, when: &str) -> LiveError {
        let status = self
            .exit_status()
            .unwrap_or_else(|| "closed its output".to_string());
        // Let the stderr reader drain what the server said last (bounded: a grandchild may
        // still hold the pipe open).
        let deadline = Instant::now() + Duration::from_millis(300);
        while self
            .stderr_thread
            .as_ref()
            .is_some_and(|t| !t.is_finished())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        LiveError::Exited {
            server: self.label.clone(),
            status,
            when: when.to_string(),
            stderr: self.stderr_tail(),
        }
    }

    /// Waits for the next JSON message, up to `deadline`.
    fn next_message(&mut self, deadline: Instant, waiting_for: &str) -> Result<String, LiveError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(LiveError::Timeout {
                    server: self.label.clone(),
                    waiting_for: waiting_for.to_string(),
                    stderr: self.stderr_tail(),
                });
            }
            match self.events.recv_timeout(deadline - now) {
                Ok(Event::Message(text)) => return Ok(text),
                Ok(Event::Skipped(start)) => {
                    if self.limits.strict {
                        return Err(LiveError::Protocol {
                            server: self.label.clone(),
                            message: format!(
                                "wrote a line that is not JSON-RPC to stdout: {start:?}"
                            ),
                        });
                    }
                    self.warnings.push(format!(
                        "skipped a line on the server's stdout that is not JSON: {start:?}"
                    ));
                }
                Ok(Event::TooLong(limit)) => {
                    return Err(LiveError::Protocol {
                        server: self.label.clone(),
                        message: format!(
                            "sent a message longer than {limit} bytes (raise --max-message-bytes)"
                        ),
                    });
                }
                Ok(Event::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.gone(&format!("before answering {waiting_for}")));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(LiveError::Timeout {
                        server: self.label.clone(),
                        waiting_for: waiting_for.to_string(),
                        stderr: self.stderr_tail(),
                    });
                }
            }
        }
    }

    /// Shuts the server down: close stdin, wait, SIGTERM, wait, SIGKILL — to the whole group.
    /// Shuts the server down: close stdin, wait, SIGTERM, wait, SIGKILL — to the whole group.
    /// In the background, the wait overlaps with catalock's own work (a server may take a
    /// third of a second to exit); [`wait_for_shutdowns`] then makes sure it is over before
    /// catalock exits, so no process outlives it.
    fn shutdown(&mut self, background: bool) {
        drop(self.stdin.take());
        let Some(child) = self.child.take() else {
            return;
        };
        let stderr_thread = self.stderr_thread.take();
        let grace = self.limits.shutdown_grace;
        if background {
            let handle = std::thread::spawn(move || reap(child, stderr_thread, grace));
            REAPERS.lock().expect("reapers").push(handle);
        } else {
            reap(child, stderr_thread, grace);
        }
    }
}

/// Process groups of the servers running now, for the signal handler.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// If catalock itself is interrupted (Ctrl-C, a CI job cancelled), its servers go too: they
/// lead their own process groups, so the terminal's signal does not reach them.
fn install_signal_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                for group in GROUPS.lock().map(|g| g.clone()).unwrap_or_default() {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(group),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                std::process::exit(128 + signal);
            }
        });
    });
}

/// Shutdowns still under way.
static REAPERS: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits until every server shut down in the background is gone.
pub fn wait_for_shutdowns() {
    let handles: Vec<_> = std::mem::take(&mut *REAPERS.lock().expect("reapers"));
    for handle in handles {
        let _ = handle.join();
    }
}

fn reap(mut child: Child, stderr_thread: Option<std::thread::JoinHandle<()>>, grace: Duration) {
    let pid = child.id() as i32;
    let group = nix::unistd::Pid::from_raw(pid);
    if !wait_for(&mut child, grace) {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        if !wait_for(&mut child, grace) {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
        }
    }
    // Grandchildren left in the group (a wrapper like npx that exited first) go too.
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    GROUPS.lock().expect("groups").retain(|g| *g != pid);
    if let Some(thread) = stderr_thread {
        // The pipe closes once every process holding it is gone; a daemon that left the
        // group may hold it for ever, so wait briefly and then leave the reader behind.
        let deadline = Instant::now() + Duration::from_millis(300);
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.shutdown(false);
    }
}

fn wait_for(child: &mut Child, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    // Backing off from 1 ms: quick servers are reaped at once, slow ones cost few wakeups.
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(4));
            }
            _ => return false,
        }
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "exited".to_string(),
    }
}

/// Reads stdout line by line (capped), classifying each line.
fn read_lines(
    stdout: std::process::ChildStdout,
    max_line: usize,
    sender: &std::sync::mpsc::SyncSender<Event>,
) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        line.clear();
        let mut too_long = false;
        let mut eof = false;
        loop {
            let available = match reader.fill_buf() {
                Ok(a) => a,
                Err(_) => {
                    eof = true;
                    break;
                }
            };
            if available.is_empty() {
                eof = true;
                break;
            }
            let (chunk, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if !too_long {
                if line.len() + chunk.len() > max_line {
                    too_long = true;
                    line.clear();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            let consumed = done.unwrap_or(available.len());
            reader.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        let event = if too_long {
            Some(Event::TooLong(max_line))
        } else {
            let text = String::from_utf8_lossy(&line);
            let trimmed = text.trim();
            if trimmed.is_empty() {
                None
            } else if trimmed.starts_with('{') || trimmed.starts_with('[') {
                Some(Event::Message(trimmed.to_string()))
            } else {
                Some(Event::Skipped(trimmed.chars().take(80).collect()))
            }
        };
        if let Some(event) = event
            && sender.send(event).is_err()
        {
            return;
        }
        if eof {
            let _ = sender.send(Event::Closed);
            return;
        }
    }
}

impl Transport for StdioTransport {
    fn call(
        &mut self,
        id: u64,
        method: &str,
        request: &str,
        timeout: Duration,
    ) -> Result<String, LiveError> {
        self.write_line(request)?;
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.next_message(deadline, method)?;
            match super::route(&text, id) {
                super::Routed::Response => return Ok(text),
                super::Routed::Reply(reply) => self.write_line(&reply)?,
                super::Routed::Ignore => {}
                // A line that merely starts like JSON (`{not json`) is log noise; one that
                // names JSON-RPC but does not parse is a broken message.
                super::Routed::Malformed(why) if !text.contains("\"jsonrpc\"") => {
                    let start: String = text.chars().take(80).collect();
                    if self.limits.strict {
                        return Err(LiveError::Protocol {
                            server: self.label.clone(),
                            message: format!(
                                "wrote a line that is not JSON-RPC to stdout: {start:?} ({why})"
                            ),
                        });
                    }
                    self.warnings.push(format!(
                        "skipped a line on the server's stdout that is not JSON-RPC: {start:?}"
                    ));
                }
                super::Routed::Malformed(why) => {
                    return Err(LiveError::malformed(&self.label, method, &why));
                }
            }
        }
    }

    fn notify(&mut self, message: &str) -> Result<(), LiveError> {
        self.write_line(message)
    }

    fn close(&mut self) {
        self.shutdown(true);
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}
