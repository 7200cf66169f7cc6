//! Writes a synthetic `tools/list` result for benchmarks: `cargo run --release --example
//! gen_catalog -- [TOOLS] > catalog.json` (default 5,000 tools, about 34 MB).
//!
//! The generator lives in `benches/support/catalog.rs`, shared with `benches/check.rs`, so the
//! benchmark and `scripts/bench-check.sh` measure the same bytes. It is deterministic: every
//! run and every machine gets the same file.

#[path = "../benches/support/catalog.rs"]
mod catalog;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("TOOLS is a number"))
        .unwrap_or(catalog::DEFAULT_TOOLS);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    catalog::write_catalog(count, &mut out).expect("cannot write the catalog to stdout");
}
