//! `mcp.lock`: types, the canonical writer, and the reader.
//!
//! The file is always regenerated from these types by [`LockFile::to_toml`], so the same
//! contract gives the same bytes. The reader has a fast path for exactly what the writer emits
//! (line-oriented, no intermediate tree) and falls back to a full TOML parser for anything
//! else, such as a hand-edited file, so both canonical and merely valid files are read.
//!
//! Content is stored as received, in canonical form: titles and descriptions as TOML strings
//! (when the server sent strings), JSON values as pretty RFC 8785 text. TOML has no null, so
//! JSON that TOML cannot hold natively (a `null` description, say) is kept as JSON text in
//! `other`. Digests are then recomputable from the file alone (`catalock verify`).

use std::io::Write as _;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::contract::{CATALOG_REVISION_FORMAT, DIGEST_ALGORITHM, Digest, TOKENIZER};
use crate::error::{Error, io_reason};

/// The lockfile format version this build reads and writes.
pub const LOCKFILE_VERSION: u32 = 1;

/// The whole lockfile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[schemars(
    title = "mcp.lock",
    description = "The approved contract of MCP servers, written by `catalock lock`."
)]
pub struct LockFile {
    /// Format version; catalock refuses versions it does not know.
    pub version: u32,
    /// Digest algorithm of every digest in the file (`catalock-digest-v1`).
    pub digest_algorithm: String,
    /// Format of `catalog-revision` (`ram-tool-catalog-v1`).
    pub catalog_revision_algorithm: String,
    /// Tokenizer of the token counts (`o200k_base`).
    pub tokenizer: String,
    /// Locked servers, sorted by name.
    #[serde(default, rename = "server", skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<LockedServer>,
}

/// One server's locked contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LockedServer {
    /// The entry's name: letters, digits, `.`, `_` and `-`.
    pub name: String,
    /// Where the contract came from, without secrets or machine paths.
    pub source: String,
    /// `stdio` or `http` for a live server; absent for a capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The stdio server's command, as given (paths inside the working directory made
    /// relative). Environment values are never recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The HTTP server's URL, without credentials or query. Headers are never recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `legacy` (an `initialize` handshake) or `modern` (2026-07-28 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<String>,
    /// The `clientInfo` catalock declared, as compact JSON; `check` declares the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<String>,
    /// The client capabilities catalock declared, as compact JSON: servers may list other
    /// tools to clients with other capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_capabilities: Option<String>,
    /// What the HTTP server demands of a client without credentials, as compact JSON
    /// (`scheme`, `scope`, `authorization_servers`, `scopes_supported`). Never a credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    /// Protocol version the server spoke, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The server's self-description (`serverInfo`) as compact JSON. Recorded, not digested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
    /// `serverInfo.version` values this entry had before the current one, oldest first:
    /// versions that are not semver are ordered by when they were locked. Not digested.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_versions: Vec<String>,
    /// Digest of the whole server contract: tools, instructions, prompts, resource templates.
    pub server_digest: Digest,
    /// `ram-tool-catalog-v1` revision of the tools.
    pub catalog_revision: Digest,
    pub tool_count: u64,
    /// Sum of the tools' `tokens`.
    pub total_tokens: u64,
    /// Number of prompts; absent when prompts were not captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_count: Option<u64>,
    /// Number of resource templates; absent when they were not captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_template_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_digest: Option<Digest>,
    /// The server instructions, exactly as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, rename = "prompt", skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<LockedPrompt>,
    #[serde(
        default,
        rename = "resource-template",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_templates: Vec<LockedResourceTemplate>,
    #[serde(default, rename = "tool", skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<LockedTool>,
    /// 1-based line of the `[[server]]` header (0 when built in memory).
    #[serde(skip)]
    #[schemars(skip)]
    pub line: usize,
}

/// One locked tool: its digests and its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LockedTool {
    pub name: String,
    /// Tool digest, over the surface, behavior and permissions digests.
    pub digest: Digest,
    pub surface: Digest,
    pub behavior: Digest,
    pub permissions: Digest,
    pub economy: Digest,
    /// `o200k_base` tokens of the model view (`name`, `description`, `inputSchema`).
    pub tokens: u64,
    /// UTF-8 bytes of the model view.
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `annotations` as pretty canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<String>,
    /// Every other top-level key (`execution`, `_meta`, unknown keys, and a `title` or
    /// `description` that is not a string) as a pretty canonical JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
    /// `inputSchema` as pretty canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<String>,
    /// `outputSchema` as pretty canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// `icons` as pretty canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<String>,
    /// 1-based line of the `[[server.tool]]` header (0 when built in memory).
    #[serde(skip)]
    #[schemars(skip)]
    pub line: usize,
}

