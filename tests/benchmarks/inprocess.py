"""CPU time per request without the network: for comparing two versions of the hot path.

    python -m tests.benchmarks.inprocess [--through app|protocol] [--requests 3000] [--paths ...]
                                         [--profile] [--split] [--untimed]

``--through app`` (the default) drives payemu's ASGI app directly with a prepared scope
and body. ``--through protocol`` feeds the raw HTTP request to payemu's uvicorn protocol
(`emulator.edge.protocol`) over a fake transport, so the protocol's own work (parsing,
the request cycle, the response head) counts too. Each path runs three times after a
warm-up and the best is printed: on a VM whose speed drifts, the least disturbed run is
the closest to the cost. ``--profile`` prints cProfile's top functions for the charge.
The collector is tuned as the server tunes it (:func:`emulator.edge.server.tune_collector`).
``--untimed`` runs each path's ``--requests`` once after the warm-up and prints nothing:
for an instruction counter (docs/performance.md, "Counting instructions").

``--split`` shows where a request's time goes between the application and the protocol,
and what running between other work costs the application: per path, the median time
inside payemu's ASGI app when it is called back to back (``--through app``), the same
when each call comes through the protocol, and the rest of the request (the protocol's
parsing, task and write). The application costs more inside the protocol, with no work
added: the protocol's code and data, run in between, push the application's out of the
processor's caches, as the kernel's network path does in the real server.

The figures are for comparisons (``git stash``, run, unstash, run; pin with
``taskset -c 0``). A request costs more in the real server, where the kernel's network
path runs between requests on the same core: ``python -m tests.benchmarks.run`` measures
that.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from uvicorn.server import ServerState

from emulator.app.build import create_app
from emulator.domain.config import load_config_file
from emulator.edge.server import best_loop, config_for, tune_collector
from tests.benchmarks.run import BENCH_CONFIG, KEY, PATHS
from tests.support.transport import FakeTransport

Runner = Callable[[], Awaitable[bytes]]


def _request(name: str) -> tuple[str, str, bytes]:
    method, path, body = PATHS[name]
    return method, path, json.dumps(body).encode() if body is not None else b""


def through_app(app: Any, name: str) -> Runner:
    method, path, raw = _request(name)
    headers = [
        (b"host", b"127.0.0.1"),
        (b"x-api-key", KEY.encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw)).encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }

    async def one() -> bytes:
        sent: list[Any] = []
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            sent.append(message)

        await app({**scope, "state": {}}, receive, send)
        return b"HTTP/1.1 %d " % sent[0]["status"]

    return one


def through_protocol(app: Any, settings: Any, name: str) -> Runner:
    method, path, raw = _request(name)
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n"
    ).encode() + raw
    config = config_for(app, settings)
    config.load()
    connection = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = FakeTransport()
    connection.connection_made(transport)

    async def one() -> bytes:
        transport.written.clear()
        connection.data_received(request)
        while not (transport.written and connection.cycle.response_complete):
            await asyncio.sleep(0)
        return b"".join(transport.written)

    return one


async def _warm(run: Runner) -> None:
    """A warm-up; and a request that is not answered 200 or 201 is not the path to time."""
    for _ in range(300):
        answer = await run()
    if not answer.startswith((b"HTTP/1.1 200 ", b"HTTP/1.1 201 ")):
        raise SystemExit(f"the request was not answered 200 or 201: {answer[:200]!r}")


async def _measure(run: Runner, count: int) -> float:
    await _warm(run)
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(count):
            await run()
        best = min(best, (time.process_time() - began) / count)
    return best * 1e6


class Timed:
    """``app``, noting in ``times`` the nanoseconds each ASGI call spent inside it."""

    def __init__(self, app: Any, times: list[int]) -> None:
        self.app = app
        self.times = times
        self.state = app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        began = time.perf_counter_ns()
        await self.app(scope, receive, send)
        self.times.append(time.perf_counter_ns() - began)


def timed(app: Any, times: list[int]) -> Any:
    """``app`` timed (see :class:`Timed`)."""
    return Timed(app, times)


async def split(app: Any, settings: Any, name: str, count: int) -> tuple[float, float, float]:
    """``(app alone, app inside the protocol, the protocol's rest)`` in µs for path ``name``:
    medians of ``count`` requests after a warm-up (see the module doc)."""
    times: list[int] = []
    wrapped = timed(app, times)
    medians = []
    for run in (through_app(wrapped, name), through_protocol(wrapped, settings, name)):
        await _warm(run)
        times.clear()
        began = time.process_time()
        for _ in range(count):
            await run()
        whole = (time.process_time() - began) / count * 1e6
        medians.append(statistics.median(times) / 1000)
    return medians[0], medians[1], whole - medians[1]


async def _main(
    through: str,
    count: int,
    profile: bool,
    splitting: bool = False,
    paths: list[str] | None = None,
    untimed: bool = False,
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "bench.yaml"
        config.write_text(BENCH_CONFIG)
        settings = load_config_file(config)
    app = create_app(settings)
    tune_collector()
    names = paths or list(PATHS)
    if splitting:
        print(f"where a request's time goes, µs (medians of {count}):")
        print(f"{'path':<14}{'app alone':>10}{'app in protocol':>17}{'protocol rest':>15}")
        for name in names:
            alone, inside, rest = await split(app, settings, name, count)
            print(f"{name:<14}{alone:10.1f}{inside:17.1f}{rest:15.1f}")
        return
    runners = {
        name: through_app(app, name) if through == "app" else through_protocol(app, settings, name) for name in names
    }
    if untimed:
        for run in runners.values():
            await _warm(run)
            for _ in range(count):
                await run()
        return
    if profile:
        await _measure(runners[names[0]], 300)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(count):
            await runners[names[0]]()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        return
    print(f"through the {through}, CPU time per request (best of 3 x {count}):")
    for name, run in runners.items():
        print(f"{name:<14}{await _measure(run, count):8.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--through", choices=["app", "protocol"], default="app")
    parser.add_argument("--requests", type=int, default=3000, help="per timed run")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS), help="the paths to run (default: all)")
    parser.add_argument("--profile", action="store_true", help="cProfile the first path (default: the charge)")
    parser.add_argument("--split", action="store_true", help="the app's time alone, inside the protocol, and the rest")
    parser.add_argument("--untimed", action="store_true", help="run the requests once, print nothing (for cachegrind)")
    args = parser.parse_args()
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if best_loop() == "uvloop":  # as the server runs
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_main(args.through, args.requests, args.profile, args.split, args.paths, args.untimed))


if __name__ == "__main__":
    main()
