"""``--watch``: reload the scenario files when they change, keeping all state.

A daemon thread asks the scenario book once a second whether a file changed (a stat per
file, nothing per request) and reloads it when one did. Files that no longer check out
are reported once in the log and the previous rules stay in force until they are fixed.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Protocol

from emulator.scenarios import ScenarioError

if TYPE_CHECKING:
    from emulator.scenarios.rulebook import ScenarioBook

log = logging.getLogger("payemu")
INTERVAL_SECONDS = 1.0


class BookHolder(Protocol):
    """What holds the scenario book in force (the runtime)."""

    @property
    def scenarios(self) -> ScenarioBook: ...


class Watcher:
    """Polls in a daemon thread until :meth:`stop`."""

    def __init__(self, runtime: BookHolder, interval: float | None = None) -> None:
        self.runtime = runtime
        self.interval = interval if interval is not None else INTERVAL_SECONDS
        self.reloads = 0
        self.problems: list[str] = []  # of the last failed reload, until a good one
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="payemu-scenario-watcher", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def check(self) -> bool:
        """Reload if a file changed since the last good load; True when it did."""
        try:
            reloaded = self.runtime.scenarios.reload_if_changed()
        except ScenarioError as exc:
            if exc.problems != self.problems:
                self.problems = exc.problems
                log.error(
                    "scenario files changed but do not check out; the previous rules stay:\n%s",
                    "\n".join(exc.problems),
                )
            return False
        self.problems = []
        if reloaded:
            self.reloads += 1
            log.info("scenario files reloaded")
        return reloaded

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:  # the watcher must never die silently
                log.exception("payemu bug in the scenario watcher")


def start(runtime: BookHolder, interval: float | None = None) -> Watcher:
    return Watcher(runtime, interval).start()
