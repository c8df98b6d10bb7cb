package batch

// SQLiteOnly says why the batch refuses --backend postgres.
func (Scenario) SQLiteOnly() string {
	return "its step journal is a SQLite file that the run, resume and resolve workers and the held-send reader all open as one"
}
