#!/usr/bin/env bash
# The catalock GitHub Action's main step (action.yml runs it; tests run it with a simulated
# GitHub environment). Inputs arrive only as environment variables, never spliced into code:
#   CATALOCK_BIN        the catalock binary
#   INPUT_CONFIG        catalock.toml path ("" = default)
#   INPUT_LOCKFILE      mcp.lock path ("" = default)
#   INPUT_COMMAND       a single stdio server, as one shell-quoted command line ("" = none),
#                       split with Python's shlex, never evaluated
#   INPUT_URL           a single HTTP server ("" = none)
#   INPUT_BASE          the base revision ("" = the pull request's base sha, else drift only)
#   INPUT_FAIL_ON       changes (default) | error | never
#   INPUT_FORMATS       extra --format FORMAT=PATH arguments, space- or newline-separated
# GitHub's: GITHUB_EVENT_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP.
# Outputs: changed (drift, or contract changes the pull request makes), breaking, unapproved,
# server-digest, exit-code.
set -uo pipefail
set -f # no globbing: inputs are split on whitespace only, never expanded

# Workflow-command data escaping (%, CR, LF), so no text can end the command early.
escape() { local t=${1//%/%25}; t=${t//$'\r'/%0D}; printf '%s' "${t//$'\n'/%0A}"; }
die() { echo "::error title=catalock::$(escape "$*")"; exit 2; }
case "${INPUT_FAIL_ON:-changes}" in
  changes | error | never) ;;
  *) die "fail-on must be changes, error or never (got ${INPUT_FAIL_ON})" ;;
esac
[ -n "${CATALOCK_BIN:-}" ] && [ -x "$CATALOCK_BIN" ] || die "catalock binary not found (CATALOCK_BIN=${CATALOCK_BIN:-})"
command -v jq >/dev/null || die "jq is needed (GitHub's runners have it)"
# A fresh directory per run: a second run in one job must never read the first one's reports.
tmp=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/catalock.XXXXXX")

base=${INPUT_BASE:-}
if [ -z "$base" ] && [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ]; then
  base=$(jq -r '.pull_request.base.sha // empty' "$GITHUB_EVENT_PATH")
fi

args=(check --format github --format "markdown=$tmp/catalock-summary.md" --format "json=$tmp/catalock-report.json")
[ -n "${INPUT_CONFIG:-}" ] && args+=(--config "$INPUT_CONFIG")
[ -n "${INPUT_LOCKFILE:-}" ] && args+=(--lockfile "$INPUT_LOCKFILE")
[ -n "${INPUT_URL:-}" ] && args+=(--url "$INPUT_URL")
# Formats: separated by spaces or newlines (a YAML block works too).
for spec in ${INPUT_FORMATS:-}; do args+=(--format "$spec"); done
if [ -n "$base" ] && ! [[ "$base" =~ ^[A-Za-z0-9][A-Za-z0-9._/@{}~^-]*$ ]]; then
  die "base must be a revision (a SHA, a branch or a tag), got: $base"
fi
if [ -n "$base" ]; then
  # CI checkouts are shallow: fetch the base commit (depth 1) unless it is already here.
  if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
    git fetch --no-tags --depth=1 origin "$base" >/dev/null 2>&1 \
      || echo "::warning title=catalock::$(escape "could not fetch the base commit $base; catalock will say what to fetch")"
  fi
  args+=(--base "$base")
fi
if [ -n "${INPUT_COMMAND:-}" ]; then
  # Split like a shell would (quotes, escapes), without ever evaluating the text.
  mapfile -t server < <(python3 -c 'import os, shlex; print("\n".join(shlex.split(os.environ["INPUT_COMMAND"])))') \
    || die "command is not a valid command line: $INPUT_COMMAND"
  args+=(-- "${server[@]}")
fi

"$CATALOCK_BIN" "${args[@]}"
code=$?

report="$tmp/catalock-report.json"
if [ -f "$report" ]; then
  # Contract changed: drift, or changes this pull request makes to the lockfile.
  changed=$(jq -r '([.servers[] | select(.change != null)] | length > 0) or ([.review.servers[]?.changes[]?] | length > 0)' "$report")
  breaking=$(jq -r '[(.servers[].changes[]?), (.review.servers[]?.changes[]?)] | map(select(.severity == "breaking")) | length' "$report")
  unapproved=$(jq -r '[.review.servers[]?.changes[]? | select(.verdict.status == "needs-approval" or .verdict.status == "denied")] | length' "$report")
else
  changed=false breaking=0 unapproved=0
fi
# The (first) server digest the lockfile records: what a release cites.
digest=$(awk -F'"' '/^server-digest = /{print $2; exit}' "${INPUT_LOCKFILE:-mcp.lock}" 2>/dev/null || true)
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "changed=$changed"
    echo "breaking=$breaking"
    echo "unapproved=$unapproved"
    echo "server-digest=$digest"
    echo "exit-code=$code"
  } >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$tmp/catalock-summary.md" ]; then
  cat "$tmp/catalock-summary.md" >>"$GITHUB_STEP_SUMMARY"
fi

case "${INPUT_FAIL_ON:-changes}" in
  never) exit 0 ;;
  error) [ "$code" -ge 2 ] && exit "$code"; exit 0 ;;
  *) exit "$code" ;;
esac
