"""The routes of a document's operations, and payemu's one router.

:func:`build_routes` makes one route per documented path (its endpoints by method).
:class:`FastRouter` is Starlette's router with an index of its paths without parameters:
Starlette tries each route's regular expression in turn, and with some thirty routes that
scan was a third of a simple request's cost. A fixed path is found by one lookup (then
matched by its route as Starlette would); everything else (path parameters, 404, 405
through partial matches, slash redirects) goes to Starlette's own scan. The routes of a
group built on first request (:mod:`emulator.endpoints.deferred`) join the index once built,
in the group's place; until then every path under its prefixes goes to the scan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router, compile_path
from starlette.types import Lifespan, Receive, Scope, Send

from emulator.contract.openapi import OpenApi
from emulator.endpoints.deferred import Deferred
from emulator.endpoints.pipeline import Endpoint, Handler, TenantOf

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime


class FastRouter(Router):
    """Starlette's router, a fixed path found by one lookup (see the module doc)."""

    def __init__(self, routes: Sequence[BaseRoute], lifespan: Lifespan[Any] | None = None) -> None:
        super().__init__(list(routes), lifespan=lifespan)
        self._static: dict[str, Route] = {}
        self._index()
        for route in self.routes:
            if isinstance(route, Deferred):
                route.when_built(self._index)

    def _index(self) -> None:
        """The fixed paths in the scan's order: a group's routes (:class:`Deferred`) in its
        place once built, so the index finds what the scan would."""
        static: dict[str, Route] = {}
        unbuilt: tuple[str, ...] = ()  # prefixes of groups not built: their paths go to the scan
        for route in self.routes:
            if isinstance(route, Deferred) and not route.built:
                unbuilt += route.prefixes
                continue
            for each in route.routes if isinstance(route, Deferred) else (route,):
                if isinstance(each, Route) and "{" not in each.path and not each.path.startswith(unbuilt):
                    static.setdefault(each.path, each)
        self._static = static

    def app(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        """The coroutine that answers: the found route's, else Starlette's scan (none of its own)."""
        if scope["type"] == "http":
            route = self._static.get(scope["path"])
            if route is not None:
                if type(route) is OperationRoute and not scope.get("root_path"):
                    # a documented path: the route's methods are its endpoints' (405 by the scan)
                    operations = route.operations
                    if scope["method"] in operations.methods:
                        scope.setdefault("router", self)
                        scope["route"] = route
                        scope["endpoint"] = operations
                        scope["path_params"] = {}
                        return operations(scope, receive, send)
                else:
                    match, child_scope = route.matches(scope)
                    if match is Match.FULL:
                        scope.setdefault("router", self)
                        scope["route"] = route
                        scope.update(child_scope)
                        return route.handle(scope, receive, send)
        return super().app(scope, receive, send)


Responder = Callable[[Request], Awaitable[Response]]
Chooser = Callable[[Endpoint, Scope], "Endpoint | Responder"]


def build_routes(
    runtime: Runtime,
    api: OpenApi,
    handlers: dict[str, Handler],
    fallback: Handler,
    journal: bool = True,
    chooser: Chooser | None = None,
    tenant_of: TenantOf | None = None,
) -> list[Route]:
    """One Starlette route per path, dispatching on the method, so a wrong method gets
    a 405 listing exactly the methods of that path. ``journal=False``: requests are not
    recorded in the tenant's journal (the control API). ``chooser`` may answer a request
    with another endpoint (a tenant served another version: emulator.endpoints.versions);
    it is asked only while ``runtime.interfaces`` holds a tenant."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for op in api.operations.values():
        handler = handlers.get(op.operation_id, fallback)
        by_path.setdefault(op.path, {})[op.method] = Endpoint(runtime, op, handler, journal, tenant_of)
    return [_route(path, methods, chooser) for path, methods in by_path.items()]


class OperationRoute(Route):
    """The route of one documented path: its endpoints by method, and the chooser that
    may hand a request to another version's endpoint. Its endpoint is an ASGI app
    (:class:`Operations`), so Starlette calls it without a Response in between.

    It holds what ``Route.__init__`` sets for an ASGI endpoint, but its path's regular
    expression is compiled when first read: :class:`FastRouter` finds a fixed path
    without it, and compiling the two dozen at start was 2 ms of ``payemu serve``'s
    start-up. Starlette's scan, ``url_path_for`` and the rest read the same attributes."""

    def __init__(self, path: str, endpoints: dict[str, Endpoint], chooser: Chooser | None = None) -> None:
        assert path.startswith("/"), "Routed paths must start with '/'"
        self.endpoints = endpoints
        self.chooser = chooser
        self.operations = Operations(endpoints, chooser)
        self.path = path
        self.endpoint = self.app = self.operations
        self.name = path
        self.include_in_schema = True
        self.methods = set(self.operations.methods)

    def __getattr__(self, name: str) -> Any:
        """``path_regex``, ``path_format`` and ``param_convertors``, compiled when first read."""
        if name in ("path_regex", "path_format", "param_convertors"):
            self.path_regex, self.path_format, self.param_convertors = compile_path(self.path)
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class Operations:
    """The ASGI app of one documented path: the endpoint of the request's method answers."""

    def __init__(self, endpoints: dict[str, Endpoint], chooser: Chooser | None) -> None:
        self.endpoints = endpoints
        self.chooser = chooser
        self.methods = frozenset(endpoints) | ({"HEAD"} if "GET" in endpoints else set())

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        """The answer's coroutine: the endpoint's own, with none of this app's around it."""
        method = scope["method"]
        endpoint = self.endpoints["GET" if method == "HEAD" else method]
        # the chooser is asked only while some tenant is served another document
        if self.chooser is not None and endpoint.runtime.interfaces:
            return self._chosen(self.chooser, endpoint, scope, receive, send)
        return endpoint.respond(scope, receive, send)

    async def _chosen(self, chooser: Chooser, endpoint: Endpoint, scope: Scope, receive: Receive, send: Send) -> None:
        chosen = chooser(endpoint, scope)
        if not isinstance(chosen, Endpoint):  # a path another version lacks: a Starlette response
            response = await chosen(Request(scope, receive, send))
            await response(scope, receive, send)
            return
        await chosen.respond(scope, receive, send)


def _route(path: str, endpoints: dict[str, Endpoint], chooser: Chooser | None = None) -> Route:
    return OperationRoute(path, endpoints, chooser)
