// Command sqlitetx is the least a redelivery worker can do: open the file
// with the worker's pragmas, run the single-transaction delivery once and
// print one JSON line. The start-up benchmark compares it with
// "idemlab worker redelivery.deliver" to price everything else the worker
// links and checks.
package main

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	_ "github.com/mattn/go-sqlite3"
)

const schema = `
CREATE TABLE IF NOT EXISTS follow_up_jobs (event_id TEXT NOT NULL, job_key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS processed_events (event_id TEXT PRIMARY KEY NOT NULL);`

func main() {
	dbPath := flag.String("db", "", "database file")
	eventID := flag.String("event-id", "e", "event id")
	jobKey := flag.String("job-key", "k", "job key")
	flag.Parse()
	inserted, err := deliver(*dbPath, *eventID, *jobKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlitetx:", err)
		os.Exit(3)
	}
	line, _ := json.Marshal(map[string]bool{"job_inserted": inserted})
	fmt.Println(string(line))
}

// deliver claims the event and inserts its job in one transaction, as
// worker/redelivery does for the single-transaction pattern.
func deliver(path, eventID, jobKey string) (bool, error) {
	// The same settings idemlab's redelivery worker asks for in its DSN.
	dsn := "file:" + path + "?_txlock=immediate&_journal_mode=DELETE&_synchronous=FULL&_busy_timeout=5000"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		return false, err
	}
	tx, err := db.Begin()
	if err != nil {
		return false, err
	}
	res, err := tx.Exec("INSERT OR IGNORE INTO processed_events (event_id) VALUES (?)", eventID)
	if err != nil {
		tx.Rollback()
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		tx.Rollback()
		return false, err
	}
	if n == 1 {
		if _, err := tx.Exec("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", eventID, jobKey); err != nil {
			tx.Rollback()
			return false, err
		}
	}
	return n == 1, tx.Commit()
}
