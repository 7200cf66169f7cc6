//! JSON Schemas of the lockfile and of the JSON report, generated from the Rust types so they
//! cannot drift (a test compares them with the committed `schemas/` files).

/// `schemas/mcp-lock.schema.json`: the lockfile, as TOML parsed into JSON.
pub fn lockfile_schema() -> String {
    pretty(schemars::schema_for!(crate::lockfile::LockFile))
}

/// `schemas/report.schema.json`: the output of `--format json`.
pub fn report_schema() -> String {
    pretty(schemars::schema_for!(crate::report::Report))
}

fn pretty(schema: schemars::Schema) -> String {
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serializes");
    text.push('\n');
    text
}