/// One locked prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LockedPrompt {
    pub name: String,
    pub digest: Digest,
    /// The prompt object as pretty canonical JSON.
    pub content: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub line: usize,
}

/// One locked resource template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LockedResourceTemplate {
    pub uri_template: String,
    pub digest: Digest,
    /// The resource template object as pretty canonical JSON.
    pub content: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub line: usize,
}

impl Default for LockFile {
    fn default() -> Self {
        LockFile {
            version: LOCKFILE_VERSION,
            digest_algorithm: DIGEST_ALGORITHM.to_string(),
            catalog_revision_algorithm: CATALOG_REVISION_FORMAT.to_string(),
            tokenizer: TOKENIZER.to_string(),
            servers: Vec::new(),
        }
    }
}

/// A server name derived from free text: the last `/` segment, with every character outside
/// `[A-Za-z0-9._-]` replaced by `-`.
pub fn sanitize_server_name(raw: &str) -> String {
    let last = raw.rsplit('/').find(|s| !s.trim().is_empty()).unwrap_or("");
    let mapped: String = last
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    mapped.trim_matches('-').chars().take(64).collect()
}

/// Checks a user-given server name.
pub fn validate_server_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(
            format!("server name {name:?} is not 1-64 letters, digits, '.', '_' or '-'"),
            format!("pass --name {}", {
                let s = sanitize_server_name(name);
                if s.is_empty() {
                    "my-server".to_string()
                } else {
                    s
                }
            }),
        ))
    }
}

const HEADER: &str = "\
# mcp.lock: the approved contract of each MCP server below.
# Generated by catalock; do not edit by hand. After a deliberate server change, run
# `catalock lock` and commit the result; `catalock check` fails CI on any unlocked change.
# Format and digest algorithm: docs/digest-spec.md in the catalock repository.
";

impl LockFile {
    /// The canonical text of the file.
    pub fn to_toml(&self) -> String {
        let mut out = String::with_capacity(1 << 16);
        out.push_str(HEADER);
        out.push_str(&format!("version = {}\n", self.version));
        kv_str(&mut out, "digest-algorithm", &self.digest_algorithm);
        kv_str(
            &mut out,
            "catalog-revision-algorithm",
            &self.catalog_revision_algorithm,
        );
        kv_str(&mut out, "tokenizer", &self.tokenizer);
        for server in &self.servers {
            server.write_toml(&mut out);
        }
        out
    }

    pub fn server(&self, name: &str) -> Option<&LockedServer> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// Inserts or replaces a server entry, keeping servers sorted by name.
    pub fn upsert(&mut self, server: LockedServer) {
        match self
            .servers
            .binary_search_by(|s| s.name.as_str().cmp(&server.name))
        {
            Ok(i) => self.servers[i] = server,
            Err(i) => self.servers.insert(i, server),
        }
    }

    /// Writes the file atomically: a temporary file in the same directory, flushed to disk,
    /// then renamed over the target, so a crash leaves the old file or the new, never half.
    pub fn write_atomic(&self, path: &Path) -> Result<(), Error> {
        write_atomic(path, self.to_toml().as_bytes())
    }
}

/// Atomic file replacement (see [`LockFile::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fail = |e: std::io::Error| {
        Error::io(
            format!("cannot write {}: {}", path.display(), io_reason(&e)),
            "check that the directory exists and is writable; the old file is unchanged",
        )
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".mcp.lock.").suffix(".tmp");
    // A new file gets rw-r--r-- less the umask, like any file; an existing one keeps its mode
    // exactly. (tempfile's private 0600 would change a committed lockfile's mode.)
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(dir).map_err(fail)?;
    if let Ok(existing) = std::fs::metadata(path) {
        tmp.as_file()
            .set_permissions(existing.permissions())
            .map_err(fail)?;
    }
    tmp.write_all(bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

impl LockedServer {
    fn write_toml(&self, out: &mut String) {
        out.push_str("\n[[server]]\n");
        kv_str(out, "name", &self.name);
        kv_str(out, "source", &self.source);
        for (key, value) in [("transport", &self.transport), ("command", &self.command)] {
            if let Some(v) = value {
                kv_str(out, key, v);
            }
        }
        if !self.args.is_empty() {
            out.push_str("args = [");
            for (i, arg) in self.args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_toml_string(out, arg);
            }
            out.push_str("]\n");
        }
        for (key, value) in [
            ("url", &self.url),
            ("era", &self.era),
            ("client-info", &self.client_info),
            ("client-capabilities", &self.client_capabilities),
            ("authorization", &self.authorization),
        ] {
            if let Some(v) = value {
                kv_str(out, key, v);
            }
        }
        if let Some(v) = &self.protocol_version {
            kv_str(out, "protocol-version", v);
        }
        if let Some(v) = &self.server_info {
            kv_str(out, "server-info", v);
        }
        if !self.previous_versions.is_empty() {
            out.push_str("previous-versions = [");
            for (i, version) in self.previous_versions.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_toml_string(out, version);
            }
            out.push_str("]\n");
        }
        kv_str(out, "server-digest", &self.server_digest.to_string());
        kv_str(out, "catalog-revision", &self.catalog_revision.to_string());
        out.push_str(&format!("tool-count = {}\n", self.tool_count));
        out.push_str(&format!("total-tokens = {}\n", self.total_tokens));
        if let Some(n) = self.prompt_count {
            out.push_str(&format!("prompt-count = {n}\n"));
        }
        if let Some(n) = self.resource_template_count {
            out.push_str(&format!("resource-template-count = {n}\n"));
        }
        if let Some(d) = &self.instructions_digest {
            kv_str(out, "instructions-digest", &d.to_string());
        }
        if let Some(v) = &self.instructions {
            kv_str(out, "instructions", v);
        }
        for prompt in &self.prompts {
            out.push_str("\n[[server.prompt]]\n");
            kv_str(out, "name", &prompt.name);
            kv_str(out, "digest", &prompt.digest.to_string());
            kv_json(out, "content", &prompt.content);
        }
        for template in &self.resource_templates {
            out.push_str("\n[[server.resource-template]]\n");
            kv_str(out, "uri-template", &template.uri_template);
            kv_str(out, "digest", &template.digest.to_string());
            kv_json(out, "content", &template.content);
        }
        for tool in &self.tools {
            tool.write_toml(out);
        }
    }
}

