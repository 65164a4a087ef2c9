# Sourced by scripts/test.sh: installs the npm packages of the server's Node
# client tests (server/testdata/js: openai 6.x, @ag-ui/client 1.0) from the
# committed package-lock.json. Needs node and npm; TestNodeClients fails in CI
# (CI=true) when they or the packages are missing.
if command -v npm >/dev/null 2>&1; then
	(cd server/testdata/js && npm ci --no-audit --no-fund --loglevel=error)
else
	echo "scripts/setup/npm.sh: npm not found; server Node client tests will not run" >&2
fi
