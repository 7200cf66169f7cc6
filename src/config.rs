//! Which servers to lock: `catalock.toml`, or the MCP client configs users already have
//! (`.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`, `claude_desktop_config.json`).
//!
//! Values may reference environment variables as `${NAME}` (or VS Code's `${env:NAME}`);
//! they are expanded only when a server is started, and what the lockfile records is the text
//! as written, so a secret in the environment never reaches it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;
use crate::lockfile::{sanitize_server_name, validate_server_name};

/// The config file `lock` and `check` read when given no source.
pub const CONFIG_FILE: &str = "catalock.toml";
/// MCP client configs detected when there is no `catalock.toml`, in this order.
pub const DETECTED_MCP_CONFIGS: [&str; 3] = [".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"];

/// `catalock.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default, rename = "server")]
    pub servers: Vec<ConfiguredServer>,
    #[serde(default)]
    pub policy: crate::policy::PolicyConfig,
    #[serde(default, rename = "approval")]
    pub approvals: Vec<crate::policy::Approval>,
    #[serde(default, rename = "deprecation")]
    pub deprecations: Vec<crate::policy::Deprecation>,
    /// Owners of servers that have no `[[server]]` here (those from an MCP client config).
    #[serde(default)]
    pub owners: std::collections::BTreeMap<String, String>,
}

/// One `[[server]]`: a stdio command or an HTTP URL.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfiguredServer {
    pub name: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Client capabilities to declare, as a TOML table.
    #[serde(default)]
    pub client_capabilities: Option<toml::Table>,
    /// `auto` (default), `modern`, `legacy` or a protocol version.
    #[serde(default)]
    pub protocol: Option<String>,
    /// The team or person who reviews this server's contract changes.
    #[serde(default)]
    pub owner: Option<String>,
    /// Token budget for the server's tools (`tokens-grew` when passed).
    #[serde(default)]
    pub token_budget: Option<u64>,
}

/// Where the server list came from, for messages.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    pub path: PathBuf,
    pub servers: Vec<ConfiguredServer>,
}

/// What `catalock.toml` says about judging changes (empty when there is no file).
#[derive(Debug, Clone, Default)]
pub struct Governance {
    pub policy: crate::policy::Policy,
    /// Servers declared in `catalock.toml`: (name, owner, token budget).
    pub servers: Vec<(String, Option<String>, Option<u64>)>,
}

/// Reads the policy, approvals, deprecations and owners of `catalock.toml` in `dir`.
pub fn load_governance(path: &Path) -> Result<Governance, Error> {
    if !path.exists() {
        return Ok(Governance::default());
    }
    governance_of(parse_catalock_toml(path)?)
}

/// The governance of a `catalock.toml` given as text (e.g. as committed at a git base).
pub fn governance_from_text(text: &str, path: &Path) -> Result<Governance, Error> {
    governance_of(parse_config_text(text, path)?)
}

fn governance_of(config: ConfigFile) -> Result<Governance, Error> {
    Ok(Governance {
        policy: crate::policy::Policy {
            config: config.policy,
            approvals: config.approvals,
            deprecations: config.deprecations,
        },
        servers: config
            .servers
            .into_iter()
            .map(|s| {
                let owner = s.owner.or_else(|| config.owners.get(&s.name).cloned());
                (s.name, owner, s.token_budget)
            })
            .chain(
                config
                    .owners
                    .iter()
                    .map(|(n, o)| (n.clone(), Some(o.clone()), None)),
            )
            .collect(),
    })
}

/// Loads `catalock.toml` if present, else the first MCP client config found.
pub fn discover_config(dir: &Path) -> Result<Option<LoadedConfig>, Error> {
    let main = dir.join(CONFIG_FILE);
    if main.exists() {
        let loaded = load_catalock_toml(&main)?;
        // A catalock.toml may hold only policy; the servers then come from an MCP config.
        if !loaded.servers.is_empty() {
            return Ok(Some(loaded));
        }
    }
    for candidate in DETECTED_MCP_CONFIGS {
        let path = dir.join(candidate);
        if path.exists() {
            return load_mcp_config(&path).map(Some);
        }
    }
    Ok(None)
}

pub fn load_catalock_toml(path: &Path) -> Result<LoadedConfig, Error> {
    let config = parse_catalock_toml(path)?;
    Ok(LoadedConfig {
        path: path.to_path_buf(),
        servers: config.servers,
    })
}

fn parse_catalock_toml(path: &Path) -> Result<ConfigFile, Error> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(
            format!("cannot read {label}: {}", crate::error::io_reason(&e)),
            "check the path",
        )
    })?;
    parse_config_text(&text, path)
}

/// Checks that `text` is a `catalock.toml` catalock accepts.
pub fn load_governance_text(text: &str, path: &Path) -> Result<(), Error> {
    parse_config_text(text, path).map(|_| ())
}

