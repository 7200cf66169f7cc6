// Judges one conformance run for scripts/conformance and prints its checks, one a line.
//
//   node tests/conformance/report.mjs RUN_DIR
//
// RUN_DIR holds what scripts/conformance left there: `run.json` (scenario, spec version,
// protocol, the suite's exit status), `suite.log` (the suite's output) and `results/`
// (the suite's checks.json, plus catalock's stdout and stderr). Prints the checks and one
// last line `RESULT <pass|FAIL> <passed> <failed> <skipped> <problems>` for the caller to
// sum (failed counts FAILURE and WARNING checks; problems, the other reasons below), and
// exits 1 when the run failed.
//
// A run fails when a check is FAILURE or WARNING (the suite counts warnings as failures),
// when the suite exited non-zero (catalock exited with an error, or timed out), when the
// scenario produced no checks (not applicable at that spec version, say), when a check
// catalock is known to pass did not come out SUCCESS (so a regression that merely stops
// exercising a check cannot pass as SKIPPED), or when catalock offered another protocol
// version than the one it was told to.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Checks that must be SUCCESS: the check id, or `id[name]` where one id names several
// checks (http-standard-headers emits one per method).
const REQUIRED = {
  initialize: ['mcp-client-initialization'],
  'request-metadata': [
    'sep-2575-http-client-sends-version-header',
    'sep-2575-client-populates-meta',
    'sep-2575-client-sends-client-info',
    'sep-2575-http-version-header-matches-meta',
    'sep-2575-client-retry-supported-version'
  ],
  'http-standard-headers': [
    'sep-2243-client-includes-standard-headers[ClientMcpMethodHeader_tools_list]'
  ]
};

const runDir = process.argv[2];
if (!runDir) {
  console.error('usage: report.mjs RUN_DIR');
  process.exit(2);
}
const run = JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8'));
const problems = [];

// results/<scenario>-<timestamp>/checks.json (scenario names may hold a slash).
const resultsRoot = join(runDir, 'results');
const resultDirs = [];
const walk = (dir) => {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (existsSync(join(path, 'checks.json'))) resultDirs.push(path);
    else walk(path);
  }
};
walk(resultsRoot);

let checks = [];
let resultDir = null;
if (resultDirs.length !== 1) {
  problems.push(
    resultDirs.length === 0
      ? 'the suite wrote no checks.json (see suite.log)'
      : `the suite wrote ${resultDirs.length} checks.json files; expected one`
  );
} else {
  resultDir = resultDirs[0];
  checks = JSON.parse(readFileSync(join(resultDir, 'checks.json'), 'utf8'));
  if (checks.length === 0) problems.push('the scenario emitted no checks');
}

const idCount = new Map();
for (const c of checks) idCount.set(c.id, (idCount.get(c.id) ?? 0) + 1);
const label = (c) => (idCount.get(c.id) > 1 ? `${c.id}[${c.name}]` : c.id);
const keys = (c) => [c.id, `${c.id}[${c.name}]`];

const WORD = { SUCCESS: 'pass', FAILURE: 'FAIL', WARNING: 'WARN', SKIPPED: 'skip', INFO: 'info' };
let passed = 0;
let failed = 0;
let skipped = 0;
const width = Math.max(0, ...checks.map((c) => label(c).length));
for (const c of checks) {
  const word = WORD[c.status] ?? c.status;
  if (c.status === 'SUCCESS') passed++;
  else if (c.status === 'FAILURE' || c.status === 'WARNING') failed++;
  else if (c.status === 'SKIPPED') skipped++;
  let line = `    ${word}  ${label(c).padEnd(width)}  ${c.description ?? ''}`;
  if (c.status === 'FAILURE' || c.status === 'WARNING') {
    line += `\n          ${c.errorMessage ?? 'no message'}; details: ${JSON.stringify(c.details ?? {})}`;
  }
  console.log(line);
}

for (const key of checks.length > 0 ? (REQUIRED[run.scenario] ?? []) : []) {
  const found = checks.find((c) => keys(c).includes(key));
  if (!found) problems.push(`check ${key} is missing (catalock passed it before)`);
  else if (found.status === 'SKIPPED' || found.status === 'INFO') {
    // (FAILURE and WARNING are counted above already)
    problems.push(`check ${key} is ${found.status}, not SUCCESS (catalock passed it before)`);
  }
}

// initialize accepts any known version; make sure catalock offered the one it was told to.
if (run.scenario === 'initialize' && /^\d{4}-\d{2}-\d{2}$/.test(run.protocol)) {
  const init = checks.find((c) => c.id === 'mcp-client-initialization');
  const sent = init?.details?.protocolVersionSent;
  if (init && sent !== run.protocol) {
    problems.push(`catalock offered protocolVersion ${JSON.stringify(sent)}, not ${run.protocol} (--protocol ${run.protocol})`);
  } else if (init) {
    console.log(`    pass  (catalock) offered protocolVersion ${sent}, as --protocol ${run.protocol} asked`);
  }
}

if (run.suiteExit !== 0) {
  const log = existsSync(join(runDir, 'suite.log')) ? readFileSync(join(runDir, 'suite.log'), 'utf8') : '';
  const why = [];
  if (run.suiteExit === 124 || run.suiteExit === 137) why.push('the suite itself timed out');
  if (/CLIENT TIMED OUT/.test(log)) why.push('catalock timed out');
  const exited = log.match(/Client exited with code (-?\d+)/);
  if (exited) why.push(`catalock exited with status ${exited[1]}`);
  problems.push(`the suite exited with status ${run.suiteExit}${why.length ? ` (${why.join('; ')})` : ''}`);
}

if (resultDir && (problems.length > 0 || failed > 0)) {
  for (const name of ['stdout.txt', 'stderr.txt']) {
    const path = join(resultDir, name);
    const text = existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
    if (text) console.log(`    catalock ${name.replace('.txt', '')}:\n${text.replace(/^/gm, '      | ')}`);
  }
}
for (const p of problems) console.log(`    FAIL  ${p}`);

const ok = failed === 0 && problems.length === 0;
console.log(`RESULT ${ok ? 'pass' : 'FAIL'} ${passed} ${failed} ${skipped} ${problems.length}`);
process.exit(ok ? 0 : 1);
