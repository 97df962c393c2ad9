"""``until``: wait for something a server does on its own time, polling, with a deadline
instead of a sleep that a loaded machine can outrun."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], bool], seconds: float = 15.0, what: str = "the server did not get there") -> None:
    """Return once ``condition()`` holds; fail the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} in {seconds:g} s"
        time.sleep(0.02)
