"""What a handler raises to say how its attempt ends, and what the worker refuses to run against."""


class NonRetryableError(Exception):
    """No retry can mend this failure: the task ends now, whatever attempts are left."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class Snooze(Exception):
    """Run this task again after `seconds`, without using up the attempt."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"snooze for {seconds} s")
        if not seconds >= 0:
            raise ValueError("a snooze needs seconds >= 0")
        self.seconds = seconds


class ProtocolMismatch(Exception):
    """The database speaks another revision of braid's worker protocol than this worker."""
