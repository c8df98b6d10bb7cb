package pattern

// The handler-program protocol: what a user's own program gets from the
// harness for each delivery. A program announces a crash point by writing
// "point NAME\n" on IDEMLAB_POINTS_FD and reading one line back: the
// harness answers "go\n", or kills the program while it waits. Exit 0 is
// the ACK; any other exit, or a signal, is not.
const (
	EnvEventID     = "IDEMLAB_EVENT_ID"
	EnvDelivery    = "IDEMLAB_DELIVERY"
	EnvWorker      = "IDEMLAB_WORKER"
	EnvNowOffsetMS = "IDEMLAB_NOW_OFFSET_MS"
	EnvDB          = "IDEMLAB_DB"
	EnvReceiver    = "IDEMLAB_RECEIVER"
	EnvPointsFD    = "IDEMLAB_POINTS_FD"
	// EnvBackend and EnvDSN are set on PostgreSQL only: the backend's
	// name and the connection string, whose search_path is the trial's
	// schema; EnvDB is then unset. A program that finds no EnvBackend
	// runs on SQLite.
	EnvBackend = "IDEMLAB_BACKEND"
	EnvDSN     = "IDEMLAB_DSN"
)

// PointReady, when it is a program's first point, makes concurrent
// deliveries wait for each other there and start together.
const PointReady = "ready"
