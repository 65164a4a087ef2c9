#!/usr/bin/env bash
# Runs the page's browser tests (server TestWebPage, demo/controlroom
# TestWebPageControlRoom) and writes the screenshots docs/web.md shows to
# docs/img, compressed with pngquant
# (apt-get install pngquant). Needs what TestWebPage needs: node, the npm
# packages of server/testdata/js and Debian's chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CAPGRAPH_SCREENSHOT_DIR="$dir" go test -count=1 -run 'TestWebPage$' ./server/
CAPGRAPH_SCREENSHOT_DIR="$dir" go test -count=1 -run 'TestWebPageControlRoom$' ./demo/controlroom/
for f in controlroom-history controlroom-read markdown error-card approval steps mobile dark-chart identity; do
	pngquant --force --strip --quality=60-85 --speed 1 --output "docs/img/web-$f.png" "$dir/$f.png"
done
ls -l docs/img/web-*.png