impl LockedTool {
    fn write_toml(&self, out: &mut String) {
        out.push_str("\n[[server.tool]]\n");
        kv_str(out, "name", &self.name);
        kv_str(out, "digest", &self.digest.to_string());
        kv_str(out, "surface", &self.surface.to_string());
        kv_str(out, "behavior", &self.behavior.to_string());
        kv_str(out, "permissions", &self.permissions.to_string());
        kv_str(out, "economy", &self.economy.to_string());
        out.push_str(&format!("tokens = {}\n", self.tokens));
        out.push_str(&format!("bytes = {}\n", self.bytes));
        if let Some(v) = &self.title {
            kv_str(out, "title", v);
        }
        if let Some(v) = &self.description {
            kv_str(out, "description", v);
        }
        for (key, value) in [
            ("annotations", &self.annotations),
            ("other", &self.other),
            ("input-schema", &self.input_schema),
            ("output-schema", &self.output_schema),
            ("icons", &self.icons),
        ] {
            if let Some(v) = value {
                kv_json(out, key, v);
            }
        }
    }
}

/// `key = <string>` in the most readable TOML form that holds `value` exactly.
fn kv_str(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push_str(" = ");
    write_toml_string(out, value);
    out.push('\n');
}

/// `key = <pretty JSON>`: multi-line JSON goes in a multi-line string that opens and closes
/// on lines of their own, so a pull-request diff shows exactly the JSON lines that changed.
fn kv_json(out: &mut String, key: &str, pretty: &str) {
    if pretty.contains('\n') && can_be_multiline_literal(pretty) {
        out.push_str(key);
        out.push_str(" = '''\n");
        out.push_str(pretty);
        out.push_str("\n'''\n");
    } else {
        kv_str(out, key, pretty);
    }
}

fn is_toml_control(c: char) -> bool {
    (c < ' ' && c != '\t') || c == '\u{7f}'
}

fn can_be_multiline_literal(s: &str) -> bool {
    !s.contains("'''") && !s.ends_with('\'') && !s.chars().any(|c| is_toml_control(c) && c != '\n')
}

