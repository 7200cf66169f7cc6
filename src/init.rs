//! `catalock init`: from what a repository already has (an MCP client config, or a Node or
//! Python package that is an MCP server) to `catalock.toml`, a first `mcp.lock` and a GitHub
//! workflow. Secrets in the client config are never copied: environment values and headers
//! become `${NAME}` references the shell must provide.

use std::io::Write;
use std::path::Path;

use crate::cli::InitArgs;
use crate::config::{CONFIG_FILE, ConfiguredServer, DETECTED_MCP_CONFIGS};
use crate::error::Error;

/// The workflow `init` writes (also `docs/examples/catalock.yml`, linted by the tests).
pub const WORKFLOW: &str = include_str!("../docs/examples/catalock.yml");
const WORKFLOW_PATH: &str = ".github/workflows/catalock.yml";

/// Where the servers were found, for the message.
struct Found {
    source: String,
    servers: Vec<ConfiguredServer>,
}

pub fn init(args: &InitArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Error> {
    let targets = [CONFIG_FILE, args.lockfile.as_str(), WORKFLOW_PATH];
    let existing: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|t| Path::new(t).exists())
        .collect();
    if !existing.is_empty() && !args.force {
        return Err(Error::usage(
            format!(
                "{} already exist{}",
                existing.join(", "),
                if existing.len() == 1 { "s" } else { "" }
            ),
            "catalock init --force to overwrite them",
        ));
    }
    let found = detect(Path::new("."))?;
    let config = config_text(&found);
    crate::config::load_governance_text(&config, Path::new(CONFIG_FILE))?;
    crate::lockfile::write_atomic(Path::new(CONFIG_FILE), config.as_bytes())?;
    std::fs::create_dir_all(".github/workflows").map_err(|e| {
        Error::io(
            format!(
                "cannot create .github/workflows: {}",
                crate::error::io_reason(&e)
            ),
            "check the directory's permissions",
        )
    })?;
    crate::lockfile::write_atomic(Path::new(WORKFLOW_PATH), WORKFLOW.as_bytes())?;
    let mut message = format!(
        "wrote {CONFIG_FILE} ({} server{} from {}) and {WORKFLOW_PATH}; review catalock.toml before committing it (arguments are copied as written)\n",
        found.servers.len(),
        if found.servers.len() == 1 { "" } else { "s" },
        found.source
    );
    if args.no_lock {
        message.push_str("next: give each [[server]] an owner, then run `catalock lock`\n");
        write_all(out, &message)?;
        return Ok(crate::EXIT_SAME);
    }
    write_all(out, &message)?;
    let lock = <crate::cli::Cli as clap::Parser>::try_parse_from([
        "catalock",
        "lock",
        "--lockfile",
        &args.lockfile,
    ])
    .map_err(|e| Error::usage(e.to_string().trim().to_string(), "catalock lock --help"))?;
    let code = crate::app::run(&lock, out, err);
    if code == crate::EXIT_SAME {
        write_all(
            out,
            "next: give each [[server]] an owner in catalock.toml, commit the three files\n",
        )?;
    } else {
        write_all(
            err,
            "catalock.toml and the workflow are written; fix the server error above, then run `catalock lock`\n",
        )?;
    }
    Ok(code)
}

fn write_all(target: &mut dyn Write, text: &str) -> Result<(), Error> {
    target.write_all(text.as_bytes()).map_err(|e| {
        Error::io(
            format!("cannot write output: {}", crate::error::io_reason(&e)),
            "check the output",
        )
    })
}

/// The servers a repository already describes, first match wins.
fn detect(dir: &Path) -> Result<Found, Error> {
    for candidate in DETECTED_MCP_CONFIGS {
        let path = dir.join(candidate);
        if path.exists() {
            let loaded = crate::config::load_mcp_config(&path)?;
            return Ok(Found {
                source: candidate.to_string(),
                servers: loaded.servers,
            });
        }
    }
    if let Some(found) = node_package(dir)? {
        return Ok(found);
    }
    if let Some(found) = python_package(dir)? {
        return Ok(found);
    }
    Err(Error::usage(
        "found no MCP server here: no .mcp.json, .vscode/mcp.json, .cursor/mcp.json, no package.json depending on @modelcontextprotocol/sdk with a `bin`, no pyproject.toml depending on `mcp` with a script",
        "write catalock.toml by hand (README: Live servers), or run `catalock lock -- COMMAND ARGS`",
    ))
}

