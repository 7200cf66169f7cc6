#!/usr/bin/env bash
# Measures the performance goals of live discovery, with the release binaries, in one run:
#
#   1. Overhead: wall time of `catalock lock -- node <server-everything> stdio` against a
#      minimal in-process Python client that does the same session with the same server
#      (spawn; initialize; notifications/initialized; tools/list, prompts/list,
#      resources/templates/list, each awaited; close stdin; wait for exit). Runs are
#      interleaved (baseline, catalock variants, baseline, ...). Catalock variants:
#      `--protocol legacy` with a new lockfile (the full lock: counts tokens, writes),
#      `--protocol legacy` with a current lockfile (relock: reuses counts, writes nothing),
#      and `--protocol auto` with a new lockfile (probes `server/discover` first).
#      Target: median(catalock) - median(baseline) under 5% of median(baseline). Also shown:
#      the paired overhead, the median of (each catalock run - the baseline run before it).
#   2. catalock's own CPU time, without the server's: every timed catalock run is left a
#      zombie for a moment (waitid WNOWAIT) and its process CPU clock is read then: user+sys
#      of all of catalock's threads, in ns, excluding the children it reaped. Also, in
#      separate runs, `perf stat --no-inherit -e task-clock`, which counts only catalock's
#      main thread (--no-inherit excludes new threads as well as child processes).
#      Target: under 10 ms (judged on the all-threads figure).
#   3. Parallelism: a catalock.toml with 10 fixture servers (`mcp-fixture-server --slow-ms`
#      50, 100, ..., 500) locked with `--jobs 10`, `--jobs 1`, and the slowest one alone
#      (`--name s9`), interleaved. Target: jobs 10 within 20% of the slowest one alone.
#
# It is a report, not a test: it exits 0 whether the targets pass or fail, and non-zero only
# when a command fails. The summary is printed and written as JSON to target/bench-live.json.
# Every process runs on stdio, is bounded by a timeout (its whole tree is killed past it), and
# the temporary directory is removed at the end.
#
# Environment: BENCH_RUNS (interleaved runs of the baseline and of each catalock variant,
# default 15), BENCH_PERF_RUNS (runs under perf stat of each legacy variant, default 5; 0 to
# skip), BENCH_PAR_RUNS (runs of each parallelism case, default 3), BENCH_TIMEOUT (seconds
# any one command may take, default 120).
# Needs cargo, node >= 20 and npm (scripts/install-test-servers), python3 >= 3.8 (stdlib
# only), and optionally perf (/usr/bin/perf or on PATH).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "bench-live: $*" >&2
    exit 2
}

command -v python3 >/dev/null || die "python3 is needed for timing"
command -v node >/dev/null || die "node is needed to run @modelcontextprotocol/server-everything"

target_dir=${CARGO_TARGET_DIR:-target}

echo "installing test servers..." >&2
scripts/install-test-servers >&2

echo "building release binaries (catalock, mcp-fixture-server)..." >&2
cargo build --release --quiet --features fixture-server --bins

export BENCH_CATALOCK="$target_dir/release/catalock"
export BENCH_FIXTURE="$target_dir/release/mcp-fixture-server"
export BENCH_JSON="$target_dir/bench-live.json"
export BENCH_SERVER_JS="tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
export BENCH_CATALOG="tests/fixtures/captures/memory/tools-list.json"
[[ -x $BENCH_CATALOCK ]] || die "$BENCH_CATALOCK was not built"
[[ -x $BENCH_FIXTURE ]] || die "$BENCH_FIXTURE was not built"
[[ -f $BENCH_SERVER_JS ]] || die "$BENCH_SERVER_JS is missing (scripts/install-test-servers)"
[[ -f $BENCH_CATALOG ]] || die "$BENCH_CATALOG is missing"