/// Writes `value` as a TOML string: basic `"…"` when nothing needs escaping, literal `'…'`
/// when it has quotes or backslashes, multi-line literal for text with newlines, and escaped
/// basic otherwise.
pub fn write_toml_string(out: &mut String, value: &str) {
    let needs_escape = |c: char| c == '"' || c == '\\' || is_toml_control(c);
    if !value.chars().any(needs_escape) {
        out.push('"');
        out.push_str(value);
        out.push('"');
    } else if !value.contains('\'') && !value.chars().any(is_toml_control) {
        out.push('\'');
        out.push_str(value);
        out.push('\'');
    } else if value.contains('\n') && can_be_multiline_literal(value) {
        out.push_str("'''\n");
        out.push_str(value);
        out.push_str("'''");
    } else {
        out.push('"');
        for c in value.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if is_toml_control(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// A lockfile as read, with whether its text is exactly what the writer would produce.
#[derive(Debug)]
pub struct ReadLockFile {
    pub lockfile: LockFile,
    /// The path as given, for messages.
    pub path: String,
    /// False when the text is valid but not canonical (hand-edited or reformatted).
    pub canonical: bool,
}

/// Reads and parses a lockfile. Missing file, merge-conflict markers, TOML errors, unknown
/// versions and unknown keys are each one clear error; no partial result is returned.
pub fn read_lockfile(path: &Path) -> Result<ReadLockFile, Error> {
    let label = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::lockfile(
                format!("{label} does not exist"),
                "create it with `catalock lock --from CAPTURE` (or pass --lockfile PATH)",
            )
        } else {
            Error::lockfile(
                format!("cannot read {label}: {}", io_reason(&e)),
                "check the path given to --lockfile",
            )
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::lockfile(
            format!("{label} is not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            "restore it from git (`git checkout -- mcp.lock`) or regenerate it with `catalock lock`",
        )
    })?;
    parse_lockfile(&text, &label)
}

/// Reads a lockfile handing each tool to `on_tool` as soon as it is read, which keeps it
/// (returns it, possibly reduced) or drops it. The canonical form is streamed from disk and
/// never held whole; anything else falls back to [`read_lockfile`] and the same callback.
/// `canonical` is not determined here (always false).
pub fn read_lockfile_streaming(
    path: &Path,
    on_tool: &mut dyn FnMut(&LockedServer, LockedTool) -> Option<LockedTool>,
) -> Result<ReadLockFile, Error> {
    let label = path.display().to_string();
    if let Ok(file) = std::fs::File::open(path)
        && let Some(lockfile) =
            fast::parse(std::io::BufReader::with_capacity(1 << 16, file), on_tool)
    {
        check_version(&lockfile, &label)?;
        check_algorithms(&lockfile, &label)?;
        return Ok(ReadLockFile {
            lockfile,
            path: label,
            canonical: false,
        });
    }
    let mut read = read_lockfile(path)?;
    for server in &mut read.lockfile.servers {
        let tools = std::mem::take(&mut server.tools);
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            kept.extend(on_tool(server, tool));
        }
        server.tools = kept;
    }
    read.canonical = false;
    Ok(read)
}

/// Parses lockfile text (see [`read_lockfile`]).
pub fn parse_lockfile(text: &str, label: &str) -> Result<ReadLockFile, Error> {
    if let Some(line) = conflict_marker_line(text) {
        return Err(Error::lockfile(
            format!(
                "{label}:{line}: merge-conflict markers; the lockfile is generated, so do not merge it by hand"
            ),
            "take either side (`git checkout --theirs mcp.lock`) and regenerate it with `catalock lock`",
        ));
    }
    let (lockfile, canonical) = match fast::parse(text.as_bytes(), &mut |_, tool| Some(tool)) {
        Some(lockfile) => {
            check_version(&lockfile, label)?;
            let canonical = lockfile.to_toml() == text;
            (lockfile, canonical)
        }
        None => (slow_parse(text, label)?, false),
    };
    check_algorithms(&lockfile, label)?;
    Ok(ReadLockFile {
        lockfile,
        path: label.to_string(),
        canonical,
    })
}

fn conflict_marker_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.starts_with("<<<<<<< ")
                || l == "<<<<<<<"
                || l.starts_with(">>>>>>> ")
                || l == ">>>>>>>"
                || l == "======="
        })
        .map(|i| i + 1)
}

fn check_version(lockfile: &LockFile, label: &str) -> Result<(), Error> {
    if lockfile.version != LOCKFILE_VERSION {
        return Err(unknown_version(lockfile.version as i64, label));
    }
    Ok(())
}

fn unknown_version(version: i64, label: &str) -> Error {
    Error::lockfile(
        format!(
            "{label} has format version {version}; this catalock ({}) reads version {LOCKFILE_VERSION}",
            env!("CARGO_PKG_VERSION")
        ),
        if version > LOCKFILE_VERSION as i64 {
            "upgrade catalock to the version that wrote this lockfile"
        } else {
            "regenerate the lockfile with `catalock lock`"
        },
    )
}

fn check_algorithms(lockfile: &LockFile, label: &str) -> Result<(), Error> {
    for (field, found, known) in [
        (
            "digest-algorithm",
            &lockfile.digest_algorithm,
            DIGEST_ALGORITHM,
        ),
        (
            "catalog-revision-algorithm",
            &lockfile.catalog_revision_algorithm,
            CATALOG_REVISION_FORMAT,
        ),
        ("tokenizer", &lockfile.tokenizer, TOKENIZER),
    ] {
        if found != known {
            return Err(Error::lockfile(
                format!("{label}: {field} is {found:?}; this catalock knows only {known:?}"),
                "upgrade catalock, or regenerate the lockfile with `catalock lock`",
            ));
        }
    }
    Ok(())
}

