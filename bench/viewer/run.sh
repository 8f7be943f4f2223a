#!/bin/sh
# Viewer frame-time benchmark: see run.mjs. Installs playwright-core (npm)
# when missing; needs Debian's chromium (apt-get install -y chromium).
set -e
cd "$(dirname "$0")/../.."
[ -d node_modules/playwright-core ] || npm install --no-audit --no-fund
exec node bench/viewer/run.mjs "$@"
