//! Benchmarks for the performance goal: `check --from` of an unchanged 5,000-tool catalog
//! against its lockfile, within 3x the time of `sha256sum` of the same file.
//!
//! `cargo bench --bench check` runs, through [`catalock::app::run`] as the binary does:
//! - `check/unchanged-5000`: the synthetic catalog (`benches/support/catalog.rs`, the same
//!   bytes as `examples/gen_catalog.rs`) against the lockfile it was locked into;
//! - `check/notion`: the real 24-tool capture in `tests/fixtures/captures/notion/`;
//! - `lock/5000-relock`: relocking the unchanged catalog (token counts are reused, nothing is
//!   written);
//! - `baseline/sha256-5000`: SHA-256 of the catalog file in this process, read in 64 KiB
//!   blocks like `sha256sum`, for a ratio measured in the same run.
//!
//! Each setup asserts exit code 0, so the timed path is the real "no changes" path.
//! `scripts/bench-check.sh` measures the same goal end to end (process start, the real
//! `sha256sum`, peak memory).

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::Path;
use std::time::Duration;

use catalock::app::run;
use catalock::cli::Cli;
use clap::Parser;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

// The binary uses the system allocator, and so does this bench (no `#[global_allocator]`):
// if src/main.rs ever sets one, set the same one here so the numbers stay the binary's.
#[path = "support/catalog.rs"]
mod catalog;

/// The real capture, relative to the package root (where `cargo bench` runs benches).
const NOTION: &str = "tests/fixtures/captures/notion/tools-list.json";

fn cli(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("catalock").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("cannot parse `catalock {}`: {e}", args.join(" ")))
}

/// Runs a command once, panicking with its output unless it exits 0; returns its stdout.
fn run_ok(cli: &Cli, what: &str) -> String {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(cli, &mut out, &mut err);
    let out = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(
        code,
        catalock::EXIT_SAME,
        "{what} exited {code}, so the benchmark would not measure the unchanged path\nstdout:\n{out}\nstderr:\n{}",
        String::from_utf8_lossy(&err)
    );
    out
}

/// A capture and the lockfile it was locked into, in a temporary directory.
struct Locked {
    _dir: TempDir,
    capture: String,
    lockfile: String,
    capture_bytes: u64,
}

impl Locked {
    /// Copies or writes the capture with `make`, locks it, and checks it once.
    fn new(file_name: &str, make: impl FnOnce(&Path)) -> Locked {
        let dir = tempfile::tempdir().expect("cannot create a temporary directory");
        let capture_path = dir.path().join(file_name);
        make(&capture_path);
        let capture = capture_path.to_str().expect("UTF-8 temp path").to_string();
        let lockfile = dir
            .path()
            .join("mcp.lock")
            .to_str()
            .expect("UTF-8 temp path")
            .to_string();
        let capture_bytes = std::fs::metadata(&capture_path)
            .expect("capture was written")
            .len();
        let locked = Locked {
            _dir: dir,
            capture,
            lockfile,
            capture_bytes,
        };
        let first = run_ok(&locked.lock_cli(), "first lock");
        assert!(first.contains("added server"), "first lock: {first}");
        run_ok(&locked.check_cli(), "check of the unchanged capture");
        locked
    }

    fn lock_cli(&self) -> Cli {
        cli(&[
            "lock",
            "--from",
            &self.capture,
            "--lockfile",
            &self.lockfile,
        ])
    }

    fn check_cli(&self) -> Cli {
        cli(&[
            "check",
            "--from",
            &self.capture,
            "--lockfile",
            &self.lockfile,
        ])
    }
}

fn synthetic() -> Locked {
    Locked::new("catalog.json", |path| {
        let file = File::create(path).expect("cannot create catalog.json");
        catalog::write_catalog(catalog::DEFAULT_TOOLS, &mut BufWriter::new(file))
            .expect("cannot write catalog.json");
    })
}

fn notion() -> Locked {
    Locked::new("tools-list.json", |path| {
        std::fs::copy(NOTION, path).unwrap_or_else(|e| {
            panic!("cannot copy {NOTION} (run benches from the package root): {e}")
        });
    })
}

/// SHA-256 of a file read in 64 KiB blocks, the work `sha256sum` does.
fn sha256_file(path: &str) -> [u8; 32] {
    let mut file = File::open(path).expect("catalog exists");
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf).expect("catalog is readable") {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    hasher.finalize().into()
}

fn benches(c: &mut Criterion) {
    let big = synthetic();
    let small = notion();

    // Runs of a second or more: a few flat samples keep the whole bench well under
    // three minutes on two cores.
    let mut group = c.benchmark_group("check");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(12))
        .throughput(Throughput::Bytes(big.capture_bytes));
    let check = big.check_cli();
    group.bench_function("unchanged-5000", |b| {
        b.iter(|| {
            let code = run(&check, &mut io::sink(), &mut io::sink());
            assert_eq!(code, catalock::EXIT_SAME);
        })
    });
    group
        .sampling_mode(SamplingMode::Auto)
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(small.capture_bytes));
    let check = small.check_cli();
    group.bench_function("notion", |b| {
        b.iter(|| {
            let code = run(&check, &mut io::sink(), &mut io::sink());
            assert_eq!(code, catalock::EXIT_SAME);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("lock");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(25))
        .throughput(Throughput::Bytes(big.capture_bytes));
    let relock = big.lock_cli();
    let summary = run_ok(&relock, "relock");
    assert!(
        summary.starts_with("unchanged server"),
        "relock of the unchanged catalog: {summary}"
    );
    group.bench_function("5000-relock", |b| {
        b.iter(|| {
            let code = run(&relock, &mut io::sink(), &mut io::sink());
            assert_eq!(code, catalock::EXIT_SAME);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("baseline");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(big.capture_bytes));
    group.bench_function("sha256-5000", |b| {
        b.iter(|| std::hint::black_box(sha256_file(&big.capture)))
    });
    group.finish();
}

criterion_group!(check_benches, benches);
criterion_main!(check_benches);
