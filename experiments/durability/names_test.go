package durability

// ConditionName is "pattern/MODE/SYNC/kind", as a run names a SQLite
// condition.
func ConditionName(pattern, mode, sync, kind string) string {
	return Condition{Pattern: pattern, JournalMode: mode, Synchronous: sync, Kind: kind}.name()
}

// ServerConditionName is "pattern/postgres/SYNCHRONOUS_COMMIT/kind", as a
// run names a PostgreSQL condition.
func ServerConditionName(pattern, sc, kind string) string {
	return Condition{Pattern: pattern, SynchronousCommit: sc, Kind: kind}.name()
}
