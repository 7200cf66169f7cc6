//! Strict JSON input and RFC 8785 (JCS) output.
//!
//! `serde_json` silently keeps the last of two equal object keys; a contract gate must not,
//! because the two values may be read differently by different clients. [`parse_strict`]
//! rejects duplicate keys at every depth, with the position of the second key.
//!
//! [`write_canonical`] emits the JSON Canonicalization Scheme: keys sorted by UTF-16 code
//! units, numbers in ECMAScript `Number.prototype.toString` form, minimal string escaping.
//! [`write_canonical_pretty`] emits the same tokens with two-space indentation; removing the
//! whitespace outside strings ([`strip_pretty`]) gives the compact form back byte for byte,
//! which is how stored lockfile content is re-hashed without a parse.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A JSON syntax or shape error with a 1-based position in the input text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.message, self.line, self.column
        )
    }
}

impl JsonError {
    fn from_serde(err: &serde_json::Error) -> Self {
        // serde_json appends " at line L column C" to its own Display; keep the bare cause.
        let text = err.to_string();
        let message = match text.rfind(" at line ") {
            Some(idx) => text[..idx].to_string(),
            None => text,
        };
        JsonError {
            message,
            line: err.line(),
            column: err.column(),
        }
    }

    /// Shifts a position that is relative to a slice starting at (`line`, `column`).
    pub fn offset_by(mut self, line: usize, column: usize) -> Self {
        if self.line <= 1 {
            self.column += column.saturating_sub(1);
        }
        self.line += line.saturating_sub(1);
        self
    }
}

/// Parses one JSON document, rejecting duplicate object keys anywhere.
pub fn parse_strict(text: &str) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictValue
        .deserialize(&mut de)
        .map_err(|e| JsonError::from_serde(&e))?;
    de.end().map_err(|e| JsonError::from_serde(&e))?;
    Ok(value)
}

/// Like [`parse_strict`], for a document that starts at (`line`, `column`) of a larger text.
pub fn parse_strict_at(text: &str, line: usize, column: usize) -> Result<Value, JsonError> {
    parse_strict(text).map_err(|e| e.offset_by(line, column))
}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    let column = text[line_start..offset.min(text.len())].chars().count() + 1;
    (line, column)
}

struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate object key {key:?}"
                )));
            }
            let value = map.next_value_seed(StrictValue)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Compact RFC 8785 form of `value`.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Pretty (two-space indented) RFC 8785 form of `value`, without a trailing newline.
pub fn canonical_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out
}

/// Appends the compact RFC 8785 form of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

/// Appends the pretty RFC 8785 form of `value` to `out`.
pub fn write_canonical_pretty(value: &Value, out: &mut String) {
    write_pretty(value, 0, out);
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(depth + 1, out);
                write_pretty(item, depth + 1, out);
            }
            newline_indent(depth, out);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(depth + 1, out);
                write_string(key, out);
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            newline_indent(depth, out);
            out.push('}');
        }
        other => write_canonical(other, out),
    }
}

fn newline_indent(depth: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Object entries in RFC 8785 order: by UTF-16 code units of the key.
///
/// `serde_json::Map` iterates in UTF-8 byte order, which equals UTF-16 order unless a key holds
/// a character at or above U+E000 (UTF-16 puts supplementary characters, as surrogates, before
/// U+E000..U+FFFF). Only then is a re-sort needed.
pub fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    if entries.iter().any(|(k, _)| k.bytes().any(|b| b >= 0xEE)) {
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    }
    entries
}

/// ECMAScript `Number.prototype.toString` of the number's IEEE-754 double value.
fn write_number(n: &Number, out: &mut String) {
    // Integers beyond 2^53 are rounded to the nearest double, as RFC 8785 §3.2.2.3 requires.
    let f = if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(0.0)
    };
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format(f));
}

/// Whether any of the 8 bytes of `chunk` needs escaping in a JSON string: below 0x20, `"`
/// or `\`. Checked a word at a time because descriptions and schemas are mostly plain text.
#[inline]
fn needs_escape(chunk: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = chunk.wrapping_sub(ONES * 0x20) & !chunk & HIGHS;
    below_space | has_zero(chunk ^ (ONES * b'"' as u64)) | has_zero(chunk ^ (ONES * b'\\' as u64))
        != 0
}

