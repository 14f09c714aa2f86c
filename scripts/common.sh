# Shared set-up for Lomi's two commands (scripts/run and scripts/test): installs what is
# missing, idempotently, and points cargo at a build cache outside the clone.
# Sourced, not executed.

set -euo pipefail

LOMI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LOMI_ROOT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lomi/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
if [ "${CI:-}" = "true" ]; then
  export CARGO_INCREMENTAL=0
fi

# Each line says how long the command has run (m:ss), so a slow step shows in any log.
say() { printf '\033[1mlomi:\033[0m [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# ensure_packages PKG...: installs the Debian packages that are not installed yet.
ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing system packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# What building Lomi needs on Debian/Ubuntu; the desktop app (Tauri) adds WebKitGTK and friends.
DESKTOP_PACKAGES=(libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev libssl-dev)
BUILD_PACKAGES=(build-essential pkg-config ca-certificates curl "${DESKTOP_PACKAGES[@]}")
# What Lomi itself runs (scripts/run installs these): Chromium for browser panels, adb for
# Android devices.
RUN_PACKAGES=(chromium adb)
# What the end-to-end tests add: Python for the MCP Python SDK, Node.js for the MCP
# conformance suite, a real Secret Service (D-Bus + GNOME Keyring) for the stdio bridge, and
# Debian's Chromium for the browser panels.
TEST_PACKAGES=(python3 python3-venv dbus dbus-x11 gnome-keyring libsecret-tools less vim-tiny procps tmux git adb chromium)
# The desktop app's end-to-end test: a virtual X server and WebKitGTK's WebDriver.
TEST_PACKAGES+=(xvfb xauth x11-utils webkit2gtk-driver)
# Real pages Lomi did not write, for the browser tests: Python's HTML documentation (Sphinx,
# with a search page whose script fills in its results after load).
TEST_PACKAGES+=(python3.11-doc)
# A real font file the capture tests serve as a late web font.
TEST_PACKAGES+=(fonts-dejavu-core)
# A real APK for the Android tests: Debian's aapt compiles a manifest to binary XML against
# Android's framework resources.
TEST_PACKAGES+=(aapt android-framework-res)

LOMI_CACHE="${LOMI_CACHE:-$HOME/.cache/lomi}"
export LOMI_CACHE

# ensure_venv: the test virtualenv with tests/requirements.txt installed; prints its python.
ensure_venv() {
  local venv="$LOMI_CACHE/venv"
  local stamp="$venv/.requirements.sha256"
  local want
  want="$(sha256sum "$LOMI_ROOT/tests/requirements.txt" | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing Python test packages"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$LOMI_ROOT/tests/requirements.txt" >&2
    printf '%s\n' "$want" > "$stamp"
  fi
  printf '%s\n' "$venv/bin/python"
}

# ensure_node: Node.js and npm, from Debian unless the machine already has them (for example
# from NodeSource, whose nodejs package bundles npm and conflicts with Debian's).
ensure_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    ensure_packages nodejs npm
  fi
}

ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      say "installing the Rust toolchain (rustup)"
      curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt
      export PATH="$HOME/.cargo/bin:$PATH"
    fi
  fi
}

# cargo_linted ARGS...: cargo with clippy's lints applied to Lomi's own crates as they compile.
# clippy-driver is what `cargo clippy` runs, set here as the workspace's compiler wrapper so it
# also writes the real artifacts: one build is the lint check, the test binaries and the
# programs (a separate `cargo clippy` compiles every dependency a second time, in check mode).
# Warnings fail the build, as `cargo clippy -- -D warnings` does. Every step that reuses that
# build must go through here too: the wrapper is part of what cargo compares.
cargo_linted() {
  local driver
  driver="$(command -v clippy-driver)" || { say "clippy-driver not found (rustup component add clippy)"; return 1; }
  RUSTC_WORKSPACE_WRAPPER="$driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
    cargo "$@"
}

# build_adb_fixture [PROFILE_FLAGS...]: builds the fake Android device the Android tests and
# bench/android connect the real adb server to, and prints its path.
build_adb_fixture() {
  cargo build --locked -p lomi-adb-fixture "$@" >&2 || return 1
  local profile=debug
  for arg in "$@"; do
    if [ "$arg" = "--release" ]; then profile=release; fi
  done
  printf '%s\n' "$CARGO_TARGET_DIR/$profile/lomi-adb-fixture"
}

