//! The synthetic `tools/list` catalog used by the benchmarks: one generator, shared by
//! `examples/gen_catalog.rs` (which writes it to stdout) and `benches/check.rs` (which writes
//! it to a temporary file), both through `#[path]`.
//!
//! Deterministic (a fixed-seed xorshift), so every run and every machine gets the same bytes:
//! 5,000 tools are 34,528,324 bytes with SHA-256
//! `0425f436bf122bc99a724f26e9c94ded0e4b2571ee0b47403c722c9a13ecaa28`.
//! Each tool has nested object schemas, arrays, enums, `$defs` with local `$ref`s, unicode
//! text, numeric constraints and annotations, in the proportions seen in real servers
//! (`notion` and `playwright` captures), scaled up.

use std::io::Write;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "record",
    "page",
    "user",
    "workspace",
    "query",
    "filter",
    "cursor",
    "block",
    "comment",
    "database",
    "property",
    "relation",
    "rollup",
    "status",
    "owner",
    "archive",
    "résumé",
    "naïve",
    "über",
    "façade",
    "日本語",
    "données",
    "Ελληνικά",
    "emoji 🚀",
    "size",
    "limit",
    "offset",
    "timezone",
    "locale",
    "format",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

fn property(rng: &mut Rng, depth: usize, defs: &[String]) -> String {
    let words = 6 + rng.below(10) as usize;
    let description = sentence(rng, words);
    match (rng.below(7), depth) {
        (0, _) => format!(
            r#"{{"type":"string","description":"{description}","enum":["{}","{}","{}","{}"]}}"#,
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS)
        ),
        (1, _) => format!(
            r#"{{"type":"integer","description":"{description}","minimum":0,"maximum":{},"default":{}}}"#,
            1 + rng.below(9_007_199_254_740_991),
            rng.below(100)
        ),
        (2, _) if !defs.is_empty() => {
            format!(
                r##"{{"$ref":"#/$defs/{}","description":"{description}"}}"##,
                defs[rng.below(defs.len() as u64) as usize]
            )
        }
        (3, d) if d < 3 => format!(
            r#"{{"type":"array","description":"{description}","items":{},"maxItems":{}}}"#,
            property(rng, d + 1, defs),
            1 + rng.below(100)
        ),
        (4, d) if d < 3 => {
            let n = 2 + rng.below(4) as usize;
            object(rng, d + 1, defs, n)
        }
        (5, _) => format!(
            r#"{{"type":["string","null"],"description":"{description}","pattern":"^[a-z0-9-]{{1,{}}}$","format":"uuid"}}"#,
            8 + rng.below(56)
        ),
        _ => format!(
            r#"{{"type":"boolean","description":"{description}","default":{}}}"#,
            rng.below(2) == 0
        ),
    }
}

fn object(rng: &mut Rng, depth: usize, defs: &[String], properties: usize) -> String {
    let mut props = Vec::new();
    let mut required = Vec::new();
    for i in 0..properties {
        let name = format!(
            "{}_{i}",
            rng.pick(&[
                "id", "name", "filter", "sort", "parent", "options", "body", "cursor"
            ])
        );
        if rng.below(3) == 0 {
            required.push(format!("\"{name}\""));
        }
        props.push(format!("\"{name}\":{}", property(rng, depth, defs)));
    }
    format!(
        r#"{{"type":"object","properties":{{{}}},"required":[{}],"additionalProperties":{}}}"#,
        props.join(","),
        required.join(","),
        rng.below(2) == 0
    )
}

fn tool(rng: &mut Rng, index: usize) -> String {
    let defs: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "def{i}_{}",
                rng.pick(&["filter", "sort", "parent", "rich_text"])
            )
        })
        .collect();
    let defs_json: Vec<String> = defs
        .iter()
        .map(|d| format!("\"{d}\":{}", object(rng, 2, &[], 4)))
        .collect();
    let n = 6 + rng.below(4) as usize;
    let mut schema = object(rng, 0, &defs, n);
    schema.insert_str(
        1,
        &format!(
            r#""$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{{{}}},"#,
            defs_json.join(",")
        ),
    );
    let read_only = rng.below(2) == 0;
    format!(
        r#"{{"name":"tool-{index:05}-{}","title":"{}","description":"{}","inputSchema":{schema},"annotations":{{"readOnlyHint":{read_only},"destructiveHint":{},"openWorldHint":true}},"_meta":{{"vendor/id":{index}}}}}"#,
        rng.pick(&["get", "list", "create", "update", "delete", "search"]),
        sentence(rng, 3),
        {
            let n = 40 + rng.below(80) as usize;
            sentence(rng, n)
        },
        !read_only && rng.below(2) == 0,
    )
}

/// The catalog size the benchmarks and the issue's targets are stated for.
pub const DEFAULT_TOOLS: usize = 5_000;

/// Writes a `tools/list` result with `count` tools (`{"tools":[...]}` and a newline) to `out`,
/// then flushes it.
pub fn write_catalog<W: Write>(count: usize, out: &mut W) -> std::io::Result<()> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    out.write_all(b"{\"tools\":[")?;
    for i in 0..count {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(tool(&mut rng, i).as_bytes())?;
    }
    out.write_all(b"]}\n")?;
    out.flush()
}