/// A JSON string as RFC 8785 writes it (ECMAScript `JSON.stringify` escaping).
pub fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip whole words that need no escaping.
        if i + 8 <= bytes.len() {
            let word = u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            0x09 => Some("\\t"),
            0x0a => Some("\\n"),
            0x0c => Some("\\f"),
            0x0d => Some("\\r"),
            0x00..=0x1f => None,
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Removes the whitespace outside strings, turning [`canonical_pretty`] output into
/// [`canonical`] output. Appends to `out`.
///
/// Works a line at a time: canonical strings hold no raw newline, so outside strings the only
/// whitespace is each line's indentation and the one space after a member's colon.
pub fn strip_pretty(pretty: &str, out: &mut String) {
    out.reserve(pretty.len());
    let mut start = 0;
    let bytes = pretty.as_bytes();
    while start <= bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = pretty[start..end].trim_start_matches(' ');
        start = end + 1;
        if let Some(colon) = member_colon(line) {
            out.push_str(&line[..colon + 1]);
            out.push_str(line[colon + 1..].trim_start_matches(' '));
        } else {
            out.push_str(line);
        }
    }
}

/// If `line` starts with a member name (`"key": ...`), the index of its colon.
fn member_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &bytes[i..])?;
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        return (bytes.get(i + 1) == Some(&b':')).then_some(i + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_rejected_with_position() {
        let err = parse_strict("{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
        assert_eq!(err.message, "duplicate object key \"a\"");
        assert_eq!(err.line, 3);
        let nested = parse_strict(r#"{"x":[{"k":1,"k":1}]}"#).unwrap_err();
        assert!(
            nested.message.contains("duplicate object key \"k\""),
            "{nested}"
        );
    }

    #[test]
    fn syntax_errors_keep_line_and_column() {
        let err = parse_strict("{\"a\": [1, 2,]}").unwrap_err();
        assert_eq!((err.line, err.column), (1, 13));
        let shifted = err.offset_by(5, 10);
        assert_eq!((shifted.line, shifted.column), (5, 22));
    }

    #[test]
    fn rfc8785_numbers_and_strings() {
        let v = parse_strict(r#"[1.0, -0, 1e21, 1e-7, 0.1, 123456789012345678901, 9007199254740993, "\u0007\u001f€\ud83d\ude00"]"#).unwrap();
        assert_eq!(
            canonical(&v),
            "[1,0,1e+21,1e-7,0.1,123456789012345680000,9007199254740992,\"\\u0007\\u001f€😀\"]"
        );
    }

    #[test]
    fn rfc8785_key_order_is_utf16() {
        // The RFC 8785 §3.2.3 example: U+1F600 (surrogates D83D DE00) sorts before U+FB33.
        let v = parse_strict(r#"{"\ufb33":1,"😀":2,"a":3,"\r":4}"#).unwrap();
        assert_eq!(canonical(&v), "{\"\\r\":4,\"a\":3,\"😀\":2,\"\u{fb33}\":1}");
    }

    #[test]
    fn pretty_strips_back_to_compact() {
        let v = parse_strict(r#"{"b":[1,{"x y":"a \" b\\"}],"a":{},"c":[]}"#).unwrap();
        let pretty = canonical_pretty(&v);
        assert_eq!(
            pretty,
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"x y\": \"a \\\" b\\\\\"\n    }\n  ],\n  \"c\": []\n}"
        );
        let mut compact = String::new();
        strip_pretty(&pretty, &mut compact);
        assert_eq!(compact, canonical(&v));
    }

    #[test]
    fn strip_handles_escapes_and_colons_in_strings() {
        let v = parse_strict(r#"{"a\\\"b: c":"x: y","k":["a, b", "q\"", {"z":1}],"long":"0123456789 \u001f \" tail"}"#).unwrap();
        let mut compact = String::new();
        strip_pretty(&canonical_pretty(&v), &mut compact);
        assert_eq!(compact, canonical(&v));
    }

    #[test]
    fn escaping_is_found_in_every_position_of_a_word() {
        for position in 0..17 {
            for special in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
                let mut text: String = "abcdefghijklmnopq".chars().collect();
                text.replace_range(position..position + 1, &special.to_string());
                let mut ours = String::new();
                write_string(&text, &mut ours);
                assert_eq!(
                    ours,
                    serde_json::to_string(&text)
                        .unwrap()
                        .replace("\\u001F", "\\u001f"),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn object_iteration_is_in_byte_order() {
        // `sorted_entries` relies on serde_json's Map being a BTreeMap; the `preserve_order`
        // feature (enabled by any crate in the graph) would silently break RFC 8785 order.
        let v = parse_strict(r#"{"b":1,"a":2,"c":{"z":1,"y":2}}"#).unwrap();
        assert_eq!(canonical(&v), r#"{"a":2,"b":1,"c":{"y":2,"z":1}}"#);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "serde_json preserve_order is on: {keys:?}"
        );
    }

    #[test]
    fn line_col_counts_characters() {
        let text = "ab\ncé\nx";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, text.find('x').unwrap()), (3, 1));
        assert_eq!(line_col(text, 6), (2, 3));
    }
}
