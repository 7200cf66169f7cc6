#!/usr/bin/env bash
# The catalock GitHub Action's main step (action.yml runs it; tests run it with a simulated
# GitHub environment). Inputs arrive only as environment variables, never spliced into code:
#   CATALOCK_BIN        the catalock binary
#   INPUT_CONFIG        catalock.toml path ("" = default)
#   INPUT_LOCKFILE      mcp.lock path ("" = default)
#   INPUT_COMMAND       a single stdio server, as one shell-quoted command line ("" = none)
#   INPUT_URL           a single HTTP server ("" = none)
#   INPUT_BASE          the base revision ("" = the pull request's base sha, else drift only)
#   INPUT_FAIL_ON       changes (default) | error | never
#   INPUT_FORMATS       extra --format FORMAT=PATH arguments, space-separated ("" = none)
# GitHub's: GITHUB_EVENT_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP.
# Outputs: changed, breaking, unapproved, server-digest, exit-code.
set -uo pipefail

die() { echo "::error title=catalock::$*"; exit 2; }
[ -n "${CATALOCK_BIN:-}" ] && [ -x "$CATALOCK_BIN" ] || die "catalock binary not found (CATALOCK_BIN=${CATALOCK_BIN:-})"
tmp=${RUNNER_TEMP:-$(mktemp -d)}

base=${INPUT_BASE:-}
if [ -z "$base" ] && [ -n "${GITHUB_EVENT_PATH:-}" ] && [ -f "$GITHUB_EVENT_PATH" ]; then
  base=$(jq -r '.pull_request.base.sha // empty' "$GITHUB_EVENT_PATH")
fi

args=(check --format github --format "markdown=$tmp/catalock-summary.md" --format "json=$tmp/catalock-report.json")
[ -n "${INPUT_CONFIG:-}" ] && args+=(--config "$INPUT_CONFIG")
[ -n "${INPUT_LOCKFILE:-}" ] && args+=(--lockfile "$INPUT_LOCKFILE")
[ -n "${INPUT_URL:-}" ] && args+=(--url "$INPUT_URL")
if [ -n "${INPUT_FORMATS:-}" ]; then
  read -r -a extra <<<"$INPUT_FORMATS"
  for spec in "${extra[@]}"; do args+=(--format "$spec"); done
fi
if [ -n "$base" ]; then
  # CI checkouts are shallow: fetch the base commit (depth 1) unless it is already here.
  if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
    git fetch --no-tags --depth=1 origin "$base" >/dev/null 2>&1 \
      || echo "::warning title=catalock::could not fetch the base commit $base; catalock will say what to fetch"
  fi
  args+=(--base "$base")
fi
if [ -n "${INPUT_COMMAND:-}" ]; then
  read -r -a server <<<"$INPUT_COMMAND"
  args+=(-- "${server[@]}")
fi

"$CATALOCK_BIN" "${args[@]}"
code=$?

report="$tmp/catalock-report.json"
if [ -f "$report" ]; then
  changed=$(jq -r '[.servers[] | select(.change != null)] | length > 0' "$report")
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
  changes) exit "$code" ;;
  *) die "fail-on must be changes, error or never (got ${INPUT_FAIL_ON})" ;;
esac
