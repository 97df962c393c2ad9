"""Where the event loop stops under load: each stall of the server's event loop, and what
ran during it (a garbage collection, a ``--state`` save's step, the state writer thread).

    python -m tests.benchmarks.stalls [--state] [--percent 0] [--rounds 4] [--duration 3] [--connections 16]

payemu runs pinned to core 0 with a watcher inside it: a timer due every millisecond on
the event loop (its lateness is the stall), ``gc.callbacks`` (every collection's length
and generation), and wrappers that note when a save's steps ran on the loop and when the
writer thread wrote. ``wrk`` charges under 4 keys from core 1 (as ``scale`` does, after
filling the stores to ``--percent`` of the default limits), one warm-up run, then
``--rounds`` runs. Printed: each run's rate and p99 with the stalls over 3 ms that fell in
it, by what overlapped them; then the collections and saves over the whole load. The
watcher costs a little (a thousand timer calls a second): compare its figures with each
other, and take rates from ``scale``. Needs ``wrk``; not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import json
import runpy
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.benchmarks.run import free_port, start, stop
from tests.benchmarks.scale import MEASURED_PREFIX, charges, fill

STALL_MS = 3.0  # a stall counted in the table
KEEP = 200_000  # records of each kind the watcher keeps at most
Span = tuple[float, float]  # monotonic seconds: start, end


class Watch:
    """What the watcher notes inside the server (spans on ``time.monotonic``)."""

    def __init__(self) -> None:
        self.stalls: list[Span] = []
        self.collections: list[tuple[float, float, int]] = []  # start, end, generation
        self.steps: list[Span] = []  # a save's turns on the event loop
        self.writes: list[Span] = []  # the writer thread's transactions
        self.saves: list[tuple[float, float, int]] = []  # start, end, rows
        self._collecting = 0.0

    @staticmethod
    def note(into: list[Any], item: Any) -> None:
        if len(into) < KEEP:
            into.append(item)

    def on_collection(self, phase: str, info: dict[str, int]) -> None:
        now = time.monotonic()
        if phase == "start":
            self._collecting = now
        elif threading.current_thread() is threading.main_thread() and now - self._collecting > 0.0005:
            self.note(self.collections, (self._collecting, now, info["generation"]))

    def tick(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        now = time.monotonic()
        if now - due > 0.001:
            self.note(self.stalls, (due, now))
        loop.call_at(loop.time() + 0.001, self.tick, loop, now + 0.001)

    def report(self, path: Path) -> None:
        fields = ("stalls", "collections", "steps", "writes", "saves")
        path.write_text(json.dumps({name: getattr(self, name) for name in fields}))


def serve_watched(report: Path, argv: list[str]) -> None:
    """Run ``payemu argv`` with the watcher; its notes go to ``report`` at exit."""
    import uvicorn.server

    from emulator.state import database, saver

    watch = Watch()
    gc.callbacks.append(watch.on_collection)
    atexit.register(watch.report, report)
    apply = database.Writer.apply

    def timed_apply(self: database.Writer, statements: list[database.Statement]) -> None:
        began = time.monotonic()
        apply(self, statements)
        watch.note(watch.writes, (began, time.monotonic()))

    database.Writer.apply = timed_apply  # type: ignore[method-assign]
    step_done = saver.Saver._step_done

    def step(self: saver.Saver) -> None:
        step_done(self)
        now = time.monotonic()  # the step began when Saver._started (perf_counter) says
        watch.note(watch.steps, (now - (time.perf_counter() - self._started), now))

    saver.Saver._step_done = step  # type: ignore[method-assign]
    save = saver.Saver.save

    async def timed_save(self: saver.Saver) -> int:
        began = time.monotonic()
        rows = await save(self)
        watch.note(watch.saves, (began, time.monotonic(), rows))
        return rows

    saver.Saver.save = timed_save  # type: ignore[method-assign]
    startup = uvicorn.server.Server.startup

    async def watched_startup(self: uvicorn.server.Server, sockets: Any = None) -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(watch.tick, loop, time.monotonic())
        await startup(self, sockets)

    uvicorn.server.Server.startup = watched_startup  # type: ignore[method-assign]
    sys.argv = ["payemu", *argv]
    runpy.run_module("emulator", run_name="__main__")


def overlapping(span: Span, spans: list[Any]) -> bool:
    return any(start < span[1] and end > span[0] for start, end, *_ in spans)


def cause(stall: Span, notes: dict[str, list[Any]]) -> str:
    """What ran during ``stall``: a collection first, then a save's step, then the writer."""
    for name, label in (("collections", "collection"), ("steps", "save step"), ("writes", "writer")):
        if overlapping(stall, notes[name]):
            return label
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", action="store_true", help="serve with --state (a scratch file)")
    parser.add_argument("--percent", type=int, default=0, help="fill the stores to this share of the limits first")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="payemu-stalls-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ["serve", "--any-key", "--log-level", "warning", "--port", str(port)]
    if args.state:
        serve += ["--state", str(scratch / "state.db")]
    report = scratch / "report.json"
    proc, _ = start(
        [sys.executable, "-m", "tests.benchmarks.stalls", "--serve", str(report), *serve], base, "/Utils/apiKey"
    )
    windows: list[Span] = []
    try:
        fill(base, args.percent)
        charges(base, args.duration, args.connections)  # warm-up
        loads = []
        for _ in range(args.rounds):
            began = time.monotonic()
            loads.append(charges(base, args.duration, args.connections))
            windows.append((began, time.monotonic()))
    finally:
        stop(proc)
    notes: dict[str, list[Any]] = json.loads(report.read_text())
    shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"payemu {'--state' if args.state else 'in memory'}, stores at {args.percent} %; wrk -c{args.connections} "
        f"under 4 keys ({MEASURED_PREFIX}0-3), {args.duration} s runs"
    )
    print(f"{'run':>4}{'req/s':>8}{'p99 ms':>8}  stalls over {STALL_MS:g} ms (longest, ms): by what ran meanwhile")
    for number, (window, load) in enumerate(zip(windows, loads, strict=True), 1):
        stalls = [s for s in notes["stalls"] if window[0] <= s[0] < window[1] and (s[1] - s[0]) * 1000 > STALL_MS]
        longest = max(((end - start) * 1000 for start, end in stalls), default=0.0)
        causes = Counter(cause(stall, notes) for stall in stalls)
        shown = ", ".join(f"{label} {count}" for label, count in causes.most_common()) or "none"
        print(f"{number:>4}{load.rps:>8.0f}{load.p99_ms:>8.2f}  {len(stalls)} ({longest:.1f}): {shown}")
    for generation in (0, 1, 2):
        lengths = [(end - start) * 1000 for start, end, gen in notes["collections"] if gen == generation]
        if lengths:
            print(f"generation {generation} collections over 0.5 ms: {len(lengths)}, longest {max(lengths):.1f} ms")
    if notes["saves"]:
        lengths = [end - start for start, end, _ in notes["saves"]]
        print(f"saves: {len(lengths)}, {sum(lengths) / len(lengths):.2f} s on average, longest {max(lengths):.2f} s")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve_watched(Path(sys.argv[2]), sys.argv[3:])
    else:
        sys.exit(main())
