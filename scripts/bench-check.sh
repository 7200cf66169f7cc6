#!/usr/bin/env bash
# Measures the performance goal end to end, with the release binary:
#   `catalock check --from catalog.json` of an unchanged 5,000-tool catalog against its lockfile
#   within 3x the wall time of `sha256sum catalog.json` (both measured in this run, reported as
#   the ratio of medians), with peak RSS under 100 MB.
# Also reports the first `lock` (counting tokens) and an unchanged relock (reusing them).
#
# It is a report, not a test: it exits 0 whether the targets pass or fail, and non-zero only
# when a command fails. The summary is printed and written as JSON to target/bench-check.json.
#
# Environment: BENCH_RUNS (timed runs of each of check and sha256sum, default 11),
# BENCH_LOCK_RUNS (first locks and relocks, default 3), BENCH_RSS_RUNS (runs under
# /usr/bin/time for peak RSS, default 5), BENCH_TOOLS (catalog size, default 5000).
# Needs cargo, python3 (timing and statistics), sha256sum and GNU time at /usr/bin/time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "bench-check: $*" >&2
    exit 2
}

[[ -x /usr/bin/time ]] || die "GNU time is needed at /usr/bin/time (apt-get install time)"
command -v python3 >/dev/null || die "python3 is needed for timing"
command -v sha256sum >/dev/null || die "sha256sum is needed (coreutils)"

target_dir=${CARGO_TARGET_DIR:-target}

echo "building release binary and examples..." >&2
cargo build --release --quiet --bins --examples

export BENCH_CATALOCK="$target_dir/release/catalock"
export BENCH_GEN="$target_dir/release/examples/gen_catalog"
export BENCH_JSON="$target_dir/bench-check.json"
[[ -x $BENCH_CATALOCK ]] || die "$BENCH_CATALOCK was not built"
[[ -x $BENCH_GEN ]] || die "$BENCH_GEN was not built"

exec python3 - <<'PY'
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CATALOCK = os.path.abspath(os.environ["BENCH_CATALOCK"])
GEN = os.path.abspath(os.environ["BENCH_GEN"])
JSON_OUT = os.environ["BENCH_JSON"]
RUNS = int(os.environ.get("BENCH_RUNS", "11"))
LOCK_RUNS = int(os.environ.get("BENCH_LOCK_RUNS", "3"))
RSS_RUNS = int(os.environ.get("BENCH_RSS_RUNS", "5"))
TOOLS = int(os.environ.get("BENCH_TOOLS", "5000"))
MAX_RATIO = 3.0
MAX_RSS_BYTES = 100 * 1000 * 1000  # 100 MB (decimal, the stricter reading)

if min(RUNS, LOCK_RUNS, RSS_RUNS) < 1 or TOOLS < 1:
    sys.exit("bench-check: BENCH_RUNS, BENCH_LOCK_RUNS, BENCH_RSS_RUNS and BENCH_TOOLS must be >= 1")


def fail(what, proc):
    sys.stderr.write(f"bench-check: {what} exited {proc.returncode}\n")
    for name, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        if data:
            sys.stderr.write(f"--- {name}\n{data.decode(errors='replace')}\n")
    sys.exit(1)


def timed(argv, what, expect_rc=0):
    """Runs argv once; returns (wall seconds, stdout). Output goes to pipes, stdin is empty."""
    start = time.perf_counter()
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != expect_rc:
        fail(what, proc)
    return wall, proc.stdout.decode(errors="replace")


def gnu_time(argv, what, workdir):
    """Runs argv under GNU time; returns (peak RSS bytes, user+sys CPU seconds, wall, stdout)."""
    report = os.path.join(workdir, "time.txt")
    wall, out = timed(["/usr/bin/time", "-o", report, "-f", "%M %U %S", *argv], what)
    with open(report) as f:
        maxrss_kib, user, sys_ = f.read().split()[-3:]
    return int(maxrss_kib) * 1024, float(user) + float(sys_), wall, out


