# Sourced by scripts/test.sh: fills the module cache with every module of
# the module graph, the tests of dependencies included. The documentation
# test builds the getting-started application in a module of its own and
# runs `go mod tidy` there offline (GOPROXY=off), which needs them; `go
# test` alone downloads only what builds and tests this module's packages.
# `go mod tidy -diff` changes nothing; with the modules cached it costs a
# second.
if ! go mod tidy -diff >/dev/null 2>&1; then
	echo "scripts/setup/gomodules.sh: go mod tidy -diff failed (no module proxy, or go.mod not tidy)" >&2
fi
