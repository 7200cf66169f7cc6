//! Property tests of the digest algorithm:
//! - permuting object key order or tool order never changes any digest;
//! - changing any single field changes the digest of exactly the section that owns it.

use catalock::build::{BuildOptions, Detail, build_server};
use catalock::capture::Capture;
use catalock::contract::{Economy, PERMISSION_HINTS, Section, canonical_sections};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1.0e6f64..1.0e6)
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z \u{e9}\u{200b}\u{1F600}\"\\\\\n]{0,12}".prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_$\u{fb33}\u{1F600}]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const TOP_KEYS: [&str; 11] = [
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "icons",
    "execution",
    "_meta",
    "x-vendor",
    "annotations",
    "deprecated",
    "Ω",
];

fn annotations() -> impl Strategy<Value = Value> {
    let hint = prop_oneof![4 => any::<bool>().prop_map(Value::Bool), 1 => leaf()];
    (
        prop::option::of(hint.clone()),
        prop::option::of(hint.clone()),
        prop::option::of(hint.clone()),
        prop::option::of(hint),
        prop::option::of(leaf()),
    )
        .prop_map(|(a, b, c, d, title)| {
            let mut map = Map::new();
            for (key, value) in [
                ("readOnlyHint", a),
                ("destructiveHint", b),
                ("idempotentHint", c),
                ("openWorldHint", d),
                ("title", title),
            ] {
                if let Some(v) = value {
                    map.insert(key.to_string(), v);
                }
            }
            Value::Object(map)
        })
}

fn tool(name: String) -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::collection::vec((0..TOP_KEYS.len(), json()), 0..6),
        annotations(),
    )
        .prop_map(move |(members, annotations)| {
            let mut map = Map::new();
            map.insert("name".to_string(), Value::String(name.clone()));
            for (k, v) in members {
                let key = TOP_KEYS[k];
                map.insert(
                    key.to_string(),
                    if key == "annotations" {
                        annotations.clone()
                    } else {
                        v
                    },
                );
            }
            map
        })
}

fn catalog() -> impl Strategy<Value = Vec<Map<String, Value>>> {
    prop::collection::btree_set("[a-z][a-z0-9_.-]{0,8}", 1..6)
        .prop_flat_map(|names| names.into_iter().map(tool).collect::<Vec<_>>())
}

/// JSON text of `value` with every object's keys in an order chosen by `seed`.
fn shuffled_text(value: &Value, seed: &mut u64) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            for i in (1..entries.len()).rev() {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                entries.swap(i, (*seed >> 33) as usize % (i + 1));
            }
            let members: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).unwrap(),
                        shuffled_text(v, seed)
                    )
                })
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| shuffled_text(v, seed))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

fn digests_of(
    text: String,
) -> (
    catalock::contract::Digest,
    Vec<(String, catalock::contract::Digest)>,
) {
    let mut capture = Capture::default();
    capture
        .add_source("t.json".to_string(), text)
        .expect("valid capture");
    let options = BuildOptions {
        name: "s".to_string(),
        source: String::new(),
        previous: None,
        detail: Detail::Full,
    };
    let server = build_server(&capture, &options).expect("builds");
    (
        server.server_digest,
        server
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.digest))
            .collect(),
    )
}