/// The general path: any valid TOML, with line and column on errors.
fn slow_parse(text: &str, label: &str) -> Result<LockFile, Error> {
    let toml_error = |e: toml::de::Error| {
        let (line, column) = e
            .span()
            .map(|span| crate::json::line_col(text, span.start))
            .unwrap_or((0, 0));
        let message = e.message().trim().replace('\n', " ");
        Error::lockfile(
            if line > 0 {
                format!("{label}:{line}:{column}: {message}")
            } else {
                format!("{label}: {message}")
            },
            "restore it from git (`git checkout -- mcp.lock`) or regenerate it with `catalock lock`",
        )
    };
    // The version decides how to read the rest, so look at it before the strict parse.
    let table: toml::Table = toml::from_str(text).map_err(toml_error)?;
    match table.get("version") {
        Some(toml::Value::Integer(v)) if *v == LOCKFILE_VERSION as i64 => {}
        Some(toml::Value::Integer(v)) => return Err(unknown_version(*v, label)),
        Some(_) => {
            return Err(Error::lockfile(
                format!("{label}: `version` is not an integer"),
                "regenerate the lockfile with `catalock lock`",
            ));
        }
        None => {
            return Err(Error::lockfile(
                format!("{label} has no `version`; it is not a catalock lockfile"),
                "pass the right file with --lockfile, or create one with `catalock lock`",
            ));
        }
    }
    let mut lockfile: LockFile = toml::from_str(text).map_err(toml_error)?;
    assign_lines(text, &mut lockfile);
    // JSON in a multi-line string closes on its own line; that newline is not JSON.
    for server in &mut lockfile.servers {
        let fields = server.tools.iter_mut().flat_map(|t| {
            [
                &mut t.annotations,
                &mut t.other,
                &mut t.input_schema,
                &mut t.output_schema,
                &mut t.icons,
            ]
        });
        for text in fields.flatten() {
            trim_json_newline(text);
        }
        for p in &mut server.prompts {
            trim_json_newline(&mut p.content);
        }
        for t in &mut server.resource_templates {
            trim_json_newline(&mut t.content);
        }
    }
    Ok(lockfile)
}

fn trim_json_newline(text: &mut String) {
    if text.ends_with('\n') {
        text.pop();
    }
}

/// Sets the `line` of each entry from its table header (`[[server]]`, `[[server.tool]]`, ...).
fn assign_lines(text: &str, lockfile: &mut LockFile) {
    let mut server: Option<usize> = None;
    let (mut tool, mut prompt, mut template) = (0, 0, 0);
    for (i, line) in text.lines().enumerate() {
        let header: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(s) = server.or(if header == "[[server]]" {
            Some(usize::MAX)
        } else {
            None
        }) else {
            continue;
        };
        match header.as_str() {
            "[[server]]" => {
                let next = if s == usize::MAX { 0 } else { s + 1 };
                server = Some(next);
                (tool, prompt, template) = (0, 0, 0);
                if let Some(entry) = lockfile.servers.get_mut(next) {
                    entry.line = i + 1;
                }
            }
            "[[server.tool]]" => {
                if let Some(t) = lockfile
                    .servers
                    .get_mut(s)
                    .and_then(|e| e.tools.get_mut(tool))
                {
                    t.line = i + 1;
                }
                tool += 1;
            }
            "[[server.prompt]]" => {
                if let Some(p) = lockfile
                    .servers
                    .get_mut(s)
                    .and_then(|e| e.prompts.get_mut(prompt))
                {
                    p.line = i + 1;
                }
                prompt += 1;
            }
            "[[server.resource-template]]" => {
                if let Some(t) = lockfile
                    .servers
                    .get_mut(s)
                    .and_then(|e| e.resource_templates.get_mut(template))
                {
                    t.line = i + 1;
                }
                template += 1;
            }
            _ => {}
        }
    }
}

/// The fast path: reads exactly the subset of TOML the writer emits, line by line, with no
/// tree. Returns `None` at the first thing it does not expect; the caller then uses the full
/// TOML parser, which accepts or precisely rejects the file.
mod fast {
    use super::*;

    enum Table {
        Root,
        Server,
        Tool,
        Prompt,
        Template,
    }

    /// Reads lines, one at a time, keeping the current one (without its newline). Newlines
    /// are found with the `memchr` crate's SIMD search and lines validated as UTF-8 with
    /// `simdutf8`: both are several times faster than `BufRead::read_line` on long lockfiles.
    struct Lines<R> {
        reader: R,
        bytes: Vec<u8>,
        line: String,
        number: usize,
    }