exec python3 - <<'PY'
import json
import os
import platform
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CATALOCK = os.path.abspath(os.environ["BENCH_CATALOCK"])
FIXTURE = os.path.abspath(os.environ["BENCH_FIXTURE"])
SERVER_JS = os.path.abspath(os.environ["BENCH_SERVER_JS"])
CATALOG = os.path.abspath(os.environ["BENCH_CATALOG"])
JSON_OUT = os.environ["BENCH_JSON"]
RUNS = int(os.environ.get("BENCH_RUNS", "15"))
PERF_RUNS = int(os.environ.get("BENCH_PERF_RUNS", "5"))
PAR_RUNS = int(os.environ.get("BENCH_PAR_RUNS", "3"))
TIMEOUT = float(os.environ.get("BENCH_TIMEOUT", "120"))
NODE = shutil.which("node")
SERVER_ARGV = [NODE, SERVER_JS, "stdio"]
PROTOCOL_VERSION = "2025-11-25"

MAX_OVERHEAD = 0.05  # fraction of the baseline's median wall time
MAX_CPU_S = 0.010  # catalock's own CPU time
MAX_PAR_RATIO = 1.20  # jobs 10 / the slowest server alone
SERVER_DELAYS_MS = [50 * (i + 1) for i in range(10)]  # s0 .. s9

if min(RUNS, PAR_RUNS) < 1 or PERF_RUNS < 0 or TIMEOUT <= 0:
    sys.exit("bench-live: BENCH_RUNS and BENCH_PAR_RUNS must be >= 1, BENCH_PERF_RUNS >= 0, BENCH_TIMEOUT > 0")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- Processes ----------------------------------------------------------------------------

def descendants(root):
    """Pids of every live descendant of root, from /proc (ppid links)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(pid):
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


class Watchdog:
    """Kills pid and its descendants if still running after TIMEOUT seconds."""

    def __init__(self, pid, what):
        self.fired = False
        self.what = what
        self.timer = threading.Timer(TIMEOUT, self._fire, args=(pid,))
        self.timer.daemon = True
        self.timer.start()

    def _fire(self, pid):
        self.fired = True
        kill_tree(pid)

    def done(self):
        self.timer.cancel()
        if self.fired:
            sys.exit(f"bench-live: {self.what} took longer than {TIMEOUT:g} s; killed")


def fail(what, rc, out, err):
    sys.stderr.write(f"bench-live: {what} exited {rc}\n")
    for name, data in (("stdout", out), ("stderr", err)):
        if data:
            sys.stderr.write(f"--- {name}\n{data}\n")
    sys.exit(1)


def process_cpu_ns(pid):
    """CPU time (user+sys, all threads, not reaped children) of process pid, in ns, from its
    process CPU clock (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)); pid may be a zombie."""
    try:
        return time.clock_gettime_ns((~pid << 3) | 2)
    except (OSError, OverflowError):
        return None


def run(argv, what, cwd, expect_prefix=None):
    """Runs argv (stdin empty, output to files) and returns a dict: wall seconds from spawn
    to exit, catalock's own CPU seconds (all threads) read at exit, its reaped children's CPU
    seconds (from /proc, clock ticks), and stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        dog = Watchdog(proc.pid, what)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
        wall = time.perf_counter() - start
        cpu_ns = process_cpu_ns(proc.pid)
        children_cpu = None
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children_cpu = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
        rc = proc.wait()
        dog.done()
        kill_tree(proc.pid)  # nothing should be left; make sure
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if rc != 0:
        fail(what, rc, stdout, stderr)
    if expect_prefix and not stdout.startswith(expect_prefix):
        sys.exit(f"bench-live: {what}: expected output starting {expect_prefix!r}, got {stdout.strip()!r}")
    return {"wall": wall, "cpu": None if cpu_ns is None else cpu_ns / 1e9,
            "children_cpu": children_cpu, "stdout": stdout.strip()}


