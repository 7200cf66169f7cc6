#!/usr/bin/env bash
# The client command scripts/conformance hands to the MCP conformance suite (client mode).
# The suite starts a mock MCP server and runs
#   tests/conformance/client.sh [CATALOCK-LOCK-OPTION...] URL
# with the mock's URL appended as the last argument; this turns that into
#   catalock lock --lockfile LOCKFILE --protocol P [CATALOCK-LOCK-OPTION...] --url URL
#
# The protocol follows the scenario: the suite names the protocol version a scenario is
# about in MCP_CONFORMANCE_PROTOCOL_VERSION, and a client must derive its lifecycle from it
# (through 2025-11-25 the initialize handshake, 2026-07-28 the stateless one), so that
# version becomes --protocol. An unknown or absent version falls back to --protocol auto.
#
# Environment:
#   CATALOCK_BIN                    catalock to run (default: target/debug/catalock)
#   CATALOCK_CONFORMANCE_PROTOCOL   "auto", "modern", "legacy" or a version to use instead
#                                   of the scenario's version (scripts/conformance runs some
#                                   scenarios both ways)
#   CATALOCK_CONFORMANCE_LOCKFILE   where to write the lockfile (default: a temporary file,
#                                   removed afterwards)
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 [catalock lock option...] URL" >&2
  exit 2
fi
url=${!#}
options=("${@:1:$#-1}")

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CATALOCK_BIN:-$root/target/debug/catalock}

protocol=${CATALOCK_CONFORMANCE_PROTOCOL:-}
if [ -z "$protocol" ]; then
  case "${MCP_CONFORMANCE_PROTOCOL_VERSION:-}" in
    2026-07-28 | 2025-11-25 | 2025-06-18 | 2025-03-26 | 2024-11-05)
      protocol=$MCP_CONFORMANCE_PROTOCOL_VERSION ;;
    *) protocol=auto ;;
  esac
fi

# Every wait is bounded well inside the suite's own client timeout (scripts/conformance
# gives it 60 s), so a hang shows up as catalock's error, not as a killed process.
bounds=(--timeout 10 --probe-timeout 3 --total-timeout 30)

if [ -n "${CATALOCK_CONFORMANCE_LOCKFILE:-}" ]; then
  exec "$bin" lock --lockfile "$CATALOCK_CONFORMANCE_LOCKFILE" --protocol "$protocol" \
    "${bounds[@]}" "${options[@]}" --url "$url"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" lock --lockfile "$tmp/mcp.lock" --protocol "$protocol" \
  "${bounds[@]}" "${options[@]}" --url "$url"