    impl<R: std::io::BufRead> Lines<R> {
        /// Advances to the next line; `None` at the end or on a read or UTF-8 error (the
        /// caller then falls back to the full parser, which reports the error).
        fn advance(&mut self) -> Option<()> {
            self.bytes.clear();
            loop {
                let available = self.reader.fill_buf().ok()?;
                if available.is_empty() {
                    if self.bytes.is_empty() {
                        return None;
                    }
                    break;
                }
                match memchr::memchr(b'\n', available) {
                    Some(i) => {
                        self.bytes.extend_from_slice(&available[..i]);
                        self.reader.consume(i + 1);
                        break;
                    }
                    None => {
                        let n = available.len();
                        self.bytes.extend_from_slice(available);
                        self.reader.consume(n);
                    }
                }
            }
            let text = simdutf8::basic::from_utf8(&self.bytes).ok()?;
            self.line.clear();
            self.line.push_str(text);
            self.number += 1;
            Some(())
        }
    }

    /// What to do with each tool as soon as it is read.
    pub(crate) type OnTool<'f> = &'f mut dyn FnMut(&LockedServer, LockedTool) -> Option<LockedTool>;

    fn finish_tool(
        lockfile: &mut LockFile,
        on_tool: &mut dyn FnMut(&LockedServer, LockedTool) -> Option<LockedTool>,
    ) {
        if let Some(server) = lockfile.servers.last_mut()
            && let Some(tool) = server.tools.pop()
            && let Some(kept) = on_tool(server, tool)
        {
            server.tools.push(kept);
        }
    }

