# shellcheck shell=bash
# Sourced by scripts/test.sh before `go test`: provides a PostgreSQL server for
# the tests of graph/checkpoint/postgres and exports its URL.
#
#   CAPGRAPH_TEST_POSTGRES   already set → used as is, nothing is started.
#                            otherwise   → a private, throw-away cluster is
#                            started and this variable is exported, e.g.
#                            postgres://postgres@127.0.0.1:41234/capgraph_test?sslmode=disable
#   CAPGRAPH_PG_BINDIR       where initdb/pg_ctl live (default /usr/lib/postgresql/15/bin)
#   CAPGRAPH_PG_TMP          parent of the cluster's temp dir (default /tmp; the
#                            postgres user must be able to enter it)
#   CI=true                  missing binaries or a failed start is an error
#                            (the sourcing script fails); otherwise a message is
#                            printed, CAPGRAPH_TEST_POSTGRES_UNAVAILABLE is
#                            exported with the reason and the Go tests skip
#                            saying so.
#
# The cluster lives in a temp dir owned by the postgres user (initdb and pg_ctl
# refuse to run as root; as non-root they run as the current user), listens on
# a free port on 127.0.0.1 only, keeps its socket inside the temp dir, and is
# stopped and removed when the sourcing shell exits. The EXIT trap is chained:
# an EXIT trap set before sourcing still runs after ours.
#
# Manual use: `source scripts/setup/postgres.sh` in an interactive shell gives a
# server until that shell exits; `echo "$CAPGRAPH_TEST_POSTGRES"` shows its URL.

capgraph_pg_setup() {
	if [ -n "${CAPGRAPH_TEST_POSTGRES:-}" ]; then
		echo "postgres: using CAPGRAPH_TEST_POSTGRES from the environment" >&2
		return 0
	fi
	local bindir="${CAPGRAPH_PG_BINDIR:-/usr/lib/postgresql/15/bin}"
	local reason=""
	if [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/pg_ctl" ]; then
		reason="PostgreSQL server binaries not found in $bindir (install postgresql-15, or set CAPGRAPH_PG_BINDIR or CAPGRAPH_TEST_POSTGRES)"
	elif [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		reason="running as root but there is no postgres user to run initdb as (initdb refuses root)"
	fi
	if [ -z "$reason" ]; then
		capgraph_pg_start "$bindir" && return 0
		reason="could not start a private PostgreSQL cluster (see the output above)"
	fi
	if [ "${CI:-}" = true ]; then
		echo "postgres: ERROR: $reason; CI must run the PostgreSQL tests" >&2
		return 1
	fi
	echo "postgres: $reason; the PostgreSQL tests will be skipped" >&2
	export CAPGRAPH_TEST_POSTGRES_UNAVAILABLE="$reason"
	return 0
}

# capgraph_pg_as_owner runs a server command as the cluster's owner.
capgraph_pg_as_owner() {
	if [ "$(id -u)" != 0 ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	else
		su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
	fi
}

capgraph_pg_start() {
	local bindir="$1" dir port attempt
	dir="$(mktemp -d "${CAPGRAPH_PG_TMP:-/tmp}/capgraph-pg.XXXXXX")" || return 1
	CAPGRAPH_PG_DIR="$dir"
	CAPGRAPH_PG_BIN="$bindir"
	capgraph_pg_trap
	mkdir -p "$dir/sock"
	if [ "$(id -u)" = 0 ]; then
		chown -R postgres:postgres "$dir" || return 1
	fi
	if ! capgraph_pg_as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1; then
		echo "postgres: initdb failed:" >&2
		cat "$dir/initdb.log" >&2
		return 1
	fi
	# A port can be taken between the check and the start; try a few.
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
			continue # in use
		fi
		if capgraph_pg_as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
			-o "-p $port -c listen_addresses=127.0.0.1 -k $dir/sock" start >/dev/null 2>&1; then
			CAPGRAPH_PG_STARTED=1
			if ! "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres capgraph_test; then
				echo "postgres: createdb failed" >&2
				return 1
			fi
			export CAPGRAPH_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/capgraph_test?sslmode=disable"
			echo "postgres: private cluster in $dir on 127.0.0.1:$port (stopped on exit)" >&2
			return 0
		fi
	done
	echo "postgres: pg_ctl start failed; server log:" >&2
	tail -n 20 "$dir/server.log" >&2 2>/dev/null
	return 1
}

capgraph_pg_cleanup() {
	if [ -n "${CAPGRAPH_PG_STARTED:-}" ]; then
		capgraph_pg_as_owner "$CAPGRAPH_PG_BIN/pg_ctl" -D "$CAPGRAPH_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
		CAPGRAPH_PG_STARTED=
	fi
	if [ -n "${CAPGRAPH_PG_DIR:-}" ]; then
		rm -rf "$CAPGRAPH_PG_DIR"
		CAPGRAPH_PG_DIR=
	fi
}

# capgraph_pg_trap adds the cleanup to the EXIT trap, keeping any trap already set.
capgraph_pg_trap() {
	local prev=""
	if [ -n "$(trap -p EXIT)" ]; then
		eval "set -- $(trap -p EXIT)" # trap -- 'cmd' EXIT
		prev="$3"
	fi
	case "$prev" in *capgraph_pg_cleanup*) return 0 ;; esac
	# shellcheck disable=SC2064 # expand prev now, on purpose
	trap "capgraph_pg_cleanup${prev:+; $prev}" EXIT
}

capgraph_pg_setup
