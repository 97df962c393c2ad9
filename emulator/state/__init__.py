"""``payemu serve --state FILE``: every tenant's state in an SQLite file, written as it changes.

The format (:mod:`~emulator.state.schema`) is typed JSON documents in SQLite rows; the
file's whole schema and every document are checked before the server starts
(:mod:`~emulator.state.schema_check`, :mod:`~emulator.state.decode`), and a file that fails is
refused with one line. Nothing read from it can run code. :class:`Persistence` saves
what changed (:mod:`~emulator.state.saver`) through one writer thread, so an acknowledged
write is on disk within a second. Nothing in the engine, the stores or the tenants imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.state.errors import StateError

if TYPE_CHECKING:  # the modules doing the work are imported only with --state
    from emulator.state.database import Unsaved, Writer
    from emulator.state.gate import Durable
    from emulator.state.saver import Saver
    from emulator.tenants.runtime import Runtime
    from emulator.tenants.tenants import Tenant

__all__ = ["Persistence", "StateError", "exit_status", "open_state", "wait_for_final_write"]
log = logging.getLogger("payemu")
FINAL_WRITE_WAIT = 60.0  # seconds the exit-anyway timer waits for the last save
_active: set[Persistence] = set()
_active_lock = threading.Lock()


def open_state(runtime: Runtime, state_path: str) -> Persistence:
    """With ``--state``: check ``state_path`` can be written, remove temporary files an earlier
    run left, read the file into ``runtime.tenants`` (all or nothing; :class:`StateError`
    otherwise) and return what will keep it saved."""
    from emulator.state import database

    path = Path(state_path)
    database.check_writable(path)
    for orphan in database.remove_orphans(path):
        log.info("removed %s, a temporary file left by an earlier run", orphan)
    loaded, dropped = database.load(path, runtime.settings)
    for owner in loaded:
        runtime.tenants.adopt(owner)
    return Persistence(path, runtime, loaded, dropped)


class Persistence:
    """Keeps one state file up to date while the server runs."""

    def __init__(self, path: Path, runtime: Runtime, loaded: list[Tenant], dropped: bool = False) -> None:
        from emulator.state.database import Writer
        from emulator.state.gate import Durable
        from emulator.state.saver import Saver

        self.path = path
        self.runtime = runtime
        self.loaded = loaded
        self.dropped = dropped  # the loader left out rows of the file (over the bounds): they go at start
        self.writer: Writer = Writer(path)
        self.saver: Saver = Saver(runtime.tenants, self.writer)
        self.durable: Durable = Durable()  # what the answers wait for (emulator.state.gate)
        self.failed = False
        self.done = threading.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        """Note what the file holds, then save every
        :data:`~emulator.state.saver.INTERVAL` until :meth:`stop`."""
        with _active_lock:
            _active.add(self)
        await self.saver.seed(self.loaded)
        if self.dropped:
            try:
                await asyncio.wrap_future(self.writer.submit(self.saver.leftovers(self.loaded)))
            except Exception as exc:
                log.error("could not drop from %s what loading left out: %s", self.path, exc)
                self.failed = True
        self.loaded = []
        await self._save()  # the tenants the config file made and the file did not hold
        self._task = asyncio.create_task(self._keep_saving(), name="payemu-state")

    async def _keep_saving(self) -> None:
        from emulator.state.saver import INTERVAL

        while True:
            if not self.durable.behind():  # answers wait for the file: the next save starts now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), INTERVAL)
            last = self._stopping.is_set()  # seen before the save starts: it includes everything
            await self._save()
            if last:
                return

    async def _save(self) -> None:
        from emulator.state.database import Unsaved

        started = time.monotonic()  # every change acknowledged before this is in the save
        try:
            await self.saver.save()
        except Unsaved as exc:
            self._stop_acknowledging(exc)
            self.failed = True
            self.durable.failed()
        except Exception as exc:  # logged; the process then exits non-zero (exit_status)
            if not self.failed:
                log.error("could not save the state to %s: %s", self.path, exc)
            self.failed = True
            self.durable.failed()
        else:
            self.durable.saved(started)

    def _stop_acknowledging(self, exc: Unsaved) -> None:
        """A save that did not land: its tenant (every tenant, when the file's schema
        changed) answers 503 from now on, said once in the log."""
        owners = [owner for owner in self.runtime.tenants if exc.key in (None, owner.key)]
        fresh = [owner for owner in owners if owner.unsaved is None]
        for owner in fresh:
            owner.unsaved = str(exc)
        if fresh:
            which = "every API key" if exc.key is None else f"the API key of shard {fresh[0].shard}"
            log.error("a save to %s did not land: %s; %s now gets 503 until restarted", self.path, exc, which)

    async def stop(self) -> None:
        """The last save, then the file is closed (its write-ahead log folded in)."""
        try:
            self.writer.nap = 0.0  # no more requests to make way for: the last saves at full speed
            self._stopping.set()  # not cancelled: a save under way finishes, then one more runs
            if self._task is not None:
                await self._task
            else:
                await self._save()
            try:
                await asyncio.wrap_future(self.writer.close())
            except Exception as exc:
                log.error("could not close the state file %s: %s", self.path, exc)
                self.failed = True
            tenants = len(self.runtime.tenants)
            if self.failed:
                log.error("the state in %s is not complete: a save failed (see above)", self.path)
            else:
                log.info("state of %d tenant(s) saved to %s", tenants, self.path)
            log.debug("longest hold of the event loop by a save: %.1f ms", self.saver.longest_step * 1000)
        finally:
            self.durable.stop()
            self.done.set()
            with _active_lock:
                _active.discard(self)


def exit_status(app: Any) -> int:
    """The process's exit status once ``app`` stopped: 1 when a save of its state failed."""
    persistence = getattr(app.state, "persistence", None)
    return 1 if persistence is not None and persistence.failed else 0


def wait_for_final_write(timeout: float = FINAL_WRITE_WAIT) -> int:
    """Called by the exit-anyway timer: wait for a last save still running, then the exit
    status (1 when one failed or did not finish in ``timeout`` seconds)."""
    with _active_lock:
        running = list(_active)
    status = 0
    for persistence in running:
        if not persistence.done.wait(timeout):
            log.error("the last save of %s did not finish in %g s", persistence.path, timeout)
            status = 1
        elif persistence.failed:
            status = 1
    return status