def cpu_busy_seconds():
    """CPU seconds the machine spent busy (all processes: user, nice, system, irq, softirq),
    from /proc/stat; steal time (a hypervisor's other guests) is not counted."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def summary(values):
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": [round(v, 6) for v in values],
    }


work = tempfile.mkdtemp(prefix="catalock-bench-")
try:
    catalog = os.path.join(work, "catalog.json")
    lockfile = os.path.join(work, "mcp.lock")
    with open(catalog, "wb") as f:
        proc = subprocess.run([GEN, str(TOOLS)], stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        fail("gen_catalog", proc)
    size = os.path.getsize(catalog)
    lock_argv = [CATALOCK, "lock", "--from", catalog, "--lockfile", lockfile]
    check_argv = [CATALOCK, "check", "--from", catalog, "--lockfile", lockfile]
    sha_argv = ["sha256sum", catalog]
    print(f"catalog: {TOOLS} tools, {size} bytes ({size / 1e6:.1f} MB) in {work}", file=sys.stderr)

    # First lock (counts every token); the lockfile is removed before each run.
    first_lock, first_lock_rss = [], []
    for i in range(LOCK_RUNS):
        if os.path.exists(lockfile):
            os.remove(lockfile)
        rss, _, wall, out = gnu_time(lock_argv, "lock", work)
        first_lock.append(wall)
        first_lock_rss.append(rss)
    lock_line = out.strip()
    lock_size = os.path.getsize(lockfile)

    # Relock of the unchanged catalog (reuses the token counts, writes nothing).
    relock, relock_rss = [], []
    for i in range(LOCK_RUNS):
        rss, _, wall, out = gnu_time(lock_argv, "relock", work)
        relock.append(wall)
        relock_rss.append(rss)
    relock_line = out.strip()
    if not relock_line.startswith("unchanged server"):
        sys.exit(f"bench-check: the relock did not take the unchanged path: {relock_line}")

    # Warm the page cache and both programs, then interleave the timed runs so drift in the
    # machine's load affects both sides alike.
    timed(sha_argv, "sha256sum")
    timed(check_argv, "catalock check")
    sha, check = [], []
    busy_before, own_before, wall_before = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
    for i in range(RUNS):
        sha.append(timed(sha_argv, "sha256sum")[0])
        check.append(timed(check_argv, "catalock check")[0])
    busy_after, own_after, wall_after = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
    # CPU used by other processes while the timed runs ran, in average cores: anything well
    # above zero means the machine was shared and the times are inflated.
    if busy_before is None or busy_after is None:
        other_load = None
    else:
        other = (busy_after - busy_before) - (own_after - own_before)
        other_load = max(0.0, other) / (wall_after - wall_before)

    # Peak memory of check, in separate runs under GNU time.
    check_rss, check_cpu = [], []
    for i in range(RSS_RUNS):
        rss, cpu, _, _ = gnu_time(check_argv, "catalock check", work)
        check_rss.append(rss)
        check_cpu.append(cpu)
finally:
    shutil.rmtree(work, ignore_errors=True)

check_s, sha_s = summary(check), summary(sha)
ratio = check_s["median"] / sha_s["median"]
peak = max(check_rss)
ratio_pass = ratio <= MAX_RATIO
rss_pass = peak < MAX_RSS_BYTES


def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


result = {
    "tools": TOOLS,
    "catalog_bytes": size,
    "lockfile_bytes": lock_size,
    "runs": RUNS,
    "check_seconds": check_s,
    "sha256sum_seconds": sha_s,
    "ratio_median_check_over_sha256sum": ratio,
    "check_peak_rss_bytes": peak,
    "check_rss_bytes_runs": check_rss,
    "check_cpu_seconds_median": statistics.median(check_cpu),
    "other_load_cores_during_timed_runs": other_load,
    "first_lock_seconds": summary(first_lock),
    "first_lock_peak_rss_bytes": max(first_lock_rss),
    "relock_seconds": summary(relock),
    "relock_peak_rss_bytes": max(relock_rss),
    "lock_output": lock_line,
    "relock_output": relock_line,
    "targets": {
        "ratio_max": MAX_RATIO,
        "ratio_pass": ratio_pass,
        "peak_rss_max_bytes": MAX_RSS_BYTES,
        "peak_rss_pass": rss_pass,
    },
    "machine": {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
    },
    "git": {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))},
    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
}

ms = lambda s: f"{s * 1000:8.1f} ms"
mb = lambda b: f"{b / 1e6:.1f} MB ({b / 2**20:.1f} MiB)"
lines = [
    f"catalog:    {TOOLS} tools, {size / 1e6:.1f} MB; lockfile {lock_size / 1e6:.1f} MB; "
    f"{os.cpu_count()} CPUs ({result['machine']['cpu_model']})",
    f"first lock: median {ms(summary(first_lock)['median'])}  min {ms(min(first_lock))}  "
    f"peak RSS {mb(max(first_lock_rss))}  ({LOCK_RUNS} runs)",
    f"relock:     median {ms(summary(relock)['median'])}  min {ms(min(relock))}  "
    f"peak RSS {mb(max(relock_rss))}  ({LOCK_RUNS} runs)",
    f"sha256sum:  median {ms(sha_s['median'])}  min {ms(sha_s['min'])}  ({RUNS} runs)",
    f"check:      median {ms(check_s['median'])}  min {ms(check_s['min'])}  ({RUNS} runs; "
    f"CPU user+sys median {statistics.median(check_cpu) * 1000:.1f} ms)",
    f"ratio:      median(check) / median(sha256sum) = {ratio:.2f}",
    f"peak RSS:   check {mb(peak)}  (max of {RSS_RUNS} runs under /usr/bin/time)",
    f"load:       other processes used {other_load:.2f} of {os.cpu_count()} cores during the timed runs"
    + ("" if other_load < 0.1 else " (the machine was shared: times are inflated)")
    if other_load is not None
    else "load:       unknown (no /proc/stat)",
    f"{'PASS' if ratio_pass else 'FAIL'}: ratio {ratio:.2f} <= {MAX_RATIO:g}",
    f"{'PASS' if rss_pass else 'FAIL'}: peak RSS {peak / 1e6:.1f} MB < {MAX_RSS_BYTES / 1e6:g} MB",
]
print("\n".join(lines))

os.makedirs(os.path.dirname(JSON_OUT) or ".", exist_ok=True)
with open(JSON_OUT, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print(f"wrote {JSON_OUT}")
PY
