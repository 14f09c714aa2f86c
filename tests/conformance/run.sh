#!/usr/bin/env bash
# Runs the official MCP conformance server scenarios (@modelcontextprotocol/conformance, pinned)
# against a real `lomi serve` on a temporary data dir. See docs/conformance.md for what runs,
# which scenarios are skipped and why, and why the version is pinned.
#
#   bash tests/conformance/run.sh        # LOMI_BIN=/path/to/lomi to test another binary
#
# Exits non-zero if any applicable scenario fails; the last line is `N passed, N failed`.
set -euo pipefail

CONFORMANCE_VERSION=0.1.12 # 0.1.14+ need Node 22 (fs.globSync); this machine has Node 20
NPM_PREFIX="${HOME}/.cache/lomi/npm-conformance"
LOMI_BIN="${LOMI_BIN:-/root/.cache/lomi/target/debug/lomi}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCENARIO_TIMEOUT=120

# Scenarios that test generic protocol behaviour, run as an unapproved (pending) client: the
# runner cannot send headers, so this is what it sees of Lomi by default.
APPLICABLE=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)
# The same, minus dns-rebinding-protection (defined for unauthenticated servers, and its raw
# requests do not go through fetch), run again with a token pairing's bearer (bearer.cjs).
APPLICABLE_WITH_TOKEN=(server-initialize ping tools-list server-sse-multiple-streams)

# Scenarios that need the reference server's own tools/resources/prompts or a capability Lomi
# does not declare. Kept in step with docs/conformance.md.
declare -A SKIP=(
  [logging-set-level]="no logging capability declared; Lomi answers -32601 as the spec requires"
  [completion-complete]="no completions capability declared (asks for reference prompt test_prompt_with_arguments)"
  [tools-call-simple-text]="reference tool test_simple_text (passes vacuously: checker ignores isError)"
  [tools-call-image]="reference tool test_image_content"
  [tools-call-audio]="reference tool test_audio_content"
  [tools-call-embedded-resource]="reference tool test_embedded_resource"
  [tools-call-mixed-content]="reference tool test_multiple_content_types"
  [tools-call-with-logging]="reference tool test_tool_with_logging; needs the logging capability"
  [tools-call-error]="reference tool test_error_handling (passes vacuously on Lomi's unknown-tool error)"
  [tools-call-with-progress]="reference tool test_tool_with_progress"
  [tools-call-sampling]="reference tool test_sampling; Lomi never asks the client for sampling"
  [tools-call-elicitation]="reference tool test_elicitation; Lomi asks the person in Lomi, not via elicitation"
  [elicitation-sep1034-defaults]="reference tool test_elicitation_sep1034_defaults; no elicitation"
  [elicitation-sep1330-enums]="reference tool test_elicitation_sep1330_enums; no elicitation"
  [json-schema-2020-12]="reference tool json_schema_2020_12_tool; 'pending' suite in 0.1.12"
  [server-sse-polling]="reference tool test_reconnection; 'pending' suite in 0.1.12"
  [resources-list]="no resources capability declared"
  [resources-read-text]="no resources capability; reference resource test://static-text"
  [resources-read-binary]="no resources capability; reference resource test://static-binary"
  [resources-templates-read]="no resources capability; reference template test://template/{id}/data"
  [resources-subscribe]="no resources capability"
  [resources-unsubscribe]="no resources capability"
  [prompts-list]="no prompts capability declared"
  [prompts-get-simple]="no prompts capability; reference prompt test_simple_prompt"
  [prompts-get-with-args]="no prompts capability; reference prompt test_prompt_with_arguments"
  [prompts-get-embedded-resource]="no prompts capability; reference prompt test_prompt_with_embedded_resource"
  [prompts-get-with-image]="no prompts capability; reference prompt test_prompt_with_image"
)

say() { printf '==> %s\n' "$*"; }
die() {
  printf 'conformance: %s\n' "$*" >&2
  exit 1
}

command -v node >/dev/null || die "node is missing (scripts/test installs nodejs and npm)"
command -v npm >/dev/null || die "npm is missing (scripts/test installs nodejs and npm)"
[ -x "$LOMI_BIN" ] || die "no lomi binary at $LOMI_BIN (build: CARGO_TARGET_DIR=/root/.cache/lomi/target cargo build -p lomi-cli, or set LOMI_BIN)"

# --- install the pinned runner (idempotent) ---------------------------------------------------
pkg_json="$NPM_PREFIX/node_modules/@modelcontextprotocol/conformance/package.json"
installed=""
if [ -f "$pkg_json" ]; then
  installed="$(node -p "require(process.argv[1]).version" "$pkg_json" 2>/dev/null || true)"
fi
if [ "$installed" != "$CONFORMANCE_VERSION" ]; then
  say "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $NPM_PREFIX"
  mkdir -p "$NPM_PREFIX"
  npm install --no-audit --no-fund --prefix "$NPM_PREFIX" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >/dev/null
