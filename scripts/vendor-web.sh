#!/usr/bin/env bash
# Copies the built-in page's libraries (server/web/vendor) from their npm
# packages, unchanged. npm pack verifies each tarball against the registry's
# integrity hash; the files' SHA-256 are listed in server/web/vendor/README.md
# and checked by TestVendoredFiles.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=server/web/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent marked@18.2.1 dompurify@3.4.18 uplot@1.6.32 >/dev/null)
for p in marked-18.2.1 dompurify-3.4.18 uplot-1.6.32; do
	mkdir -p "$tmp/$p" && tar xzf "$tmp/$p.tgz" -C "$tmp/$p"
done
cp "$tmp/marked-18.2.1/package/lib/marked.umd.js" "$dest/"
cp "$tmp/marked-18.2.1/package/LICENSE" "$dest/marked.LICENSE"
cp "$tmp/dompurify-3.4.18/package/dist/purify.min.js" "$dest/"
cp "$tmp/dompurify-3.4.18/package/LICENSE" "$dest/dompurify.LICENSE"
cp "$tmp/uplot-1.6.32/package/dist/uPlot.iife.min.js" "$tmp/uplot-1.6.32/package/dist/uPlot.min.css" "$dest/"
cp "$tmp/uplot-1.6.32/package/LICENSE" "$dest/uplot.LICENSE"
(cd "$dest" && sha256sum marked.umd.js purify.min.js uPlot.iife.min.js uPlot.min.css)
