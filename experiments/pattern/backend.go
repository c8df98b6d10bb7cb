package pattern

// SQLiteOnly says why the pattern scenario refuses --backend postgres.
func (Scenario) SQLiteOnly() string {
	return "a pattern file's schema, handler and invariants are SQLite statements, checked by preparing them on SQLite, and its power class is SQLite's VFS"
}
