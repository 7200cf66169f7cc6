//! Benchmark for the gate's judgement: classifying the difference between two 5,000-tool
//! catalogs (the synthetic catalog of `benches/support/catalog.rs`) with 500 changed tools,
//! the way `check`, `diff` and review mode do once both entries are built.
//!
//! `cargo bench --bench classify` times `classify/5000-with-500-changes` only: building the
//! two entries (parsing, digesting, counting tokens) is setup, measured by `benches/check.rs`.
//! The changes cycle through ten kinds so every rule family runs: descriptions, input
//! narrowing, widening and new properties, enum and constraint edits, hint flips, `_meta`,
//! removals and additions.

use std::hint::black_box;
use std::time::Duration;

use catalock::build::{BuildOptions, Detail, build_server};
use catalock::capture::Capture;
use catalock::classify::{Context, classify_server};
use catalock::lockfile::LockedServer;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

#[path = "support/catalog.rs"]
mod catalog;

const CHANGED: usize = 500;

fn build(text: String) -> LockedServer {
    let mut capture = Capture::default();
    capture
        .add_source("catalog.json".to_string(), text)
        .expect("the synthetic catalog reads");
    build_server(
        &capture,
        &BuildOptions {
            name: "bench".to_string(),
            source: capture.describe(),
            previous: None,
            detail: Detail::Full,
        },
    )
    .expect("the synthetic catalog builds")
}

/// The catalog with `CHANGED` tools changed, one kind of change after another.
fn changed(text: &str) -> String {
    let mut catalog: Value = serde_json::from_str(text).expect("catalog is JSON");
    let tools = catalog["tools"].as_array_mut().expect("tools array");
    let step = tools.len() / CHANGED;
    let mut removed = Vec::new();
    for (n, index) in (0..tools.len()).step_by(step).take(CHANGED).enumerate() {
        let tool = &mut tools[index];
        let schema = &mut tool["inputSchema"];
        let first = schema["properties"]
            .as_object()
            .and_then(|p| p.keys().next().cloned());
        match n % 10 {
            0 => {
                let d = tool["description"].as_str().unwrap_or("").to_string();
                tool["description"] = json!(format!("{d} Also reports progress."));
            }
            1 => {
                if let Some(first) = first {
                    schema["properties"][&first]["type"] = json!("integer");
                }
            }
            2 => {
                schema["properties"]["added_option"] = json!({"type": "boolean"});
            }
            3 => {
                schema["required"] = json!(["added_required"]);
                schema["properties"]["added_required"] = json!({"type": "string", "maxLength": 64});
            }
            4 => {
                tool["annotations"]["readOnlyHint"] = json!(false);
                tool["annotations"]["destructiveHint"] = json!(true);
            }
            5 => tool["_meta"] = json!({"vendor/id": index, "vendor/rev": 2}),
            6 => {
                if let Some(first) = first {
                    schema["properties"][&first]["description"] = json!("Reworded.");
                }
            }
            7 => schema["additionalProperties"] = json!(false),
            8 => removed.push(index),
            _ => tool["name"] = json!(format!("renamed-{index}")),
        }
    }
    for index in removed.into_iter().rev() {
        tools.remove(index);
    }
    tools.push(
        json!({"name": "brand-new", "description": "Added.", "inputSchema": {"type": "object"}}),
    );
    catalog.to_string()
}

fn bench(c: &mut Criterion) {
    let mut text = Vec::new();
    catalog::write_catalog(catalog::DEFAULT_TOOLS, &mut text).expect("catalog writes");
    let text = String::from_utf8(text).expect("catalog is UTF-8");
    let old = build(text.clone());
    let new = build(changed(&text));
    let context = Context {
        today: "2026-11-29".to_string(),
        ..Context::default()
    };
    let changes = classify_server(Some(&old), Some(&new), &context);
    assert!(
        changes.len() >= CHANGED,
        "expected at least {CHANGED} classified changes, got {}",
        changes.len()
    );
    eprintln!(
        "classify: {} changes from {} changed tools",
        changes.len(),
        CHANGED
    );
    let mut group = c.benchmark_group("classify");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("5000-with-500-changes", |b| {
        b.iter(|| classify_server(Some(black_box(&old)), Some(black_box(&new)), &context))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
