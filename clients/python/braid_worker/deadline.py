"""A deadline on a database call that holds even when the network goes silent (sockets open, nothing carried):
past it the connection's socket is shut down, so the call fails at once instead of waiting on a peer that
acknowledges and never answers (no keepalive or server-side timeout notices that)."""

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.rows import TupleRow


def sever(conn: psycopg.Connection[TupleRow]) -> None:
    """Ends the call the connection waits on (it fails with psycopg.OperationalError); the connection is broken after."""
    try:
        fd = conn.pgconn.socket
        s = socket.socket(fileno=socket.dup(fd))
        try:
            s.shutdown(socket.SHUT_RDWR)
        finally:
            s.close()
    except (OSError, psycopg.Error):
        pass  # closed already: the call has ended


@contextmanager
def deadline(conn: psycopg.Connection[TupleRow], seconds: float) -> Iterator[None]:
    """Runs the block; a call in it that is still waiting after `seconds` fails with psycopg.OperationalError."""
    timer = threading.Timer(seconds, sever, [conn])
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
