"""Documented operations answered straight from the protocol, a turn's requests together.

Every request of uvicorn's protocol runs as an ASGI application in a task of its own:
a task object, the event loop's registry of tasks, then the layers of the ASGI stack
(uvicorn's ``X-Forwarded-*`` middleware, the card form's port switch, payemu's app)
before payemu finds the operation's :class:`~emulator.http.pipeline.Endpoint`. A request
for a documented operation on a fixed path — every payment call — needs none of that:
:meth:`Direct.direct` names its endpoint from the method and path, and the protocol
queues the request for this turn of the event loop (:func:`queue`). After the loop has
read every connection that is ready, :func:`run_queued` answers the queued requests one
after the other, each run at once up to its first wait; most never wait (the body is
in, no scenario delays the answer), and one that does goes on as a task
(:func:`_resumed`), tracked as uvicorn tracks its own so that a stop waits for it and
then cuts it. Reading every ready connection first and answering after keeps each
kind of work together on the processor, as tasks did: answering each request inside its
read callback made the server slower (docs/performance.md).

What does not go this way, and goes through uvicorn's ASGI path unchanged: a path with
parameters, an undocumented path, a request whose ``X-Forwarded-*`` headers uvicorn's
middleware would read, a request to the card form's port, a tenant served another
interface version (the router chooses there).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from starlette.types import Receive, Scope, Send

log = logging.getLogger("payemu")

Whole = Callable[[int, bytes, bytes], Awaitable[None] | None]
"""Sends a whole answer: status, header lines, body (see :data:`emulator.http.protocol.WHOLE`);
what it returns, when not None, is awaited (the answer waits for the client to read)."""


class Direct(Protocol):
    """An application that answers some requests without its ASGI stack."""

    def direct(self, scope: Scope) -> Any | None:
        """What answers the request of ``scope`` directly (passed back to
        :meth:`answer_direct`), or None: the ASGI application answers it."""
        ...

    def answer_direct(
        self, found: Any, scope: Scope, receive: Receive, send: Send, whole: Whole, body: bytes | None
    ) -> Awaitable[None]:
        """Answer the request ``found`` by :meth:`direct`: through ``whole`` where it can,
        else through the ASGI ``send``. ``body``: the whole request body when it is in
        already (else the application receives it)."""
        ...


def of(app: Any) -> Direct | None:
    """``app`` when it answers some requests directly (it has :meth:`Direct.direct`), else None."""
    return app if callable(getattr(app, "direct", None)) else None


_FORWARDED = frozenset({b"x-forwarded-for", b"x-forwarded-proto"})


def forwarded(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request carries a header uvicorn's proxy-headers middleware reads."""
    return not _FORWARDED.isdisjoint(dict(headers))  # (no Python loop over the headers)


async def answer(app: Direct, found: Any, cycle: Any) -> None:
    """Answer the request of uvicorn's ``cycle`` through ``app``'s direct way (``found`` by
    :meth:`Direct.direct`), with what uvicorn's task does around an ASGI call: a failure
    is logged and answered 500, an answer never finished closes the connection. A body
    that is all in is handed over, as uvicorn's ``receive`` would hand it."""
    body: bytes | None = None
    if not cycle.more_body and not cycle.waiting_for_100_continue and not cycle.disconnected:
        body = bytes(cycle.body)
        cycle.body = bytearray()
    try:
        await app.answer_direct(found, cycle.scope, cycle.receive, cycle.send, cycle.whole, body)
    except BaseException as exc:
        cycle.logger.error("Exception in ASGI application\n", exc_info=exc)
        if not cycle.response_started:
            await cycle.send_500_response()
        else:
            cycle.transport.close()
    else:
        if not cycle.response_started and not cycle.disconnected:
            cycle.logger.error("ASGI callable returned without starting response.")
            await cycle.send_500_response()
        elif not cycle.response_complete and not cycle.disconnected:
            cycle.logger.error("ASGI callable returned without completing response.")
            cycle.transport.close()
    finally:
        cycle.on_response = _nothing


def _nothing() -> None:
    """A finished cycle's ``on_response`` (uvicorn's task sets one too: no reference back)."""


Answering = Coroutine[Any, Any, None]
# per event loop, the requests queued this turn: (the coroutine answering it, its tracker)
_queued: dict[asyncio.AbstractEventLoop, list[tuple[Answering, set[asyncio.Task[Any]]]]] = {}


def queue(loop: asyncio.AbstractEventLoop, answering: Answering, tasks: set[asyncio.Task[Any]]) -> None:
    """Answer with ``answering`` once the loop has read what is ready this turn; should it
    wait, the task that carries it on goes into ``tasks`` (uvicorn's, which a stop awaits)."""
    waiting = _queued.get(loop)
    if waiting is None:
        waiting = _queued[loop] = []
        loop.call_soon(run_queued, loop)
    waiting.append((answering, tasks))


def run_queued(loop: asyncio.AbstractEventLoop) -> None:
    """Answer the requests queued on ``loop``, each up to its first wait."""
    for answering, tasks in _queued.pop(loop, ()):
        context = contextvars.copy_context()
        try:
            waiting = context.run(answering.send, None)
        except StopIteration:
            continue
        except BaseException:  # answering catches its own; this is a last resort
            log.exception("payemu bug: a request's answer failed")
            continue
        task = loop.create_task(_resumed(answering, waiting), context=context)
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def _resumed(answering: Answering, waiting: Any) -> None:
    """The rest of ``answering``, which was run up to a wait on ``waiting``."""
    await _Rest(answering, waiting)


class _Rest:
    """Awaits what a started coroutine waits on, then carries it on (a cancel reaches it
    where it waits, as it would in a task of its own)."""

    __slots__ = ("answering", "waiting")

    def __init__(self, answering: Answering, waiting: Any) -> None:
        self.answering = answering
        self.waiting = waiting

    def __await__(self) -> Any:
        answering, waiting = self.answering, self.waiting
        while True:
            try:
                yield waiting
            except BaseException as exc:
                try:
                    waiting = answering.throw(exc)
                except StopIteration:
                    return
                continue
            try:
                waiting = answering.send(None)
            except StopIteration:
                return
