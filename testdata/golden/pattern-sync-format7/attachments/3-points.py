"""idemlab's crash points for a Python handler: point("name") asks the
harness, which answers "go" or kills the process right there. Without
IDEMLAB_POINTS_FD, or once the socket is closed, it does nothing."""
import os, socket

_fd = os.environ.get("IDEMLAB_POINTS_FD")
_sock = socket.socket(fileno=int(_fd)) if _fd else None
_reply = _sock.makefile("r") if _sock else None

def point(name):
    global _sock
    try:
        if _sock:
            _sock.sendall(("point %s\n" % name).encode())
            _reply.readline()
    except OSError:
        _sock = None

def apply_settings(db):
    """Applies the SQLite settings the harness names for a power trial
    (IDEMLAB_JOURNAL_MODE, IDEMLAB_SYNCHRONOUS) to connection db; outside
    power trials neither is set and the connection keeps its defaults."""
    journal = os.environ.get("IDEMLAB_JOURNAL_MODE")
    sync = os.environ.get("IDEMLAB_SYNCHRONOUS")
    if journal:
        db.execute("PRAGMA journal_mode=" + journal).fetchall()
    if sync:
        db.execute("PRAGMA synchronous=" + sync)