fn effective_hints(tool: &Map<String, Value>) -> Vec<Value> {
    PERMISSION_HINTS
        .iter()
        .map(|(hint, default)| {
            tool.get("annotations")
                .and_then(Value::as_object)
                .and_then(|a| a.get(*hint))
                .cloned()
                .unwrap_or(Value::Bool(*default))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn key_order_and_tool_order_never_change_a_digest(tools in catalog(), seed in any::<u64>()) {
        let plain = format!("{{\"tools\":{}}}", Value::Array(tools.iter().cloned().map(Value::Object).collect()));
        let mut reversed = tools.clone();
        reversed.reverse();
        let mut seed = seed;
        let shuffled = format!(
            "{{\"tools\":[{}]}}",
            reversed.iter().map(|t| shuffled_text(&Value::Object(t.clone()), &mut seed)).collect::<Vec<_>>().join(",")
        );
        prop_assert_eq!(digests_of(plain), digests_of(shuffled));
    }

    #[test]
    fn a_single_field_change_moves_exactly_its_section(tool in tool("t".to_string()), pick in any::<prop::sample::Index>(), new in json()) {
        // Every field, with annotation members as fields of their own.
        let mut fields: Vec<(String, Option<String>)> = tool.keys().filter(|k| *k != "annotations" && *k != "name").map(|k| (k.clone(), None)).collect();
        if let Some(Value::Object(a)) = tool.get("annotations") {
            fields.extend(a.keys().map(|k| ("annotations".to_string(), Some(k.clone()))));
        }
        prop_assume!(!fields.is_empty());
        let (key, sub) = fields[pick.index(fields.len())].clone();
        let mut changed = tool.clone();
        let (owner, old) = match &sub {
            None => (Section::owner_of(&key), changed.insert(key.clone(), new.clone())),
            Some(sub) => {
                let annotations = changed.get_mut("annotations").unwrap().as_object_mut().unwrap();
                (Section::owner_of_annotation(sub), annotations.insert(sub.clone(), new.clone()))
            }
        };
        prop_assume!(old.as_ref() != Some(&new));
        if owner == Section::Permissions {
            prop_assume!(effective_hints(&tool) != effective_hints(&changed));
        }
        let economy = Economy { tokens: 0, bytes: 0 };
        let before = canonical_sections(&tool).digests(economy);
        let after = canonical_sections(&changed).digests(economy);
        for section in [Section::Surface, Section::Behavior, Section::Permissions] {
            if section == owner {
                prop_assert_ne!(before.section(section), after.section(section), "{:?}/{:?} must change {:?}", key, sub, section);
            } else {
                prop_assert_eq!(before.section(section), after.section(section), "{:?}/{:?} must not change {:?}", key, sub, section);
            }
        }
        prop_assert_ne!(before.tool, after.tool);
    }

    #[test]
    fn json_round_trips_through_the_lockfile(tools in catalog()) {
        // Whatever a server sends, the lockfile stores it exactly and verifies.
        let text = format!("{{\"tools\":{}}}", Value::Array(tools.into_iter().map(Value::Object).collect()));
        let mut capture = Capture::default();
        capture.add_source("t.json".to_string(), text).unwrap();
        let options = BuildOptions { name: "s".to_string(), source: "capture: t.json".to_string(), previous: None, detail: Detail::Full };
        let mut lockfile = catalock::lockfile::LockFile::default();
        lockfile.upsert(build_server(&capture, &options).unwrap());
        let written = lockfile.to_toml();
        let read = catalock::lockfile::parse_lockfile(&written, "mcp.lock").unwrap();
        prop_assert!(read.canonical, "the writer's own output must read back as canonical");
        let findings = catalock::verify::verify_lockfile(&read, catalock::verify::Depth::Digests);
        prop_assert!(findings.is_empty(), "{:?}", findings);
        // The general TOML parser reads the same file to the same value.
        let slow: catalock::lockfile::LockFile = toml::from_str(&written).unwrap();
        prop_assert_eq!(slow.servers[0].tools.len(), read.lockfile.servers[0].tools.len());
        for (a, b) in slow.servers[0].tools.iter().zip(&read.lockfile.servers[0].tools) {
            prop_assert_eq!(&a.description, &b.description);
            prop_assert_eq!(&a.title, &b.title);
            prop_assert_eq!(a.input_schema.as_deref().map(str::trim_end), b.input_schema.as_deref());
        }
    }
}

/// The text of a real lockfile, for mutation.
fn real_lockfile() -> String {
    let mut capture = Capture::default();
    let text = std::fs::read_to_string(crate::support::example("session.jsonl")).unwrap();
    capture
        .add_source("session.jsonl".to_string(), text)
        .unwrap();
    let options = BuildOptions {
        name: "everything".to_string(),
        source: "capture: session.jsonl".to_string(),
        previous: None,
        detail: Detail::Full,
    };
    let mut lockfile = catalock::lockfile::LockFile::default();
    lockfile.upsert(build_server(&capture, &options).unwrap());
    lockfile.to_toml()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever bytes a capture holds, reading it gives a capture or an error, never a panic.
    #[test]
    fn arbitrary_captures_never_panic(text in "[\\[\\]{}\":,0-9a-z \\n\\\\]{0,64}|\\PC{0,64}") {
        let mut capture = Capture::default();
        if capture.add_source("t.json".to_string(), text).is_ok() && capture.tools.is_some() {
            let options = BuildOptions { name: "s".to_string(), source: String::new(), previous: None, detail: Detail::Skeleton };
            let _ = build_server(&capture, &options);
            let options = BuildOptions { detail: Detail::Full, ..options };
            let _ = build_server(&capture, &options);
        }
    }

    /// A lockfile damaged anywhere (a byte replaced, a range deleted) is read, refused with an
    /// error, or verified with findings; never a panic, and never verified clean if the damage
    /// touched anything that is not layout.
    #[test]
    fn damaged_lockfiles_never_panic(at in any::<prop::sample::Index>(), len in 0usize..40, byte in prop::sample::select(vec![b'x', b'"', b'\'', b'\n', b'=', b'[', b'0', b' ', b'{', b'}'])) {
        let original = real_lockfile();
        let start = at.index(original.len());
        let end = (start + len).min(original.len());
        let mut damaged = original.as_bytes()[..start].to_vec();
        damaged.push(byte);
        damaged.extend_from_slice(&original.as_bytes()[end..]);
        let Ok(text) = String::from_utf8(damaged) else { return Ok(()) };
        if let Ok(read) = catalock::lockfile::parse_lockfile(&text, "mcp.lock") {
            let findings = catalock::verify::verify_lockfile(&read, catalock::verify::Depth::Full);
            if findings.is_empty() {
                // Clean verification is only possible if no digested content changed: only
                // comments, layout, the entry's label (`name` of a server: the same contract
                // may be locked under several names) or the descriptive `source`,
                // `protocol-version` and `server-info` (recorded, deliberately not digested).
                let server_name = format!("name = {:?}", read.lockfile.servers.first().map(|s| s.name.as_str()).unwrap_or(""));
                let descriptive = |text: &str| -> String {
                    text.lines()
                        .filter(|l| !["source = ", "protocol-version = ", "server-info = ", "name = \"everything\""].iter().any(|p| l.starts_with(p)) && *l != server_name)
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                prop_assert_eq!(descriptive(&read.lockfile.to_toml()), descriptive(&original));
            }
        }
    }
}
