//! The catalog file: list items kept as their raw JSON text, so they are served unchanged.

use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

/// What the server serves. Every JSON field holds compact raw JSON text.
#[derive(Debug, Default)]
pub struct Catalog {
    pub tools: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    pub resources: Option<Vec<String>>,
    pub resource_templates: Option<Vec<String>>,
    /// Raw JSON (normally a string).
    pub instructions: Option<String>,
    /// Raw JSON object.
    pub server_info: String,
    /// Raw JSON object.
    pub capabilities: String,
}

/// One object of the file. Unknown keys (`nextCursor`, `_meta`, …) are ignored.
#[derive(Deserialize)]
struct Page {
    tools: Option<Vec<Box<RawValue>>>,
    prompts: Option<Vec<Box<RawValue>>>,
    resources: Option<Vec<Box<RawValue>>>,
    #[serde(rename = "resourceTemplates")]
    resource_templates: Option<Vec<Box<RawValue>>>,
    instructions: Option<Box<RawValue>>,
    #[serde(rename = "serverInfo")]
    server_info: Option<Box<RawValue>>,
    capabilities: Option<Box<RawValue>>,
}

impl Catalog {
    pub fn load(path: &Path) -> Result<Catalog, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        Catalog::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Catalog, String> {
        // RawValue does not survive untagged enums, so look at the first byte instead.
        let pages: Vec<Page> = match text.trim_start().as_bytes().first() {
            Some(b'[') => serde_json::from_str(text).map_err(|e| e.to_string())?,
            Some(b'{') => vec![serde_json::from_str(text).map_err(|e| e.to_string())?],
            _ => return Err("expected a JSON object or an array of objects".into()),
        };
        let mut catalog = Catalog::default();
        let mut server_info = None;
        let mut capabilities = None;
        for page in pages {
            append(&mut catalog.tools, page.tools);
            append(&mut catalog.prompts, page.prompts);
            append(&mut catalog.resources, page.resources);
            append(&mut catalog.resource_templates, page.resource_templates);
            if catalog.instructions.is_none() {
                catalog.instructions = page.instructions.map(|raw| minify(raw.get()));
            }
            if server_info.is_none() {
                server_info = page.server_info.map(|raw| minify(raw.get()));
            }
            if capabilities.is_none() {
                capabilities = page.capabilities.map(|raw| minify(raw.get()));
            }
        }
        catalog.server_info =
            server_info.unwrap_or_else(|| r#"{"name":"fixture","version":"1.0.0"}"#.to_string());
        catalog.capabilities = capabilities.unwrap_or_else(|| catalog.default_capabilities());
        Ok(catalog)
    }

    /// `tools`, `prompts` and `resources`, each only when the catalog has that list.
    fn default_capabilities(&self) -> String {
        let mut parts = Vec::new();
        if self.tools.is_some() {
            parts.push(r#""tools":{}"#);
        }
        if self.prompts.is_some() {
            parts.push(r#""prompts":{}"#);
        }
        if self.resources.is_some() || self.resource_templates.is_some() {
            parts.push(r#""resources":{}"#);
        }
        format!("{{{}}}", parts.join(","))
    }
}

fn append(into: &mut Option<Vec<String>>, items: Option<Vec<Box<RawValue>>>) {
    if let Some(items) = items {
        into.get_or_insert_with(Vec::new)
            .extend(items.iter().map(|raw| minify(raw.get())));
    }
}

/// Removes the whitespace outside strings (JSON text on stdio must not contain newlines);
/// everything else, including escapes and number spellings, is kept byte for byte.
pub fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else {
            match c {
                ' ' | '\t' | '\n' | '\r' => {}
                '"' => {
                    in_string = true;
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
    out
}
