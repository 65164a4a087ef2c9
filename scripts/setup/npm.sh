# Sourced by scripts/test.sh: installs the npm packages the tests run, each
# directory from its committed package-lock.json:
#   server/testdata/js        the server's Node client tests (openai 6.x,
#                             @ag-ui/client 1.0, playwright-core)
#   mcp/testdata/everything   @modelcontextprotocol/server-everything, the
#                             third-party MCP server of the mcp and cli tests
# Needs node and npm; the tests that use them fail in CI (CI=true) when they
# or the packages are missing, and skip elsewhere.
if command -v npm >/dev/null 2>&1; then
	for dir in server/testdata/js mcp/testdata/everything; do
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	done
else
	echo "scripts/setup/npm.sh: npm not found; the Node client and MCP server tests will not run" >&2
fi