    /// Parses the writer's subset of TOML from `reader`. Each finished tool is handed to
    /// `on_tool`, which returns it to keep it in the result or `None` to drop it (so a 50 MB
    /// lockfile can be verified without being held). `None` means "not the writer's form".
    pub(crate) fn parse<R: std::io::BufRead>(reader: R, on_tool: OnTool<'_>) -> Option<LockFile> {
        let mut lockfile = LockFile {
            version: 0,
            ..LockFile::default()
        };
        let mut seen_version = false;
        let mut table = Table::Root;
        let mut lines = Lines {
            reader,
            bytes: Vec::with_capacity(256),
            line: String::with_capacity(256),
            number: 0,
        };
        let mut multi = String::new();
        let closing = memchr::memmem::Finder::new(b"'''");
        loop {
            if lines.advance().is_none() {
                if matches!(table, Table::Tool) {
                    finish_tool(&mut lockfile, on_tool);
                }
                break;
            }
            let line_no = lines.number;
            let line = lines.line.as_str();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with('[') {
                if matches!(table, Table::Tool) {
                    finish_tool(&mut lockfile, on_tool);
                }
                table = match line {
                    "[[server]]" => {
                        lockfile.servers.push(empty_server(line_no));
                        Table::Server
                    }
                    "[[server.tool]]" => {
                        lockfile.servers.last_mut()?.tools.push(empty_tool(line_no));
                        Table::Tool
                    }
                    "[[server.prompt]]" => {
                        let server = lockfile.servers.last_mut()?;
                        server.prompts.push(LockedPrompt {
                            name: String::new(),
                            digest: ZERO,
                            content: String::new(),
                            line: line_no,
                        });
                        Table::Prompt
                    }
                    "[[server.resource-template]]" => {
                        let server = lockfile.servers.last_mut()?;
                        server.resource_templates.push(LockedResourceTemplate {
                            uri_template: String::new(),
                            digest: ZERO,
                            content: String::new(),
                            line: line_no,
                        });
                        Table::Template
                    }
                    _ => return None,
                };
                continue;
            }
            let (key, raw_value) = line.split_once(" = ")?;
            let key = key.to_string();
            let value = if raw_value == "'''" {
                // Multi-line literal: runs to the next `'''`, which must end its line.
                multi.clear();
                loop {
                    lines.advance()?;
                    match closing.find(lines.line.as_bytes()) {
                        Some(end) => {
                            if end + 3 != lines.line.len() {
                                return None;
                            }
                            multi.push_str(&lines.line[..end]);
                            break;
                        }
                        None => {
                            multi.push_str(&lines.line);
                            multi.push('\n');
                        }
                    }
                }
                Value::Multi(std::mem::take(&mut multi))
            } else {
                parse_scalar(raw_value)?
            };
            let key = key.as_str();
            match table {
                Table::Root => match (key, value) {
                    ("version", Value::Int(v)) => {
                        lockfile.version = u32::try_from(v).ok()?;
                        seen_version = true;
                    }
                    ("digest-algorithm", v) => lockfile.digest_algorithm = v.string()?,
                    ("catalog-revision-algorithm", v) => {
                        lockfile.catalog_revision_algorithm = v.string()?
                    }
                    ("tokenizer", v) => lockfile.tokenizer = v.string()?,
                    _ => return None,
                },
                Table::Server => {
                    let s = lockfile.servers.last_mut()?;
                    match (key, value) {
                        ("name", v) => s.name = v.string()?,
                        ("source", v) => s.source = v.string()?,
                        ("transport", v) => s.transport = Some(v.string()?),
                        ("command", v) => s.command = Some(v.string()?),
                        ("args", Value::List(list)) => s.args = list,
                        ("url", v) => s.url = Some(v.string()?),
                        ("era", v) => s.era = Some(v.string()?),
                        ("client-info", v) => s.client_info = Some(v.string()?),
                        ("client-capabilities", v) => s.client_capabilities = Some(v.string()?),
                        ("authorization", v) => s.authorization = Some(v.string()?),
                        ("protocol-version", v) => s.protocol_version = Some(v.string()?),
                        ("server-info", v) => s.server_info = Some(v.string()?),
                        ("previous-versions", Value::List(list)) => s.previous_versions = list,
                        ("server-digest", v) => s.server_digest = v.digest()?,
                        ("catalog-revision", v) => s.catalog_revision = v.digest()?,
                        ("tool-count", v) => s.tool_count = v.int()?,
                        ("total-tokens", v) => s.total_tokens = v.int()?,
                        ("prompt-count", v) => s.prompt_count = Some(v.int()?),
                        ("resource-template-count", v) => {
                            s.resource_template_count = Some(v.int()?)
                        }
                        ("instructions-digest", v) => s.instructions_digest = Some(v.digest()?),
                        ("instructions", v) => s.instructions = Some(v.string()?),
                        _ => return None,
                    }
                }
                Table::Tool => {
                    let t = lockfile.servers.last_mut()?.tools.last_mut()?;
                    match (key, value) {
                        ("name", v) => t.name = v.string()?,
                        ("digest", v) => t.digest = v.digest()?,
                        ("surface", v) => t.surface = v.digest()?,
                        ("behavior", v) => t.behavior = v.digest()?,
                        ("permissions", v) => t.permissions = v.digest()?,
                        ("economy", v) => t.economy = v.digest()?,
                        ("tokens", v) => t.tokens = v.int()?,
                        ("bytes", v) => t.bytes = v.int()?,
                        ("title", v) => t.title = Some(v.string()?),
                        ("description", v) => t.description = Some(v.string()?),
                        ("annotations", v) => t.annotations = Some(v.json()?),
                        ("other", v) => t.other = Some(v.json()?),
                        ("input-schema", v) => t.input_schema = Some(v.json()?),
                        ("output-schema", v) => t.output_schema = Some(v.json()?),
                        ("icons", v) => t.icons = Some(v.json()?),
                        _ => return None,
                    }
                }
                Table::Prompt => {
                    let p = lockfile.servers.last_mut()?.prompts.last_mut()?;
                    match (key, value) {
                        ("name", v) => p.name = v.string()?,
                        ("digest", v) => p.digest = v.digest()?,
                        ("content", v) => p.content = v.json()?,
                        _ => return None,
                    }
                }
                Table::Template => {
                    let t = lockfile.servers.last_mut()?.resource_templates.last_mut()?;
                    match (key, value) {
                        ("uri-template", v) => t.uri_template = v.string()?,
                        ("digest", v) => t.digest = v.digest()?,
                        ("content", v) => t.content = v.json()?,
                        _ => return None,
                    }
                }
            }
        }
        // Anything the writer never leaves out (a missing name or digest) sends the file to
        // the full parser, which names the missing key.
        let complete = seen_version
            && lockfile.servers.iter().all(|s| {
                !s.name.is_empty()
                    && s.server_digest != ZERO
                    && s.catalog_revision != ZERO
                    && s.tools.iter().all(|t| {
                        !t.name.is_empty()
                            && [t.digest, t.surface, t.behavior, t.permissions, t.economy]
                                .iter()
                                .all(|d| *d != ZERO)
                    })
                    && s.prompts
                        .iter()
                        .all(|p| !p.name.is_empty() && p.digest != ZERO)
                    && s.resource_templates
                        .iter()
                        .all(|t| !t.uri_template.is_empty() && t.digest != ZERO)
            });
        complete.then_some(lockfile)
    }

    const ZERO: Digest = Digest([0; 32]);

    fn empty_server(line: usize) -> LockedServer {
        LockedServer {
            name: String::new(),
            source: String::new(),
            transport: None,
            command: None,
            args: Vec::new(),
            url: None,
            era: None,
            client_info: None,
            client_capabilities: None,
            authorization: None,
            protocol_version: None,
            server_info: None,
            previous_versions: Vec::new(),
            server_digest: ZERO,
            catalog_revision: ZERO,
            tool_count: 0,
            total_tokens: 0,
            prompt_count: None,
            resource_template_count: None,
            instructions_digest: None,
            instructions: None,
            prompts: Vec::new(),
            resource_templates: Vec::new(),
            tools: Vec::new(),
            line,
        }
    }

