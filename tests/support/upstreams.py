"""Upstreams for the proxy, replay and verify tests: a second payemu on a loopback port,
a small mutating HTTP proxy in front of it, and an upstream that never answers in time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.domain.config import Settings
from tests.support.servers import ThreadServer, in_thread

METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]
DROPPED_FIELD = "gatewayName"  # the field the mutating proxy drops from every OperationResult
HOP = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}


@contextmanager
def payemu_upstream(**overrides: Any) -> Iterator[ThreadServer]:
    """A second payemu on 127.0.0.1; fails the test if any of its answers broke the schema."""
    with in_thread(Settings(**overrides)) as server:
        yield server


def mutate(method: str, path: str, status: int, payload: bytes) -> tuple[int, bytes]:
    """The three changes: a 400's array becomes an object, a charge's 200 a 202, and
    ``gatewayName`` leaves every OperationResult."""
    try:
        value = json.loads(payload)
    except ValueError:
        return status, payload
    if status == 400 and isinstance(value, list):
        value = {"errors": value}
    if method == "POST" and path == "/PaymentGateway/charge" and status == 200:
        status = 202
    if isinstance(value, dict) and "operationResultCode" in value:
        value.pop(DROPPED_FIELD, None)
    return status, json.dumps(value).encode()


def mutating_app(upstream: str) -> Starlette:
    async def forward(request: Request) -> Response:
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP]
        async with httpx.AsyncClient(trust_env=False) as client:
            answer = await client.request(
                request.method,
                upstream + request.url.path,
                params=request.query_params,
                headers=headers,
                content=await request.body(),
            )
        status, payload = mutate(request.method, request.url.path, answer.status_code, answer.content)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in ("location", "retry-after", "content-type")}
        return Response(payload, status_code=status, headers=kept)

    return Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)])


@contextmanager
def mutating_upstream(upstream: str) -> Iterator[ThreadServer]:
    with in_thread(app=mutating_app(upstream)) as server:
        yield server


def slow_app(seconds: float) -> Starlette:
    async def wait(request: Request) -> Response:
        await asyncio.sleep(seconds)
        return Response(b"[]", media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", wait, methods=METHODS)])