/// A package.json that depends on the MCP SDK and declares a `bin`: `node <bin>`.
fn node_package(dir: &Path) -> Result<Option<Found>, Error> {
    let path = dir.join("package.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let package = crate::json::parse_strict(&text)
        .map_err(|e| Error::input(format!("package.json: {e}"), "fix package.json"))?;
    let depends = ["dependencies", "devDependencies", "peerDependencies"]
        .iter()
        .any(|k| {
            package
                .get(k)
                .and_then(|d| d.get("@modelcontextprotocol/sdk"))
                .is_some()
        });
    if !depends {
        return Ok(None);
    }
    let name = package
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("server");
    let bins: Vec<(String, String)> = match package.get("bin") {
        Some(serde_json::Value::String(script)) => vec![(name.to_string(), script.clone())],
        Some(serde_json::Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    if bins.is_empty() {
        return Ok(None);
    }
    let servers = bins
        .into_iter()
        .map(|(bin, script)| server(&bin, "node", vec![script.replace('\\', "/")]))
        .collect();
    Ok(Some(Found {
        source: "package.json".to_string(),
        servers,
    }))
}

/// A pyproject.toml that depends on `mcp` and declares `[project.scripts]`.
fn python_package(dir: &Path) -> Result<Option<Found>, Error> {
    let path = dir.join("pyproject.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let project: toml::Table = toml::from_str(&text).map_err(|e| {
        Error::input(
            format!("pyproject.toml: {}", e.message()),
            "fix pyproject.toml",
        )
    })?;
    let Some(project) = project.get("project").and_then(|p| p.as_table()) else {
        return Ok(None);
    };
    let depends = project
        .get("dependencies")
        .and_then(|d| d.as_array())
        .is_some_and(|deps| {
            deps.iter().filter_map(|d| d.as_str()).any(|d| {
                let name: String = d
                    .chars()
                    .take_while(|c| {
                        c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.'
                    })
                    .collect();
                name.eq_ignore_ascii_case("mcp")
            })
        });
    let scripts: Vec<String> = project
        .get("scripts")
        .and_then(|s| s.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    if !depends || scripts.is_empty() {
        return Ok(None);
    }
    let servers = scripts
        .iter()
        .map(|script| server(script, "uv", vec!["run".to_string(), script.clone()]))
        .collect();
    Ok(Some(Found {
        source: "pyproject.toml".to_string(),
        servers,
    }))
}

fn server(name: &str, command: &str, args: Vec<String>) -> ConfiguredServer {
    ConfiguredServer {
        name: {
            let clean = crate::lockfile::sanitize_server_name(name);
            if clean.is_empty() {
                "server".to_string()
            } else {
                clean
            }
        },
        command: Some(command.to_string()),
        args,
        env: Default::default(),
        cwd: None,
        url: None,
        headers: Default::default(),
        client_capabilities: None,
        protocol: None,
        owner: None,
        token_budget: None,
    }
}

/// TOML text for the servers. Values of `env` and `headers` are replaced by `${NAME}`
/// references: a client config often holds secrets, and catalock.toml is committed.
fn config_text(found: &Found) -> String {
    let mut out = format!(
        "# catalock: the MCP servers whose contract mcp.lock guards (from {}).\n\
         # Give each server an owner: the team or person who reviews its contract changes.\n\
         # Policy and approvals: docs/review.md in the catalock repository.\n",
        found.source
    );
    let quote = |s: &str| {
        let mut text = String::new();
        crate::lockfile::write_toml_string(&mut text, s);
        text
    };
    for server in &found.servers {
        out.push_str("\n[[server]]\n");
        out.push_str(&format!("name = {}\n", quote(&server.name)));
        out.push_str("# owner = \"your-team\"\n");
        if let Some(command) = &server.command {
            out.push_str(&format!("command = {}\n", quote(command)));
            if !server.args.is_empty() {
                let args: Vec<String> = server.args.iter().map(|a| quote(a)).collect();
                out.push_str(&format!("args = [{}]\n", args.join(", ")));
            }
        }
        if let Some(url) = &server.url {
            // Credentials and query strings (`?api_key=…`) stay out of a committed file.
            let redacted = crate::live::http::redact_url(url);
            if redacted != *url {
                out.push_str("# the URL's credentials or query were left out: put them in headers = { … = \"${VAR}\" }\n");
            }
            out.push_str(&format!("url = {}\n", quote(&redacted)));
        }
        if let Some(cwd) = &server.cwd {
            out.push_str(&format!("cwd = {}\n", quote(cwd)));
        }
        for (table, keys) in [("env", &server.env), ("headers", &server.headers)] {
            if keys.is_empty() {
                continue;
            }
            let entries: Vec<String> = keys
                .keys()
                .map(|k| {
                    let var: String = k
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() {
                                c.to_ascii_uppercase()
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    format!("{} = {}", quote(k), quote(&format!("${{{var}}}")))
                })
                .collect();
            out.push_str(&format!(
                "{table} = {{ {} }}   # values come from the environment\n",
                entries.join(", ")
            ));
        }
    }
    out
}