def baseline_once(cwd):
    """The minimal client: returns the wall seconds from spawn to the server's exit."""
    start = time.perf_counter()
    deadline = start + TIMEOUT
    proc = subprocess.Popen(SERVER_ARGV, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    sel = selectors.DefaultSelector()
    fd = proc.stdout.fileno()
    sel.register(fd, selectors.EVENT_READ)
    buf = bytearray()

    def send(message):
        proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        proc.stdin.flush()

    def response(rid, method):
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # not JSON-RPC: skip, as catalock does
                if isinstance(msg, dict) and msg.get("id") == rid and "method" not in msg:
                    if "result" not in msg:
                        raise RuntimeError(f"{method} failed: {line[:300]!r}")
                    return msg["result"]
                continue  # a notification or a request to the client: ignore
            left = deadline - time.perf_counter()
            if left <= 0:
                raise RuntimeError(f"no answer to {method} within {TIMEOUT:g} s")
            if sel.select(left):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"the server closed stdout before answering {method}")
                buf.extend(chunk)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                         "clientInfo": {"name": "bench-live-baseline", "version": "1.0.0"}}})
        response(1, "initialize")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for rid, method in ((2, "tools/list"), (3, "prompts/list"), (4, "resources/templates/list")):
            send({"jsonrpc": "2.0", "id": rid, "method": method})
            response(rid, method)
        proc.stdin.close()
        rc = proc.wait(timeout=max(0.001, deadline - time.perf_counter()))
        wall = time.perf_counter() - start
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        kill_tree(proc.pid)
        proc.wait()
        sys.exit(f"bench-live: baseline client: {e}")
    finally:
        sel.close()
        proc.stdout.close()
    kill_tree(proc.pid)  # the server's own leftovers, if any
    if rc != 0:
        sys.exit(f"bench-live: the server exited {rc} after the baseline session")
    return wall