# build_lomi [PROFILE_FLAGS...]: builds the `lomi` binary and prints its path.
build_lomi() {
  # Called inside $(…), where `set -e` does not reach: fail explicitly.
  cargo build --locked -p lomi-cli "$@" >&2 || return 1
  local profile=debug
  for arg in "$@"; do
    if [ "$arg" = "--release" ]; then profile=release; fi
  done
  printf '%s\n' "$CARGO_TARGET_DIR/$profile/lomi"
}

# build_frontend: the window's page (TypeScript, Vite) into frontend/dist, which the desktop
# app embeds at compile time; so it runs before any cargo step that compiles src-tauri.
build_frontend() {
  ensure_node
  (
    cd "$LOMI_ROOT/frontend"
    npm ci --no-audit --no-fund --loglevel=error >&2
    npm run --silent build >&2
  ) || return 1
}

# build_desktop [PROFILE_FLAGS...]: builds `lomi-desktop` (after the frontend) and prints its path.
build_desktop() {
  build_frontend || return 1
  cargo build --locked -p lomi-desktop "$@" >&2 || return 1
  local profile=debug
  for arg in "$@"; do
    if [ "$arg" = "--release" ]; then profile=release; fi
  done
  printf '%s\n' "$CARGO_TARGET_DIR/$profile/lomi-desktop"
}

# ensure_tauri_driver: the WebDriver server for Tauri apps (it drives WebKitWebDriver), from
# crates.io into the cache; prints its path.
# Claude Code's CLI (`claude mcp add|list`), pinned, for the end-to-end test that adds Lomi
# to it the way a person does; it checks servers without an account.
CLAUDE_CODE_VERSION=2.1.332
ensure_claude_code() {
  local root="$LOMI_CACHE/claude-code"
  local installed=""
  if [ -f "$root/node_modules/@anthropic-ai/claude-code/package.json" ]; then
    installed="$(node -p "require(process.argv[1]).version" "$root/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null || true)"
  fi
  if [ "$installed" != "$CLAUDE_CODE_VERSION" ]; then
    say "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
    mkdir -p "$root"
    npm install --no-audit --no-fund --prefix "$root" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >/dev/null || return 1
  fi
  printf '%s\n' "$root/node_modules/.bin/claude"
}

# The MCP TypeScript SDK (@modelcontextprotocol/sdk), pinned, for the end-to-end test of an
# OAuth client built on it (tests/e2e/ts_oauth_client.mjs); prints its node_modules folder.
MCP_TS_SDK_VERSION=1.32.2
ensure_mcp_ts_sdk() {
  local root="$LOMI_CACHE/mcp-ts-sdk"
  local installed=""
  if [ -f "$root/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    installed="$(node -p "require(process.argv[1]).version" "$root/node_modules/@modelcontextprotocol/sdk/package.json" 2>/dev/null || true)"
  fi
  if [ "$installed" != "$MCP_TS_SDK_VERSION" ]; then
    say "installing @modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION"
    mkdir -p "$root"
    npm install --no-audit --no-fund --prefix "$root" "@modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION" >/dev/null || return 1
  fi
  printf '%s\n' "$root/node_modules"
}

ensure_tauri_driver() {
  local root="$LOMI_CACHE/tauri-driver"
  mkdir -p "$LOMI_CACHE"
  # One install at a time: scripts/test asks from two lanes.
  (
    flock 9
    if [ ! -x "$root/bin/tauri-driver" ]; then
      say "installing tauri-driver"
      # --debug: it only relays WebDriver requests, so an optimised build would cost CI
      # compile time for nothing. A target dir of its own: in Lomi's, its debug build would
      # wait for the workspace build's lock.
      status=0
      cargo install --locked --quiet --debug tauri-driver --version '^2' --root "$root" \
        --target-dir "$root/build" >&2 || status=$?
      rm -rf "$root/build"
      exit "$status"
    fi
  ) 9>"$LOMI_CACHE/tauri-driver.lock" || return 1
  printf '%s\n' "$root/bin/tauri-driver"
}
