#!/usr/bin/env bash
# Screenshots of the popover with the mock __TAURI__, light and dark, into ui-tests/out/.
#   ui-tests/screenshot.sh            popover-light.png, popover-dark.png (380x900: whole page)
#   also: full-*.png (380x1500, everything), *-560.png (the real 380x560 popover), guard/settings demos and an error toast.
# Needs python3 and Debian's chromium (apt-get install -y chromium).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out="$here/out"
mkdir -p "$out"
chrome="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[ -n "$chrome" ] || { echo "screenshot.sh: chromium not found (apt-get install -y chromium)" >&2; exit 1; }

python3 "$here/make-harness.py" >/dev/null

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$root" >/dev/null 2>&1 &
server=$!
profile="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/ui-tests/harness.html')" 2>/dev/null && break
  sleep 0.1
done

base="http://127.0.0.1:$port/ui-tests/harness.html"
shot() { # name width height scheme query
  local name="$1" w="$2" h="$3" scheme="$4" query="${5:-}"
  local dark=()
  [ "$scheme" = dark ] && dark=(--force-dark-mode --blink-settings=preferredColorScheme=0)
  "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --window-size="$w,$h" --virtual-time-budget=2500 \
    "${dark[@]}" --screenshot="$out/$name.png" "$base${query:+?$query}" >/dev/null 2>&1
  echo "$out/$name.png"
}

shot popover-light 380 900 light
shot full-light 380 1500 light
shot popover-dark 380 900 dark
shot full-dark 380 1500 dark
shot popover-light-560 380 560 light
shot popover-dark-560 380 560 dark
shot guard-form-light 380 900 light "demo=guard"
shot guard-form-dark 380 900 dark "demo=guard"
shot settings-light 380 560 light "demo=settings"
shot settings-dark 380 560 dark "demo=settings"
shot errors-light 380 560 light "fail=processes,chart&jobs=none&pressure=critical"
shot warn-dark 380 560 dark "pressure=warn"