def perf_available():
    perf = shutil.which("perf") or ("/usr/bin/perf" if os.access("/usr/bin/perf", os.X_OK) else None)
    if not perf:
        return None, "perf not found"
    with tempfile.NamedTemporaryFile() as out:
        try:
            proc = subprocess.run([perf, "stat", "--no-inherit", "-e", "task-clock", "-x,", "-o", out.name, "true"],
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"perf stat does not run: {e}"
        value = parse_perf(out.name)
        if proc.returncode != 0 or value is None:
            why = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no task-clock count"])[-1]
            return None, f"perf stat -e task-clock fails here: {why}"
    return perf, None


def parse_perf(path):
    """task-clock seconds from a `perf stat -x,` output file, or None."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) >= 3 and parts[2].startswith("task-clock"):
                    return float(parts[0]) / 1000 if parts[1] == "msec" else None
    except (OSError, ValueError):
        pass
    return None


def perf_cpu(perf, argv, what, cwd, work):
    report = os.path.join(work, "perf.txt")
    run([perf, "stat", "--no-inherit", "-e", "task-clock", "-x,", "-o", report, "--", *argv], what, cwd)
    value = parse_perf(report)
    if value is None:
        sys.exit(f"bench-live: no task-clock count from perf for {what}")
    return value


# --- Machine load ---------------------------------------------------------------------------

def cpu_busy_seconds():
    """CPU seconds the machine spent busy (all processes), from /proc/stat; steal not counted."""
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


class LoadMeter:
    """CPU used by processes other than this script and what it started (reaped descendants
    are counted in its children times), in average cores over the measured interval."""

    def __enter__(self):
        self.busy, self.own, self.wall = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        busy, own, wall = cpu_busy_seconds(), own_cpu_seconds(), time.perf_counter()
        if busy is None or self.busy is None:
            self.cores = None
        else:
            self.cores = max(0.0, (busy - self.busy) - (own - self.own)) / (wall - self.wall)
        return False


def proc_cpu_table():
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
            comm = text[text.index("(") + 1: text.rindex(")")]
            fields = text.rsplit(")", 1)[1].split()
            table[int(name)] = (comm, int(fields[11]) + int(fields[12]))
        except (OSError, ValueError, IndexError):
            continue
    return table


def busy_processes(seconds=1.0):
    """Processes that used over 5% of a core during a short sample: [(comm, pid, %)]."""
    before = proc_cpu_table()
    time.sleep(seconds)
    after = proc_cpu_table()
    hz = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid, (comm, ticks) in after.items():
        if pid == os.getpid() or pid not in before or before[pid][0] != comm:
            continue
        pct = 100.0 * (ticks - before[pid][1]) / hz / seconds
        if pct >= 5:
            busy.append({"comm": comm, "pid": pid, "cpu_percent": round(pct)})
    return sorted(busy, key=lambda p: -p["cpu_percent"])


def machine_snapshot():
    snap = {"busy_processes": busy_processes()}
    try:
        with open("/proc/loadavg") as f:
            snap["loadavg"] = f.read().split()[:3]
    except OSError:
        snap["loadavg"] = None
    try:
        with open("/proc/pressure/cpu") as f:
            first = f.readline().split()
            snap["cpu_pressure_some"] = {k: float(v) for k, v in (x.split("=") for x in first[1:4])}
    except (OSError, ValueError):
        snap["cpu_pressure_some"] = None
    return snap


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": [round(v, 6) for v in values]}


# --- The runs -----------------------------------------------------------------------------

perf, perf_why = perf_available()
if perf is None:
    log(f"perf: unavailable ({perf_why})")
log("machine load before: sampling 1 s...")
before = machine_snapshot()

work = tempfile.mkdtemp(prefix="catalock-bench-live-")
try:
    # 1 and 2: server-everything.
    new_lock = os.path.join(work, "new.lock")
    relock_lock = os.path.join(work, "current.lock")
    auto_lock = os.path.join(work, "auto.lock")

    def lock_argv(lockfile, protocol):
        return [CATALOCK, "lock", "--lockfile", lockfile, "--protocol", protocol, "--", *SERVER_ARGV]

    def fresh(path):
        if os.path.exists(path):
            os.remove(path)
        return path

    variants = {
        "legacy_new_lockfile": (lambda: lock_argv(fresh(new_lock), "legacy"), "added server"),
        "legacy_relock": (lambda: lock_argv(relock_lock, "legacy"), "unchanged server"),
        "auto_new_lockfile": (lambda: lock_argv(fresh(auto_lock), "auto"), "added server"),
    }
    log("warming up (server-everything: one baseline session, one lock of each kind)...")
    baseline_once(work)
    run(lock_argv(relock_lock, "legacy"), "catalock lock (warm-up)", work, "added server")
    for name, (argv, expect) in variants.items():
        run(argv(), f"catalock lock {name} (warm-up)", work, expect)

    baseline = []
    results = {name: [] for name in variants}
    lines_out = {}
    log(f"timing: {RUNS} interleaved runs of the baseline and of {len(variants)} catalock variants...")
    with LoadMeter() as load1:
        for i in range(RUNS):
            baseline.append(baseline_once(work))
            for name, (argv, expect) in variants.items():
                r = run(argv(), f"catalock lock {name}", work, expect)
                results[name].append(r)
                lines_out[name] = r["stdout"]

    perf_runs = {"legacy_new_lockfile": [], "legacy_relock": []}
    load_perf = None
    if perf is not None and PERF_RUNS > 0:
        log(f"perf stat --no-inherit: {PERF_RUNS} runs of each legacy variant...")
        with LoadMeter() as load_perf:
            for i in range(PERF_RUNS):
                for name in perf_runs:
                    argv, _ = variants[name]
                    perf_runs[name].append(perf_cpu(perf, argv(), f"perf stat catalock lock {name}", work, work))

    # 3: parallelism, 10 fixture servers.
    par = os.path.join(work, "par")
    os.mkdir(par)
    with open(os.path.join(par, "catalock.toml"), "w") as f:
        for i, delay in enumerate(SERVER_DELAYS_MS):
            f.write(f'[[server]]\nname = "s{i}"\ncommand = {json.dumps(FIXTURE)}\n'
                    f'args = ["--catalog", {json.dumps(CATALOG)}, "--slow-ms", "{delay}"]\n\n')
    par_lock = os.path.join(par, "mcp.lock")
    cases = {
        "jobs_10": ([CATALOCK, "lock", "--jobs", "10"], "added server"),
        "jobs_1": ([CATALOCK, "lock", "--jobs", "1"], "added server"),
        "slowest_alone": ([CATALOCK, "lock", "--name", f"s{len(SERVER_DELAYS_MS) - 1}"], "added server"),
    }
    log("parallelism: warm-up...")
    fresh(par_lock)
    par_first = run(cases["jobs_10"][0], "catalock lock --jobs 10 (warm-up)", par, "added server")["stdout"]
    par_times = {name: [] for name in cases}
    log(f"parallelism: {PAR_RUNS} interleaved runs of jobs 10, jobs 1, slowest alone (new lockfile each)...")
    with LoadMeter() as load3:
        for i in range(PAR_RUNS):
            for name, (argv, expect) in cases.items():
                fresh(par_lock)
                par_times[name].append(run(argv, f"catalock lock ({name})", par, expect)["wall"])
finally:
    shutil.rmtree(work, ignore_errors=True)

log("machine load after: sampling 1 s...")
after = machine_snapshot()

# --- Report ---------------------------------------------------------------------------------

base_s = summary(baseline)
variant_s = {}
for name, rs in results.items():
    wall = summary([r["wall"] for r in rs])
    cpu = summary([r["cpu"] for r in rs])
    server_cpu = summary([r["children_cpu"] for r in rs])
    overhead = wall["median"] - base_s["median"]
    # Each catalock run minus the baseline run just before it: steadier than the difference
    # of medians when the machine's speed drifts during the run.
    paired = statistics.median(r["wall"] - b for r, b in zip(rs, baseline))
    variant_s[name] = {
        "wall_seconds": wall,
        "overhead_seconds": overhead,
        "overhead_paired_median_seconds": paired,
        "overhead_fraction_of_baseline": overhead / base_s["median"],
        "overhead_pass": overhead / base_s["median"] < MAX_OVERHEAD,
        "own_cpu_seconds_all_threads": cpu,
        "own_cpu_pass": None if cpu is None else cpu["median"] < MAX_CPU_S,
        "server_cpu_seconds_ticks": server_cpu,
        "output": lines_out[name],
    }
perf_s = {name: summary(v) for name, v in perf_runs.items()} if perf else None
par_s = {name: summary(v) for name, v in par_times.items()}
par_ratio = par_s["jobs_10"]["median"] / par_s["slowest_alone"]["median"]
par_pass = par_ratio <= MAX_PAR_RATIO


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


def node_version():
    try:
        return subprocess.run([NODE, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


result = {
    "runs": RUNS,
    "perf_runs": PERF_RUNS if perf else 0,
    "parallel_runs": PAR_RUNS,
    "server_command": SERVER_ARGV,
    "baseline_seconds": base_s,
    "catalock": variant_s,
    "perf_no_inherit_task_clock_seconds": perf_s,
    "perf_unavailable_reason": perf_why,
    "parallel": {
        "servers": len(SERVER_DELAYS_MS),
        "slow_ms": SERVER_DELAYS_MS,
        "seconds": par_s,
        "ratio_jobs10_over_slowest_alone": par_ratio,
        "ratio_jobs10_over_jobs1": par_s["jobs_10"]["median"] / par_s["jobs_1"]["median"],
        "output": par_first,
    },
    "targets": {
        "overhead_max_fraction": MAX_OVERHEAD,
        "own_cpu_max_seconds": MAX_CPU_S,
        "parallel_max_ratio_to_slowest": MAX_PAR_RATIO,
        "parallel_pass": par_pass,
    },
    "load": {
        "other_cores_during_overhead_runs": load1.cores,
        "other_cores_during_perf_runs": None if load_perf is None else load_perf.cores,
        "other_cores_during_parallel_runs": load3.cores,
        "before": before,
        "after": after,
    },
    "machine": {"cpus": os.cpu_count(), "cpu_model": cpu_model(), "kernel": platform.release(),
                "node": node_version()},
    "git": {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))},
    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
}

ms = lambda s: f"{s * 1000:7.1f} ms"
verdict = lambda ok: "PASS" if ok else "FAIL"
labels = {
    "legacy_new_lockfile": "legacy, new lockfile",
    "legacy_relock": "legacy, relock     ",
    "auto_new_lockfile": "auto, new lockfile ",
}


def load_text(cores):
    if cores is None:
        return "unknown"
    return f"{cores:.2f} of {os.cpu_count()} cores" + (" (shared machine: times inflated)" if cores >= 0.1 else "")


def busy_text(snap):
    procs = ", ".join(f"{p['comm']} {p['cpu_percent']}%" for p in snap["busy_processes"][:5]) or "none"
    return f"loadavg {' '.join(snap['loadavg'] or ['?'])}; busy: {procs}"


out = [
    f"machine:  {os.cpu_count()} CPUs ({result['machine']['cpu_model']}), node {result['machine']['node']}",
    f"baseline: median {ms(base_s['median'])}  min {ms(base_s['min'])}  (python client, {RUNS} runs)",
]
for name, v in variant_s.items():
    w, c = v["wall_seconds"], v["own_cpu_seconds_all_threads"]
    cpu = f"cpu {c['median'] * 1000:5.1f} ms" if c else "cpu n/a"
    out.append(f"catalock {labels[name]}: median {ms(w['median'])}  min {ms(w['min'])}  "
               f"overhead {v['overhead_seconds'] * 1000:+6.1f} ms ({v['overhead_fraction_of_baseline'] * 100:+5.1f}%; "
               f"paired {v['overhead_paired_median_seconds'] * 1000:+6.1f} ms)  {cpu}")
if perf_s:
    out.append("perf --no-inherit task-clock (main thread only): "
               + ", ".join(f"{labels[n].strip()} median {s['median'] * 1000:.1f} ms" for n, s in perf_s.items()))
else:
    out.append(f"perf --no-inherit task-clock: unavailable ({perf_why or 'BENCH_PERF_RUNS=0'})")
out.append(f"parallel ({len(SERVER_DELAYS_MS)} servers, --slow-ms {SERVER_DELAYS_MS[0]}..{SERVER_DELAYS_MS[-1]}): "
           f"jobs 10 {ms(par_s['jobs_10']['median'])}  jobs 1 {ms(par_s['jobs_1']['median'])}  "
           f"s9 alone {ms(par_s['slowest_alone']['median'])}  (medians of {PAR_RUNS})")
out.append(f"load:     other processes used {load_text(load1.cores)} during the overhead runs, "
           f"{load_text(load3.cores)} during the parallel runs")
out.append(f"          before: {busy_text(before)}")
out.append(f"          after:  {busy_text(after)}")
for name, v in variant_s.items():
    out.append(f"{verdict(v['overhead_pass'])}: overhead {labels[name].strip()} "
               f"{v['overhead_fraction_of_baseline'] * 100:+.1f}% < {MAX_OVERHEAD * 100:g}%")
for name, v in variant_s.items():
    c = v["own_cpu_seconds_all_threads"]
    if c is None:
        out.append(f"FAIL: own CPU {labels[name].strip()}: unavailable")
    else:
        out.append(f"{verdict(v['own_cpu_pass'])}: own CPU {labels[name].strip()} "
                   f"{c['median'] * 1000:.1f} ms < {MAX_CPU_S * 1000:g} ms (all threads, median)")
out.append(f"{verdict(par_pass)}: jobs 10 / slowest alone = {par_ratio:.2f} <= {MAX_PAR_RATIO:.2f}")
print("\n".join(out))

os.makedirs(os.path.dirname(JSON_OUT) or ".", exist_ok=True)
with open(JSON_OUT, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print(f"wrote {JSON_OUT}")
PY