fi
conformance() { npx --no-install --prefix "$NPM_PREFIX" conformance "$@"; }

# --- start lomi serve --------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/lomi-conformance.XXXXXX")"
data="$work/data"
serve_pid=""
cleanup() {
  local rc=$?
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill "$serve_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  if [ "${LOMI_CONFORMANCE_KEEP:-}" = 1 ] || [ "$rc" -ne 0 ]; then
    echo "conformance logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$LOMI_BIN" serve --headless --http 127.0.0.1:0 --data-dir "$data" >"$work/serve.log" 2>&1 &
serve_pid=$!

url=""
for _ in $(seq 300); do
  kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; die "lomi serve exited before it was ready"; }
  if [ -s "$data/broker.json" ]; then
    url="$(node -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if (b.url && b.pid) console.log(b.url)' "$data/broker.json" 2>/dev/null || true)"
    [ -n "$url" ] && break
  fi
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; die "no broker.json in $data after 30 s"; }
say "lomi serve (pid $serve_pid) at $url; runner @modelcontextprotocol/conformance@$CONFORMANCE_VERSION"

# --- guard: every scenario of this version is either run or skipped with a reason -------------
mapfile -t all_scenarios < <(conformance list --server | sed -n 's/^  - //p')
[ "${#all_scenarios[@]}" -gt 0 ] || die "the runner listed no server scenarios"
passed=0
failed=0
skipped=0
for s in "${all_scenarios[@]}"; do
  if [[ " ${APPLICABLE[*]} " == *" $s "* ]]; then continue; fi
  if [ -n "${SKIP[$s]:-}" ]; then
    printf 'SKIP %-30s %s\n' "$s" "${SKIP[$s]}"
    skipped=$((skipped + 1))
  else
    printf 'FAIL %-30s unclassified: add it to APPLICABLE or SKIP (and docs/conformance.md)\n' "$s"
    failed=$((failed + 1))
  fi
done

# --- run -----------------------------------------------------------------------------------------
# run_scenario LABEL NAME: runs one scenario, prints one PASS/FAIL line (and the checks on failure).
run_scenario() {
  local label="$1" name="$2" log="$work/$2.$1.log" rc=0
  timeout "$SCENARIO_TIMEOUT" npx --no-install --prefix "$NPM_PREFIX" conformance server \
    --url "$url" --scenario "$name" >"$log" 2>&1 || rc=$?
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"
  local tally
  tally="$(grep -m1 '^Passed: ' "$log" || echo "no result (exit $rc)")"
  if [ "$label" = token ] && ! grep -q '^lomi-bearer-shim: ' "$log"; then
    rc=99
    tally="$tally; the bearer token was never sent"
  fi
  if [ "$rc" -eq 0 ]; then
    printf 'PASS %-30s [%s] %s\n' "$name" "$label" "$tally"
    passed=$((passed + 1))
  else
    printf 'FAIL %-30s [%s] %s\n' "$name" "$label" "$tally"
    # The checks and the failed ones, without the scenario's long description.
    awk '/^Checks:/ { on = 1; next } /^Test Results:/ { on = 0 }
         /^=== Failed Checks ===/ { on = 2; next }
         on == 2 && NF && !/^  / { on = 0 }
         on && NF' "$log" | sed 's/^/     | /'
    echo "     | full log: $log"
    failed=$((failed + 1))
  fi
}

for s in "${APPLICABLE[@]}"; do run_scenario pending "$s"; done

# Token pass: a workspace and a pairing created ahead, its bearer added by bearer.cjs.
mkdir -p "$work/project"
ws_id="$("$LOMI_BIN" --data-dir "$data" workspace add --name conformance --project "$work/project" --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).workspaceId))')"
token="$("$LOMI_BIN" --data-dir "$data" pairing create --name conformance --workspace "$ws_id" --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')"
[ -n "$token" ] || die "lomi pairing create printed no token"
token_state="$(node "$HERE/token-check.mjs" "$url" "$token" 2>&1 || true)"
if [ "$token_state" = approved ]; then
  printf 'PASS %-30s [token] lomi_pairing_status says approved\n' token-pairing
  passed=$((passed + 1))
else
  printf 'FAIL %-30s [token] lomi_pairing_status says %s, not approved\n' token-pairing "$token_state"
  failed=$((failed + 1))
fi
export LOMI_CONFORMANCE_TOKEN="$token" LOMI_CONFORMANCE_URL="$url"
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require $HERE/bearer.cjs"
for s in "${APPLICABLE_WITH_TOKEN[@]}"; do run_scenario token "$s"; done
unset LOMI_CONFORMANCE_TOKEN NODE_OPTIONS

kill -0 "$serve_pid" 2>/dev/null || { echo "FAIL lomi serve died during the run" >&2; failed=$((failed + 1)); }

echo "conformance: $skipped scenarios skipped (not applicable to Lomi, see docs/conformance.md)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
