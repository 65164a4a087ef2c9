// Package docstest holds the test that keeps README.md and docs/ honest:
// it runs the commands and requests they show, against the real programs
// (built once per test run) and a real `capgraph serve`, compiles the Go
// programs they show, and checks the outputs they print.
//
// A fenced block is marked by an HTML comment on the line before it
// (invisible when the Markdown is rendered):
//
//	<!-- test: run -->                  run the block's commands (sh)
//	<!-- test: run; exit 1 -->          … the last one must exit 1 (default: every one exits 0)
//	<!-- test: run; input "a" "b" -->   … with these lines as the last command's standard input
//	<!-- test: run; not CMD: WHY -->    … except the command starting with CMD, for the reason WHY
//	<!-- test: run; needs npx -->       … only where npx is installed (CI=true: it must be)
//	<!-- test: output -->               what the run block before printed (see below)
//	<!-- test: file PATH -->            the block is written to PATH before the next run block
//	<!-- test: compile -->              a complete Go program: built in a module of its own
//	<!-- test: bench -->                benchmark commands: not run (minutes of CPU), but each
//	                                    package, program and -bench pattern must exist
//	<!-- test: skip: WHY -->            not run, for the reason WHY
//
// Every shell block (sh, bash, shell, console) and every Go block holding a
// whole file (package …) must be marked: a command in the docs is run, or
// says why not.
//
// The blocks of one document run in order in one bash session in a
// temporary directory, as a user would paste them into one terminal (cd and
// export carry over), with HOME in that directory. The documents' commands
// are written for a clone of the repository, so a few are rewritten:
// `go run ./cmd/capgraph` and `go run ./examples/NAME` run the programs
// built once (placed where `go run` places them, so their hints read `go
// run …` as they do for a user); `go install ./cmd/capgraph` installs from
// the repository; `git clone https://github.com/capgraph/capgraph.git`
// links the repository as ./capgraph (without network, with the tree under
// test, not the published one); a `serve` runs in the
// background on a free port, which replaces 8080 in the document's
// requests, until the document ends.
//
// An output block matches when each of its non-blank lines matches a line
// of the output, in order (other lines may come between): "…" stands for
// any text, and the output's HOME and the server's port read /home/you and
// 8080. A chat's output shows each input line after its prompt ("you> ",
// "approve? [yes/no] "), as a terminal echoes it.
package docstest
