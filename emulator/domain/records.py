"""``dataclass``: :func:`dataclasses.dataclass`, each method it writes compiled on its first call.

The standard decorator compiles every method it adds (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, a frozen class's ``__setattr__``) when the class is made: for payemu's record
classes, a sixth of the start-up, for methods a run mostly never calls. Here each is a stub
that compiles the same source on its first call and puts the result in its place in the
class; the fields, ``replace``, equality, hashing and the frozen checks are the standard's.
Before a first call ``inspect.signature`` of the class reads ``(*args, **kwargs)``, so a
class without a docstring (which the standard decorator writes from it) keeps the standard
``__init__``. Without ``dataclasses._create_fn`` (3.13 compiles a class in one go): the standard."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    _create_fn = getattr(dataclasses, "_create_fn", None)

    def dataclass(cls: type | None = None, /, **options: Any) -> Any:
        """:func:`dataclasses.dataclass` (same options), its methods compiled on first call."""

        def wrap(cls: type) -> type:
            if _create_fn is None:
                return dataclasses.dataclass(cls, **options)
            eager_init = not cls.__dict__.get("__doc__")
            dataclasses._create_fn = _on_first_call(eager_init)
            try:
                return dataclasses.dataclass(cls, **options)
            finally:
                dataclasses._create_fn = _create_fn

        return wrap if cls is None else wrap(cls)

    def _on_first_call(eager_init: bool) -> Callable[..., Any]:
        def create(name: str, args: Any, body: Any, **how: Any) -> Any:
            if eager_init and name == "__init__":
                return _create_fn(name, args, body, **how)
            made: Callable[..., Any] | None = None

            def stub(*given: Any, **named: Any) -> Any:
                nonlocal made
                if made is None:
                    made = _create_fn(name, args, body, **how)
                    made.__qualname__ = stub.__qualname__
                    if given:  # in the class's place of the stub (a __repr__ stays wrapped)
                        for owner in type(given[0]).__mro__:
                            if owner.__dict__.get(name) is stub:
                                setattr(owner, name, made)
                                break
                return made(*given, **named)

            stub.__name__ = stub.__qualname__ = name
            return stub

        return create
