"""The pytest plugins this checkout's own tools bring (Faker, Hypothesis, Schemathesis,
AnyIO) that a merchant's project does not have. The pytest runs the tests start block them:
importing them costs each run, and each of its xdist workers, seconds before any test."""

from __future__ import annotations

UNRELATED = ("faker", "hypothesispytest", "schemathesis", "anyio")
BLOCKED = tuple(arg for name in UNRELATED for arg in ("-p", f"no:{name}"))
ADDOPTS = " ".join(BLOCKED)  # for PYTEST_ADDOPTS, which xdist workers read too
