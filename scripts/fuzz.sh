#!/usr/bin/env bash
# Runs every fuzz target of the project for a bounded time each
# (docs/reliability.md). Plain `go test` (the README's test command) runs
# only their committed corpora (testdata/fuzz/<Target>); this script
# searches for new failing inputs.
#
#   scripts/fuzz.sh                 every target, FUZZTIME each (default 30s)
#   FUZZTIME=5m scripts/fuzz.sh     longer
#   scripts/fuzz.sh FuzzChatRequest only the targets whose name matches
#   SAVE=1 scripts/fuzz.sh          also copy the inputs the fuzzer found
#                                   interesting (new coverage) into the
#                                   committed corpus, at most SAVE_MAX
#                                   (default 40) of the smallest per target
#
# A failing input is written by go test to testdata/fuzz/<Target>/ and the
# script stops with its output; commit the file with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME="${FUZZTIME:-30s}"
filter="${1:-}"
cache="$(go env GOCACHE)/fuzz"
module="$(go list -m)"

# package:target, one per line, found by their declarations.
targets=$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . |
	grep -v '^./bench/' | while read -r file; do
		dir=$(dirname "$file")
		grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed "s|^func |${dir}:|"
	done | sort -u)

ran=0
for t in $targets; do
	dir=${t%%:*}
	name=${t#*:}
	if [ -n "$filter" ] && [[ "$name" != *"$filter"* ]]; then
		continue
	fi
	echo "== $name ($dir, $FUZZTIME)"
	go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$dir"
	ran=$((ran + 1))
	if [ -n "${SAVE:-}" ]; then
		pkg="$module/${dir#./}"
		src="$cache/$pkg/$name"
		dst="$dir/testdata/fuzz/$name"
		if [ -d "$src" ]; then
			mkdir -p "$dst"
			# The smallest inputs first: they are the readable ones.
			ls -S -r "$src" | head -n "${SAVE_MAX:-40}" | while read -r f; do
				cp "$src/$f" "$dst/$f"
			done
			echo "   corpus: $(ls "$dst" | wc -l) files in $dst"
		fi
	fi
done
if [ "$ran" = 0 ]; then
	echo "no fuzz target matches ${filter:-anything}" >&2
	exit 1
fi
echo "fuzzed $ran targets, $FUZZTIME each: no failure"
