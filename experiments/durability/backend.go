package durability

// SQLiteOnly says why the matrix refuses --backend postgres.
func (Scenario) SQLiteOnly() string {
	return "its settings are SQLite's journal_mode and synchronous, and its power cut is SQLite's VFS (worker/faultvfs); a crash of the PostgreSQL server under each synchronous_commit is TestPostgresServerCrash in experiments/redelivery"
}
