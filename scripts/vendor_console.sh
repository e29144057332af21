#!/usr/bin/env bash
# Vendor the web console's browser libraries into src/sparkpipes/server/static/vendor/:
# htmx, uPlot and CodeMirror 5 (with its SQL mode), at pinned versions checked against the
# registry's integrity hashes. Only the built files and their licenses are copied; they are
# committed with the package, so users of `sparkpipes serve` need no Node.js. Needs npm (to
# re-vendor, e.g. after changing a version below). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=src/sparkpipes/server/static/vendor

# package@version and the integrity the registry published for it
PACKAGES=(
  "htmx.org@2.0.11 sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA=="
  "uplot@1.6.32 sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
  "codemirror@5.65.21 sha512-6teYk0bA0nR3QP0ihGMoxuKzpl5W80FpnHpBJpgy66NK3cZv5b/d/HY8PnRvfSsCG1MTfr92u2WUl+wT0E40mQ=="
)
# package: "file in the package -> name in vendor/" pairs
declare -A FILES=(
  [htmx.org]="dist/htmx.min.js:htmx.min.js LICENSE:htmx.LICENSE"
  [uplot]="dist/uPlot.iife.min.js:uPlot.iife.min.js dist/uPlot.min.css:uPlot.min.css LICENSE:uPlot.LICENSE"
  [codemirror]="lib/codemirror.js:codemirror.js lib/codemirror.css:codemirror.css mode/sql/sql.js:codemirror-sql.js LICENSE:codemirror.LICENSE"
)

say() { printf '[vendor] %s\n' "$*" >&2; }
command -v npm >/dev/null || { say "npm is needed to vendor (apt-get install npm)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dest"
rm -f "$dest"/*
versions="$dest/VERSIONS.txt"
echo "# vendored by scripts/vendor_console.sh from the npm registry" >"$versions"

for entry in "${PACKAGES[@]}"; do
  spec=${entry%% *}
  want=${entry#* }
  name=${spec%@*}
  say "$spec"
  if ! packed=$(cd "$tmp" && npm pack "$spec" --json 2>"$tmp/npm.log"); then
    say "npm pack $spec failed:"
    cat "$tmp/npm.log" >&2
    exit 1
  fi
  got=$(printf '%s' "$packed" |
    python3 -c 'import json, sys; p = json.load(sys.stdin)[0]; print(p["filename"], p["integrity"])')
  file=${got%% *}
  integrity=${got#* }
  if [ "$integrity" != "$want" ]; then
    say "$spec: integrity $integrity, expected $want"
    exit 1
  fi
  mkdir -p "$tmp/$name"
  tar -xzf "$tmp/$file" -C "$tmp/$name"
  for pair in ${FILES[$name]}; do
    cp "$tmp/$name/package/${pair%%:*}" "$dest/${pair#*:}"
  done
  echo "$spec $integrity" >>"$versions"
done
say "done: $(ls "$dest" | tr '\n' ' ')"
