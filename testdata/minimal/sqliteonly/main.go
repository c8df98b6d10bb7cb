// Command sqliteonly links the SQLite driver and exits. Its start-up is what
// any idemlab worker has to pay at least: the Go runtime, the cgo loader and
// the driver's package init.
package main

import (
	"database/sql"
	"os"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	// Referencing sql keeps the driver's registration from looking unused;
	// exit 2 matches "idemlab worker nope", which fails with a usage error.
	_ = sql.Drivers
	os.Exit(2)
}
