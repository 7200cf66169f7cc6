//! The `catalock-digest-v1` test vectors (`tests/vectors/`, format in its README), checked
//! against the library and against the independent Python reference implementation
//! (`docs/reference/catalock_digest.py`).
//!
//! `CATALOCK_BLESS=1 cargo test --test integration vectors` rewrites the expected values of
//! every vector from the library, keeping each `description`, `equal_to`, `differs_from` and
//! `input` byte for byte. Review the diff, then run again without it: the Python check is
//! skipped while blessing, and it is what tells a blessed regression from a fix.

use std::path::{Path, PathBuf};
use std::process::Command;

use catalock::build::{BuildOptions, Detail, build_server};
use catalock::capture::Capture;
use catalock::contract::{
    self, Digest, Economy, ServerDigestInput, as_named_object, canonical_sections,
};
use catalock::json::parse_strict;
use catalock::lockfile::LockedServer;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Fewer tool vectors than this fails the suite (so a lost directory cannot pass silently).
const MIN_TOOL_VECTORS: usize = 10;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn vectors_dir() -> PathBuf {
    root().join("tests").join("vectors")
}

fn blessing() -> bool {
    std::env::var_os("CATALOCK_BLESS").is_some_and(|v| v == "1")
}

/// The vector files whose names start with `prefix`, sorted; fails on a `.json` file that is
/// neither a tool nor a server vector.
fn vector_files(prefix: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(vectors_dir()).expect("tests/vectors exists") {
        let path = entry.expect("readable directory entry").path();
        let name = file_name(&path);
        if !name.ends_with(".json") {
            continue;
        }
        assert!(
            name.starts_with("tool-") || name.starts_with("server-"),
            "tests/vectors/{name}: a vector's name starts with \"tool-\" or \"server-\""
        );
        if name.starts_with(prefix) {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("UTF-8 file name")
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Replaces `path` in one step, so no reader ever sees half a file.
fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A JSON string in ASCII: every non-ASCII or control character as `\uXXXX` (UTF-16), so the
/// vector files survive editors and tools that would normalize or hide characters.
fn ascii_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Canonical {
    surface: String,
    behavior: String,
    permissions: String,
    model_view: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Digests {
    surface: Digest,
    behavior: Digest,
    permissions: Digest,
    economy: Digest,
    tool: Digest,
}

impl Digests {
    fn fields(&self) -> [(&'static str, Digest); 5] {
        [
            ("surface", self.surface),
            ("behavior", self.behavior),
            ("permissions", self.permissions),
            ("economy", self.economy),
            ("tool", self.tool),
        ]
    }

    fn render(&self, indent: &str) -> String {
        let lines: Vec<String> = self
            .fields()
            .iter()
            .map(|(k, d)| format!("{indent}  \"{k}\": \"{d}\""))
            .collect();
        format!("{{\n{}\n{indent}}}", lines.join(",\n"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolVector {
    description: String,
    /// Another tool vector whose digests must all equal this one's.
    #[serde(default)]
    equal_to: Option<String>,
    /// Another tool vector whose tool digest must differ from this one's.
    #[serde(default)]
    differs_from: Option<String>,
    input: Box<RawValue>,
    canonical: Option<Canonical>,
    tokens: Option<u64>,
    digests: Option<Digests>,
}

/// What the library computes for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ToolResult {
    canonical: Canonical,
    tokens: u64,
    digests: Digests,
}

fn compute_tool(input: &str) -> Result<ToolResult, String> {
    let value = parse_strict(input).map_err(|e| e.to_string())?;
    let (map, _) = as_named_object(&value, "name").map_err(|e| format!("the tool {e}"))?;
    let c = canonical_sections(map);
    let tokens = catalock::tokens::count(&c.model_view);
    let digests = c.digests(Economy {
        tokens,
        bytes: c.model_view.len() as u64,
    });
    Ok(ToolResult {
        canonical: Canonical {
            surface: c.surface,
            behavior: c.behavior,
            permissions: c.permissions,
            model_view: c.model_view,
        },
        tokens,
        digests: Digests {
            surface: digests.surface,
            behavior: digests.behavior,
            permissions: digests.permissions,
            economy: digests.economy,
            tool: digests.tool,
        },
    })
}

/// o200k_base through tiktoken-rs, a second implementation of the tokenizer.
fn tiktoken_count(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

fn render_tool_vector(vector: &ToolVector, result: &ToolResult) -> String {
    let mut out = String::from("{\n");
    out.push_str(&format!(
        "  \"description\": {},\n",
        ascii_json(&vector.description)
    ));
    if let Some(other) = &vector.equal_to {
        out.push_str(&format!("  \"equal_to\": {},\n", ascii_json(other)));
    }
    if let Some(other) = &vector.differs_from {
        out.push_str(&format!("  \"differs_from\": {},\n", ascii_json(other)));
    }
    out.push_str(&format!("  \"input\": {},\n", vector.input.get()));
    let c = &result.canonical;
    out.push_str(&format!(
        "  \"canonical\": {{\n    \"surface\": {},\n    \"behavior\": {},\n    \"permissions\": {},\n    \"model_view\": {}\n  }},\n",
        ascii_json(&c.surface),
        ascii_json(&c.behavior),
        ascii_json(&c.permissions),
        ascii_json(&c.model_view)
    ));
    out.push_str(&format!("  \"tokens\": {},\n", result.tokens));
    out.push_str(&format!(
        "  \"digests\": {}\n}}\n",
        result.digests.render("  ")
    ));
    out
}

/// Appends a mismatch of `field` to `problems` when `expected` is not `actual`.
fn compare<T: PartialEq + std::fmt::Debug>(
    problems: &mut Vec<String>,
    file: &str,
    field: &str,
    expected: Option<&T>,
    actual: &T,
) {
    match expected {
        None => problems.push(format!(
            "{file}: {field} is missing (run with CATALOCK_BLESS=1 to fill it in)"
        )),
        Some(e) if e != actual => problems.push(format!(
            "{file}: {field} differs\n    vector:  {e:?}\n    library: {actual:?}"
        )),
        Some(_) => {}
    }
}

#[test]
fn tool_vectors_match_the_library() {
    let files = vector_files("tool-");
    let mut problems: Vec<String> = Vec::new();
    let mut results: Vec<(String, ToolVector, ToolResult)> = Vec::new();
    for path in &files {
        let file = file_name(path);
        let vector: ToolVector = match serde_json::from_str(&read(path)) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{file}: not a tool vector: {e}"));
                continue;
            }
        };
        let result = match compute_tool(vector.input.get()) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{file}: input: {e}"));
                continue;
            }
        };
        let second_count = tiktoken_count(&result.canonical.model_view);
        if second_count != result.tokens {
            problems.push(format!(
                "{file}: bpe-openai counts {} o200k_base tokens, tiktoken-rs {second_count}",
                result.tokens
            ));
        }
        if blessing() {
            write_atomic(path, &render_tool_vector(&vector, &result));
        } else {
            let c = vector.canonical.as_ref();
            let r = &result.canonical;
            compare(
                &mut problems,
                &file,
                "canonical.surface",
                c.map(|c| &c.surface),
                &r.surface,
            );
            compare(
                &mut problems,
                &file,
                "canonical.behavior",
                c.map(|c| &c.behavior),
                &r.behavior,
            );
            compare(
                &mut problems,
                &file,
                "canonical.permissions",
                c.map(|c| &c.permissions),
                &r.permissions,
            );
            compare(
                &mut problems,
                &file,
                "canonical.model_view",
                c.map(|c| &c.model_view),
                &r.model_view,
            );
            compare(
                &mut problems,
                &file,
                "tokens",
                vector.tokens.as_ref(),
                &result.tokens,
            );
            for (i, (name, actual)) in result.digests.fields().into_iter().enumerate() {
                let expected = vector.digests.map(|d| d.fields()[i].1);
                compare(
                    &mut problems,
                    &file,
                    &format!("digests.{name}"),
                    expected.as_ref(),
                    &actual,
                );
            }
        }
        results.push((file, vector, result));
    }

    // The relations the vectors declare: normalizations that must give equal digests, and
    // differences that must not be normalized away.
    let find = |name: &str| {
        results
            .iter()
            .find(|(f, _, _)| f == name)
            .map(|(_, _, r)| r)
    };
    for (file, vector, result) in &results {
        if let Some(other) = &vector.equal_to {
            match find(other) {
                None => problems.push(format!("{file}: equal_to names no tool vector {other:?}")),
                Some(o) if o.digests != result.digests => problems.push(format!(
                    "{file}: digests differ from {other}'s, but the vector says they are equal"
                )),
                Some(_) => {}
            }
        }
        if let Some(other) = &vector.differs_from {
            match find(other) {
                None => problems.push(format!(
                    "{file}: differs_from names no tool vector {other:?}"
                )),
                Some(o) if o.digests.tool == result.digests.tool => problems.push(format!(
                    "{file}: tool digest equals {other}'s, but the vector says they differ"
                )),
                Some(_) => {}
            }
        }
    }

    assert!(
        files.len() >= MIN_TOOL_VECTORS,
        "tests/vectors holds {} tool vectors; at least {MIN_TOOL_VECTORS} are required",
        files.len()
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) in the tool vectors:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerVector {
    description: String,
    input: Box<RawValue>,
    expected: Option<ServerExpected>,
}

/// A server vector's input: list results reduced to their item arrays; an absent list was not
/// captured.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ServerInput {
    /// The `initialize` result.
    initialize: Option<Box<RawValue>>,
    tools: Vec<Box<RawValue>>,
    prompts: Option<Box<RawValue>>,
    resource_templates: Option<Box<RawValue>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerTool {
    name: String,
    tokens: u64,
    digests: Digests,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerExpected {
    tools: Vec<ServerTool>,
    #[serde(default)]
    instructions: Option<Digest>,
    #[serde(default)]
    prompts: Option<Vec<(String, Digest)>>,
    #[serde(default, rename = "resourceTemplates")]
    resource_templates: Option<Vec<(String, Digest)>>,
    server_canonical: String,
    server_digest: Digest,
    catalog_canonical: String,
    catalog_revision: Digest,
}

/// Writes the input as capture files, as a user would save them, and reads them back.
fn capture_of(input: &ServerInput, initialize: Option<&str>, dir: &Path) -> Capture {
    let mut files: Vec<(&str, String)> = Vec::new();
    if let Some(init) = initialize {
        files.push(("initialize.json", init.to_string()));
    }
    let tools: Vec<&str> = input.tools.iter().map(|t| t.get()).collect();
    files.push((
        "tools-list.json",
        format!("{{\"tools\":[{}]}}", tools.join(",")),
    ));
    if let Some(p) = &input.prompts {
        files.push(("prompts-list.json", format!("{{\"prompts\":{}}}", p.get())));
    }
    if let Some(t) = &input.resource_templates {
        files.push((
            "resources-templates-list.json",
            format!("{{\"resourceTemplates\":{}}}", t.get()),
        ));
    }
    let mut paths = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("temporary capture file");
        paths.push(path.to_str().expect("UTF-8 path").to_string());
    }
    Capture::read_paths(&paths).unwrap_or_else(|e| panic!("capture: {e}"))
}

fn build(capture: &Capture) -> LockedServer {
    build_server(
        capture,
        &BuildOptions {
            name: "vector".to_string(),
            source: "test vector".to_string(),
            previous: None,
            detail: Detail::Full,
        },
    )
    .unwrap_or_else(|e| panic!("build: {e}"))
}

/// What the library computes for one server vector, plus internal consistency problems.
fn compute_server(file: &str, input: &ServerInput, problems: &mut Vec<String>) -> ServerExpected {
    let dir = tempfile::tempdir().expect("temporary directory");
    let initialize = input.initialize.as_ref().map(|i| i.get());
    let server = build(&capture_of(input, initialize, dir.path()));

    let tools: Vec<ServerTool> = server
        .tools
        .iter()
        .map(|t| ServerTool {
            name: t.name.clone(),
            tokens: t.tokens,
            digests: Digests {
                surface: t.surface,
                behavior: t.behavior,
                permissions: t.permissions,
                economy: t.economy,
                tool: t.digest,
            },
        })
        .collect();
    let prompts = server.prompt_count.map(|_| {
        server
            .prompts
            .iter()
            .map(|p| (p.name.clone(), p.digest))
            .collect::<Vec<_>>()
    });
    let resource_templates = server.resource_template_count.map(|_| {
        server
            .resource_templates
            .iter()
            .map(|t| (t.uri_template.clone(), t.digest))
            .collect::<Vec<_>>()
    });
    let tool_pairs: Vec<(&str, Digest)> = tools
        .iter()
        .map(|t| (t.name.as_str(), t.digests.tool))
        .collect();
    fn borrow(list: &Option<Vec<(String, Digest)>>) -> Option<Vec<(&str, Digest)>> {
        list.as_ref()
            .map(|l| l.iter().map(|(k, d)| (k.as_str(), *d)).collect())
    }
    let prompt_pairs = borrow(&prompts);
    let template_pairs = borrow(&resource_templates);
    let digest_input = ServerDigestInput {
        tools: &tool_pairs,
        instructions: server.instructions_digest,
        prompts: prompt_pairs.as_deref(),
        resource_templates: template_pairs.as_deref(),
    };
    let server_canonical = digest_input.canonical();
    if digest_input.digest() != server.server_digest {
        problems.push(format!(
            "{file}: build_server's server digest is not the digest of the server canonical text"
        ));
    }

    // Each tool digested on its own agrees with the build, and the catalog revision is the
    // plain SHA-256 of the catalog text, which `catalog_revision` computes too.
    let mut maps = Vec::new();
    for raw in &input.tools {
        let value = parse_strict(raw.get()).unwrap_or_else(|e| panic!("{file}: tool: {e}"));
        let alone = compute_tool(raw.get()).unwrap_or_else(|e| panic!("{file}: tool: {e}"));
        let name = value["name"].as_str().unwrap_or_default().to_string();
        match tools.iter().find(|t| t.name == name) {
            Some(t) if t.digests == alone.digests && t.tokens == alone.tokens => {}
            _ => problems.push(format!(
                "{file}: tool {name:?} digested alone differs from build_server's entry"
            )),
        }
        maps.push(value.as_object().cloned().expect("tool is an object"));
    }
    let mut sorted: Vec<&serde_json::Map<String, serde_json::Value>> = maps.iter().collect();
    sorted.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let mut catalog_canonical = String::from("{\"format\":\"ram-tool-catalog-v1\",\"tools\":[");
    for (i, tool) in sorted.iter().enumerate() {
        if i > 0 {
            catalog_canonical.push(',');
        }
        contract::catalog_entry(tool, &mut catalog_canonical);
    }
    catalog_canonical.push_str("]}");
    if Digest::plain(catalog_canonical.as_bytes()) != server.catalog_revision
        || contract::catalog_revision(maps.iter()) != server.catalog_revision
    {
        problems.push(format!(
            "{file}: build_server's catalog revision is not the SHA-256 of the catalog text"
        ));
    }

    // serverInfo is recorded, not digested: another version gives the same server digest.
    if let Some(init) = initialize {
        let mut value: serde_json::Value = serde_json::from_str(init).expect("initialize");
        if let Some(info) = value.get_mut("serverInfo") {
            info["version"] = serde_json::Value::from("0.0.0-another-version");
            let other_dir = tempfile::tempdir().expect("temporary directory");
            let text = value.to_string();
            let other = build(&capture_of(input, Some(&text), other_dir.path()));
            if other.server_digest != server.server_digest
                || other.server_info == server.server_info
            {
                problems.push(format!(
                    "{file}: changing serverInfo.version changed the server digest"
                ));
            }
        }
    }

    ServerExpected {
        tools,
        instructions: server.instructions_digest,
        prompts,
        resource_templates,
        server_canonical,
        server_digest: server.server_digest,
        catalog_canonical,
        catalog_revision: server.catalog_revision,
    }
}

fn render_pairs(list: &[(String, Digest)]) -> String {
    if list.is_empty() {
        return "[]".to_string();
    }
    let lines: Vec<String> = list
        .iter()
        .map(|(k, d)| format!("      [{}, \"{d}\"]", ascii_json(k)))
        .collect();
    format!("[\n{}\n    ]", lines.join(",\n"))
}

fn render_server_vector(vector: &ServerVector, e: &ServerExpected) -> String {
    let mut out = String::from("{\n");
    out.push_str(&format!(
        "  \"description\": {},\n",
        ascii_json(&vector.description)
    ));
    out.push_str(&format!("  \"input\": {},\n", vector.input.get()));
    out.push_str("  \"expected\": {\n    \"tools\": [\n");
    let tools: Vec<String> = e
        .tools
        .iter()
        .map(|t| {
            format!(
                "      {{\n        \"name\": {},\n        \"tokens\": {},\n        \"digests\": {}\n      }}",
                ascii_json(&t.name),
                t.tokens,
                t.digests.render("        ")
            )
        })
        .collect();
    out.push_str(&tools.join(",\n"));
    out.push_str("\n    ],\n");
    if let Some(d) = e.instructions {
        out.push_str(&format!("    \"instructions\": \"{d}\",\n"));
    }
    if let Some(p) = &e.prompts {
        out.push_str(&format!("    \"prompts\": {},\n", render_pairs(p)));
    }
    if let Some(t) = &e.resource_templates {
        out.push_str(&format!(
            "    \"resourceTemplates\": {},\n",
            render_pairs(t)
        ));
    }
    out.push_str(&format!(
        "    \"server_canonical\": {},\n    \"server_digest\": \"{}\",\n    \"catalog_canonical\": {},\n    \"catalog_revision\": \"{}\"\n  }}\n}}\n",
        ascii_json(&e.server_canonical),
        e.server_digest,
        ascii_json(&e.catalog_canonical),
        e.catalog_revision
    ));
    out
}

#[test]
fn server_vectors_match_the_library() {
    let files = vector_files("server-");
    assert!(!files.is_empty(), "tests/vectors holds no server vector");
    let mut problems: Vec<String> = Vec::new();
    for path in &files {
        let file = file_name(path);
        let vector: ServerVector = serde_json::from_str(&read(path))
            .unwrap_or_else(|e| panic!("{file}: not a server vector: {e}"));
        let input: ServerInput = serde_json::from_str(vector.input.get())
            .unwrap_or_else(|e| panic!("{file}: input: {e}"));
        let actual = compute_server(&file, &input, &mut problems);
        if blessing() {
            write_atomic(path, &render_server_vector(&vector, &actual));
            continue;
        }
        let Some(expected) = &vector.expected else {
            problems.push(format!(
                "{file}: expected is missing (run with CATALOCK_BLESS=1 to fill it in)"
            ));
            continue;
        };
        let e = expected;
        compare(&mut problems, &file, "tools", Some(&e.tools), &actual.tools);
        compare(
            &mut problems,
            &file,
            "instructions",
            Some(&e.instructions),
            &actual.instructions,
        );
        compare(
            &mut problems,
            &file,
            "prompts",
            Some(&e.prompts),
            &actual.prompts,
        );
        compare(
            &mut problems,
            &file,
            "resourceTemplates",
            Some(&e.resource_templates),
            &actual.resource_templates,
        );
        compare(
            &mut problems,
            &file,
            "server_canonical",
            Some(&e.server_canonical),
            &actual.server_canonical,
        );
        compare(
            &mut problems,
            &file,
            "server_digest",
            Some(&e.server_digest),
            &actual.server_digest,
        );
        compare(
            &mut problems,
            &file,
            "catalog_canonical",
            Some(&e.catalog_canonical),
            &actual.catalog_canonical,
        );
        compare(
            &mut problems,
            &file,
            "catalog_revision",
            Some(&e.catalog_revision),
            &actual.catalog_revision,
        );
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) in the server vectors:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn python_reference_agrees_with_the_vectors() {
    if blessing() {
        eprintln!("skipped while blessing: run again without CATALOCK_BLESS");
        return;
    }
    let script = root().join("docs/reference/catalock_digest.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg(vectors_dir())
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "the Python reference implementation disagrees with tests/vectors ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
