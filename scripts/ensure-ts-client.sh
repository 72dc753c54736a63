#!/usr/bin/env bash
# The TypeScript client's pinned dev tools (openapi-typescript, tsc) for its drift and type checks
# (docs/sdks.md#the-drift-check); installed again only when its package-lock.json changes.
set -euo pipefail
cd "$(dirname "$0")/../clients/typescript"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the TypeScript client's checks will be skipped (install Node.js 20+)" >&2
  exit 0
fi
stamp=node_modules/.rb-installed
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "==> installing the TypeScript client's dev tools (npm ci)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
