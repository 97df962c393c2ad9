"""``Deferred``: a group of routes built on the first request for one of its paths; and
``OnFirstCall``: a callable (an ASGI app, an operation's handler) made by its first call.

The control API, the pages and the eWallet library's endpoints are under one prefix, and
most runs never call them (building them was a tenth of ``payemu serve``'s start-up). A
Deferred route stands in their place: a request under one of its prefixes builds them, and
Starlette's scan and payemu's index of fixed paths (:class:`~emulator.endpoints.routing.FastRouter`)
then see them as if built at start (the same 404, 405, redirects and ``scope["route"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send


class Deferred(BaseRoute):
    """Routes made by ``build`` on the first request whose path (less its root path)
    starts with one of ``prefixes``; until then they match nothing else."""

    def __init__(self, prefixes: Sequence[str], build: Callable[[], list[BaseRoute]]) -> None:
        self.prefixes = tuple(prefixes)
        self._build: Callable[[], list[BaseRoute]] | None = build
        self._routes: list[BaseRoute] = []
        self._listeners: list[Callable[[], None]] = []

    @property
    def routes(self) -> list[BaseRoute]:
        """The group's routes, built now if they were not yet."""
        if self._build is not None:
            self._routes = self._build()  # a build that fails is tried again by the next request
            self._build = None
            for listener in self._listeners:
                listener()
        return self._routes

    @property
    def built(self) -> bool:
        """Whether :attr:`routes` are made (reading them then builds nothing)."""
        return self._build is None

    def when_built(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once the routes are built (a router indexing their paths)."""
        self._listeners.append(listener)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """The first full match among the group's routes, else the first partial; the
        matched route goes in the child scope's ``route``, where Starlette's router puts
        it after this one."""
        if scope["type"] not in ("http", "websocket") or not self._ours(scope):
            return Match.NONE, {}
        partial: tuple[Match, Scope] | None = None
        for route in self.routes:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                return match, {**child_scope, "route": route}
            if match is Match.PARTIAL and partial is None:
                partial = match, {**child_scope, "route": route}
        return partial or (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope["route"].handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        for route in self.routes:
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                pass
        raise NoMatchFound(name, path_params)

    def _ours(self, scope: Scope) -> bool:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path.startswith(self.prefixes)


class OnFirstCall:
    """The callable ``load`` returns, made by the first call and called from then on: a site
    or file tree most runs never ask for, or an operation's handler (its module imported
    then, so a run that never pays never imports the payment engine). An endpoint
    (:class:`emulator.endpoints.pipeline.Endpoint`) calls a loaded handler itself."""

    def __init__(self, load: Callable[[], Callable[..., Any]]) -> None:
        self._load = load
        self._loaded: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        return self.load()(*args)

    def load(self) -> Callable[..., Any]:
        """What ``load`` returns, made now if it was not yet (a load that fails is tried again)."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded
