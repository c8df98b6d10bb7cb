package explore

// SQLiteOnly says why explore refuses --backend postgres.
func (Scenario) SQLiteOnly() string {
	return "its sweeps, batch and lease patterns read SQLite files; its concurrent deliveries on PostgreSQL under each isolation level are TestPostgresConcurrentDeliveries in experiments/explore"
}
