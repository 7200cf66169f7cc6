//! Server-sent events, as MCP servers send them: `data` over several lines (joined with
//! `\n`), `event` names, comments (`:`), and empty priming events, with a cap on event size.

use std::io::BufRead;

/// One event: its name (`message` when unnamed) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// Why no event could be read.
#[derive(Debug)]
pub enum SseError {
    Io(std::io::Error),
    TooLong(usize),
}

/// Reads events from a byte stream.
pub struct EventReader<R> {
    reader: R,
    limit: usize,
    line: String,
}

impl<R: BufRead> EventReader<R> {
    pub fn new(reader: R, limit: usize) -> EventReader<R> {
        EventReader {
            reader,
            limit,
            line: String::new(),
        }
    }

    /// The next event with data (priming events without data are skipped); `None` at the end
    /// of the stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        let mut name = String::new();
        let mut data = String::new();
        let mut has_data = false;
        loop {
            self.line.clear();
            let n = self.read_capped_line()?;
            if n == 0 {
                return Ok(has_data.then(|| Event {
                    name: event_name(&name),
                    data,
                }));
            }
            let text = self.line.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                if has_data && !data.is_empty() {
                    return Ok(Some(Event {
                        name: event_name(&name),
                        data,
                    }));
                }
                name.clear();
                data.clear();
                has_data = false;
                continue;
            }
            if text.starts_with(':') {
                continue;
            }
            let (field, value) = text
                .split_once(':')
                .map(|(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)))
                .unwrap_or((text, ""));
            match field {
                "data" => {
                    if has_data {
                        data.push('\n');
                    }
                    data.push_str(value);
                    has_data = true;
                    if data.len() > self.limit {
                        return Err(SseError::TooLong(self.limit));
                    }
                }
                "event" => name = value.to_string(),
                _ => {} // id, retry: not needed by a client that does not resume
            }
        }
    }
}

impl<R: BufRead> EventReader<R> {
    /// Reads one line into `self.line`, refusing lines longer than the cap (a server could
    /// otherwise send one endless comment line). Returns the bytes consumed (0 at the end).
    fn read_capped_line(&mut self) -> Result<usize, SseError> {
        let mut bytes: Vec<u8> = Vec::new();
        let mut consumed = 0;
        loop {
            let available = self.reader.fill_buf().map_err(SseError::Io)?;
            if available.is_empty() {
                break;
            }
            let (chunk, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..=i], true),
                None => (available, false),
            };
            if bytes.len() + chunk.len() > self.limit + 64 {
                return Err(SseError::TooLong(self.limit));
            }
            bytes.extend_from_slice(chunk);
            let n = chunk.len();
            self.reader.consume(n);
            consumed += n;
            if done {
                break;
            }
        }
        self.line = String::from_utf8(bytes)
            .map_err(|e| SseError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        Ok(consumed)
    }
}

fn event_name(name: &str) -> String {
    if name.is_empty() {
        "message".to_string()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_joined_and_primed() {
        let text = "id: 1\ndata:\n\n: keepalive\nevent: endpoint\ndata: /message?s=1\n\ndata: {\"a\":\ndata: 1}\n\n";
        let mut reader = EventReader::new(text.as_bytes(), 1 << 20);
        assert_eq!(
            reader.next_event().unwrap(),
            Some(Event {
                name: "endpoint".into(),
                data: "/message?s=1".into()
            })
        );
        assert_eq!(
            reader.next_event().unwrap(),
            Some(Event {
                name: "message".into(),
                data: "{\"a\":\n1}".into()
            })
        );
        assert_eq!(reader.next_event().unwrap(), None);
        let mut small = EventReader::new("data: 0123456789\n\n".as_bytes(), 4);
        assert!(matches!(small.next_event(), Err(SseError::TooLong(4))));
    }
}