fn parse_config_text(text: &str, path: &Path) -> Result<ConfigFile, Error> {
    let label = path.display().to_string();
    let config: ConfigFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| crate::json::line_col(text, s.start))
            .unwrap_or((0, 0));
        Error::usage(
            format!(
                "{label}:{line}:{column}: {}",
                e.message().trim().replace('\n', " ")
            ),
            "fix catalock.toml (servers: README, Live servers; [policy] and approvals: docs/review.md)",
        )
    })?;
    if let Some((name, place)) = crate::policy::unknown_codes(&config.policy).first() {
        let close = crate::codes::similar(name);
        return Err(Error::usage(
            format!(
                "{label}: {place} names {name:?}, which is not a change code{}",
                if close.is_empty() {
                    String::new()
                } else {
                    format!(" (did you mean {}?)", close.join(", "))
                }
            ),
            "catalock explain --list",
        ));
    }
    for server in &config.servers {
        validate_server_name(&server.name)
            .map_err(|e| Error::usage(format!("{label}: {}", e.message), e.hint))?;
        match (&server.command, &server.url) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(Error::usage(
                    format!(
                        "{label}: server `{}` needs exactly one of `command` (stdio) or `url` (HTTP)",
                        server.name
                    ),
                    "fix catalock.toml",
                ));
            }
        }
    }
    let mut names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::usage(
            format!("{label}: server `{}` is named twice", pair[0]),
            "give each [[server]] its own name",
        ));
    }
    Ok(config)
}

/// Reads an MCP client config: `mcpServers` (Claude Code, Claude Desktop, Cursor) or
/// `servers` (VS Code).
pub fn load_mcp_config(path: &Path) -> Result<LoadedConfig, Error> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(
            format!("cannot read {label}: {}", crate::error::io_reason(&e)),
            "check the path given to --mcp-config",
        )
    })?;
    let value = crate::json::parse_strict(&text)
        .map_err(|e| Error::usage(format!("{label}: {e}"), "fix the JSON"))?;
    let servers = value
        .get("mcpServers")
        .or_else(|| value.get("servers"))
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| {
            Error::usage(
                format!("{label} has no \"mcpServers\" or \"servers\" object"),
                "pass an MCP client config",
            )
        })?;
    let mut out = Vec::new();
    for (key, entry) in servers {
        let name = sanitize_server_name(key);
        let strings = |field: &str| -> std::collections::BTreeMap<String, String> {
            entry
                .get(field)
                .and_then(serde_json::Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let server = ConfiguredServer {
            name: if name.is_empty() {
                "server".to_string()
            } else {
                name
            },
            command: entry
                .get("command")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            args: entry
                .get("args")
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            env: strings("env"),
            cwd: entry
                .get("cwd")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            url: entry
                .get("url")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            headers: strings("headers"),
            client_capabilities: None,
            protocol: None,
            owner: None,
            token_budget: None,
        };
        if server.command.is_none() && server.url.is_none() {
            return Err(Error::usage(
                format!("{label}: server {key:?} has neither \"command\" nor \"url\""),
                "fix the MCP config",
            ));
        }
        // Two keys that sanitize to one name would silently share a lockfile entry.
        if let Some(other) = out
            .iter()
            .find(|s: &&ConfiguredServer| s.name == server.name)
        {
            return Err(Error::usage(
                format!(
                    "{label}: two servers would both be named `{}` in the lockfile",
                    other.name
                ),
                "rename one of them in the MCP config (names keep letters, digits, '.', '_' and '-')",
            ));
        }
        out.push(server);
    }
    Ok(LoadedConfig {
        path: path.to_path_buf(),
        servers: out,
    })
}

/// Expands `${NAME}` and `${env:NAME}` from the environment. A missing variable is an error
/// naming the variable (never a value).
pub fn expand(text: &str, server: &str) -> Result<String, Error> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = after[..end].strip_prefix("env:").unwrap_or(&after[..end]);
        let value = std::env::var(name).map_err(|_| {
            Error::usage(
                format!("server `{server}` uses ${{{name}}}, which is not set in the environment"),
                format!("export {name}=… before running catalock"),
            )
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_and_missing_ones_are_named() {
        // SAFETY-free: set_var is safe in tests that do not race on this name.
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(
            expand("a ${HOME} b ${env:HOME}", "s").unwrap(),
            format!("a {home} b {home}")
        );
        assert_eq!(expand("no vars $HOME", "s").unwrap(), "no vars $HOME");
        let err = expand("${CATALOCK_SURELY_UNSET_VAR}", "s").unwrap_err();
        assert!(
            err.message
                .contains("${CATALOCK_SURELY_UNSET_VAR}, which is not set"),
            "{}",
            err.message
        );
    }
}
