package store

// Class is what kind of failure a statement met, in terms both backends
// share, so a worker decides what to retry without knowing the backend.
type Class int

// The classes of failure a worker tells apart.
const (
	// ClassOther is any failure the worker does not retry.
	ClassOther Class = iota
	// ClassBusy is SQLite's SQLITE_BUSY or SQLITE_LOCKED: the lock was not
	// had within the busy timeout.
	ClassBusy
	// ClassSerialization is PostgreSQL's 40001: a concurrent transaction
	// changed what this one's snapshot saw, and the transaction must be
	// run again.
	ClassSerialization
	// ClassDeadlock is PostgreSQL's 40P01: this transaction was chosen to
	// break a deadlock.
	ClassDeadlock
	// ClassUnique is a broken unique constraint: PostgreSQL's 23505,
	// SQLite's SQLITE_CONSTRAINT.
	ClassUnique
	// ClassUndefinedColumn is a statement naming a column the table does
	// not have: PostgreSQL's 42703, SQLite's "no such column".
	ClassUndefinedColumn
)

var classNames = map[Class]string{
	ClassOther: "other", ClassBusy: "busy", ClassSerialization: "serialization",
	ClassDeadlock: "deadlock", ClassUnique: "unique", ClassUndefinedColumn: "undefined-column",
}

func (c Class) String() string { return classNames[c] }

// Retryable says whether a statement that failed so should be run again:
// the failure says nothing about the data, only about a concurrent
// transaction.
func (c Class) Retryable() bool {
	return c == ClassBusy || c == ClassSerialization || c == ClassDeadlock
}
