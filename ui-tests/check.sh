#!/usr/bin/env bash
# Runs the popover behaviour checks (ui-tests/check.mjs) in headless chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
flags=()
node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' || flags=(--experimental-websocket)
node "$here/format.test.mjs"
exec node "${flags[@]}" --no-warnings "$here/check.mjs" "$@"
