#!/usr/bin/env bash
# single_transaction_psql.sh, then a CHECKPOINT in the same session: the
# checkpointer writes every dirty page and only then syncs each file, so
# a power cut inside it (--sync-points) finds data pages written and not
# synced, which a torn cut tears; with full_page_writes=off no page image
# in the WAL repairs them.
. "$(dirname "${BASH_SOURCE[0]}")/single_transaction_psql.sh"
sql "CHECKPOINT" || exit 1
point after-checkpoint