    fn empty_tool(line: usize) -> LockedTool {
        LockedTool {
            name: String::new(),
            digest: ZERO,
            surface: ZERO,
            behavior: ZERO,
            permissions: ZERO,
            economy: ZERO,
            tokens: 0,
            bytes: 0,
            title: None,
            description: None,
            annotations: None,
            other: None,
            input_schema: None,
            output_schema: None,
            icons: None,
            line,
        }
    }

    enum Value {
        Str(String),
        /// A one-line array of strings (`args`).
        List(Vec<String>),
        /// The body of a multi-line literal (after the newline that TOML trims).
        Multi(String),
        Int(u64),
    }

    impl Value {
        fn string(self) -> Option<String> {
            match self {
                Value::Str(s) | Value::Multi(s) => Some(s),
                Value::Int(_) | Value::List(_) => None,
            }
        }
        /// JSON text: the writer closes multi-line JSON on a line of its own, so the body
        /// ends with a newline that is not part of the JSON.
        fn json(self) -> Option<String> {
            match self {
                Value::Str(s) => Some(s),
                Value::Multi(mut s) => s.pop().filter(|c| *c == '\n').map(|_| s),
                Value::Int(_) | Value::List(_) => None,
            }
        }
        fn int(self) -> Option<u64> {
            match self {
                Value::Int(v) => Some(v),
                _ => None,
            }
        }
        fn digest(self) -> Option<Digest> {
            self.string()?.parse().ok()
        }
    }

    /// `["a", 'b\c']`: a one-line array of basic or literal strings.
    fn parse_list(raw: &str) -> Option<Value> {
        let mut rest = raw.strip_prefix('[')?;
        let mut items = Vec::new();
        if let Some(after) = rest.strip_prefix(']') {
            return after.is_empty().then_some(Value::List(items));
        }
        loop {
            // The end of this element: a closing quote not escaped (basic) or the next `'`.
            let end = match rest.as_bytes().first()? {
                b'"' => {
                    let bytes = rest.as_bytes();
                    let mut i = 1;
                    loop {
                        match bytes.get(i)? {
                            b'\\' => i += 2,
                            b'"' => break i + 1,
                            _ => i += 1,
                        }
                    }
                }
                b'\'' => rest[1..].find('\'')? + 2,
                _ => return None,
            };
            match parse_scalar(&rest[..end])? {
                Value::Str(s) => items.push(s),
                _ => return None,
            }
            rest = &rest[end..];
            if let Some(after) = rest.strip_prefix(", ") {
                rest = after;
            } else if rest == "]" {
                return Some(Value::List(items));
            } else {
                return None;
            }
        }
    }

    fn parse_scalar(raw: &str) -> Option<Value> {
        let bytes = raw.as_bytes();
        match bytes.first()? {
            b'[' => parse_list(raw),
            b'"' => {
                let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
                if !inner.contains('\\') {
                    if inner.contains('"') || inner.chars().any(is_toml_control) {
                        return None;
                    }
                    return Some(Value::Str(inner.to_string()));
                }
                unescape_basic(inner).map(Value::Str)
            }
            b'\'' => {
                let inner = raw.strip_prefix('\'')?.strip_suffix('\'')?;
                if inner.contains('\'') || inner.chars().any(is_toml_control) {
                    return None;
                }
                Some(Value::Str(inner.to_string()))
            }
            b'0'..=b'9' => {
                if raw.len() > 1 && raw.starts_with('0') {
                    return None;
                }
                raw.parse().ok().map(Value::Int)
            }
            _ => None,
        }
    }

    fn unescape_basic(inner: &str) -> Option<String> {
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return None,
                c if is_toml_control(c) => return None,
                '\\' => match chars.next()? {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    _ => return None,
                },
                c => out.push(c),
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_toml() {
        for value in [
            "plain",
            "with \"quotes\" and \\ backslash",
            "it's",
            "multi\nline",
            "multi\nline with ''' inside",
            "ends with quote'\nx'",
            "control \u{1} and \u{7f} and \r\n",
            "tab\there",
            "\nleading newline",
            "",
        ] {
            let mut text = String::from("v = ");
            write_toml_string(&mut text, value);
            text.push('\n');
            let table: toml::Table =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(table["v"].as_str(), Some(value), "{text}");
        }
    }

    #[test]
    fn server_names_are_sanitized() {
        assert_eq!(sanitize_server_name("mcp-servers/everything"), "everything");
        assert_eq!(sanitize_server_name("Notion API"), "Notion-API");
        assert_eq!(sanitize_server_name("  "), "");
        assert!(validate_server_name("a/b").is_err());
        assert!(validate_server_name("ok.name_1-2").is_ok());
    }

    #[test]
    fn conflict_markers_are_found() {
        let text = "version = 1\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> branch\n";
        let err = parse_lockfile(text, "mcp.lock").unwrap_err();
        assert!(
            err.message
                .starts_with("mcp.lock:2: merge-conflict markers"),
            "{}",
            err.message
        );
    }
}
