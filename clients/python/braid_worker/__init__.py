"""braid's worker for Python: runs the tasks of a braid workflow engine's kinds on Python handlers.

It speaks braid's worker protocol (docs/protocol.md), revision 1, over psycopg 3 and nothing else.
"""

from .errors import NonRetryableError, ProtocolMismatch, Snooze
from .worker import PROTOCOL_REVISION, Context, Worker

__all__ = ["Worker", "Context", "NonRetryableError", "Snooze", "ProtocolMismatch", "PROTOCOL_REVISION"]
