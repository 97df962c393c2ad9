"""What the ``payemu`` pytest fixture costs a test.

    python -m tests.benchmarks.fixture [--tests 300] [--rounds 3]

Runs a generated file of ``--tests`` tests twice in a fresh pytest each: once where every
test takes the ``payemu`` fixture and makes no request, once where no test takes it. Each
test's setup, call and teardown are timed; the first test of a run (which starts the
session's server) is left out. Prints the median per-test time of both and the difference:
the fixture's per-test overhead. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TIMER = """\
import time
import pytest

TIMES = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    began = time.perf_counter()
    yield
    TIMES.append(time.perf_counter() - began)


def pytest_sessionfinish(session):
    with open("times.txt", "w") as out:
        out.write("\\n".join(repr(t) for t in TIMES[1:]))
"""


def suite(tests: int, with_fixture: bool) -> str:
    argument = "payemu" if with_fixture else ""
    return "".join(f"def test_{n}({argument}):\n    assert True\n\n" for n in range(tests))


def median_ms(directory: Path, tests: int, with_fixture: bool) -> float:
    (directory / "test_generated.py").write_text(suite(tests, with_fixture))
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "timer", "test_generated.py"],
        cwd=directory,
        env={"PYTHONPATH": str(directory), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    times = [float(line) for line in (directory / "times.txt").read_text().split()]
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=300, help="tests per run (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each kind; the best is kept (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        (directory / "timer.py").write_text(TIMER)
        bare = min(median_ms(directory, args.tests, False) for _ in range(args.rounds))
        taken = min(median_ms(directory, args.tests, True) for _ in range(args.rounds))
    print(f"tests per run          {args.tests} (best of {args.rounds} runs each)")
    print(f"test without fixture   {bare:.3f} ms (median)")
    print(f"test with payemu       {taken:.3f} ms (median)")
    print(f"fixture overhead       {taken - bare:.3f} ms per test")


if __name__ == "__main__":
    main()
