#!/usr/bin/env bash
# Article 000's single transaction as a shell program that speaks to
# PostgreSQL through psql: the processed record claims the event and the
# job is written in the same transaction. One psql session runs beside
# the script as a coprocess, so a crash point can fall inside the open
# transaction; when idemlab kills the script there, psql reads the end of
# its input, exits, and the server rolls the transaction back.
set -u
if [ "${IDEMLAB_BACKEND:-sqlite}" != postgres ]; then
	echo "this handler speaks PostgreSQL through psql: run it with --backend postgres" >&2
	exit 2
fi
points=${IDEMLAB_POINTS_FD:-}

# point NAME asks the harness, which answers "go" or kills the script
# while it waits. Without IDEMLAB_POINTS_FD it does nothing.
point() {
	[ -n "$points" ] || return 0
	printf 'point %s\n' "$1" >&"$points" || return 0
	local reply
	read -r reply <&"$points" || true
}

# The session: unaligned, tuples only, quiet, stopping at the first error.
# It does not keep the points socket open.
coproc PSQL {
	if [ -n "$points" ]; then eval "exec $points>&-"; fi
	exec psql "$IDEMLAB_DSN" -X -q -A -t -v ON_ERROR_STOP=1 2>&1
}

# sql STATEMENT runs one statement in the session and leaves its rows in
# $rows (not printed: a command substitution's subshell has no coprocess
# descriptors). It fails, with psql's message on stderr, when the
# statement ended the session.
sql() {
	printf '%s;\n\\echo __done__\n' "$1" >&"${PSQL[1]}"
	local line
	rows=""
	while IFS= read -r line <&"${PSQL[0]}"; do
		if [ "$line" = __done__ ]; then
			return 0
		fi
		rows+="$line"
	done
	printf 'psql: %s\n' "$rows" >&2
	return 1
}

event=${IDEMLAB_EVENT_ID//\'/\'\'}
point ready
sql "BEGIN" || exit 1
sql "INSERT INTO processed_events (event_id) VALUES ('$event') ON CONFLICT DO NOTHING RETURNING 1" || exit 1
claimed=$rows
point after-processed-insert
if [ "$claimed" = 1 ]; then
	sql "INSERT INTO follow_up_jobs (event_id, job_key) VALUES ('$event', 'review-$event')" || exit 1
fi
point before-commit
sql "COMMIT" || exit 1
point after-commit
