#!/usr/bin/env bash
# The project's test command (README Quick start). It sets up everything the
# tests need on a fresh machine with Go, Debian packages and npm, then runs
# every test. Set-up steps live in scripts/setup/*.sh, one concern each.
set -euo pipefail
cd "$(dirname "$0")/.."

for setup in scripts/setup/*.sh; do
	[ -e "$setup" ] || continue
	# shellcheck source=/dev/null
	source "$setup"
done

go test -race -count=1 -timeout 20m ./... "$@"
