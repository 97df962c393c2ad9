"""``dataclass``: :func:`dataclasses.dataclass`, doing less when a class is made.

Each method the standard decorator writes (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
a frozen class's ``__setattr__``) is compiled on its first call; a class without a docstring
keeps an eager ``__init__``, from whose signature the standard decorator writes one. A string
annotation naming none of ``ClassVar``, ``InitVar`` and ``KW_ONLY`` reaches the decorator as a
placeholder, which it need not parse with regular expressions; ``__annotations__``, each
field's ``type`` and the methods' annotations stay the strings written. Fields, ``replace``,
equality, hashing and the frozen checks are the standard's. Without
``dataclasses._create_fn`` (3.13 compiles a class in one go): the standard decorator."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    _create_fn = getattr(dataclasses, "_create_fn", None)

    def _plain(hint: object) -> bool:
        """Whether ``hint`` is a string naming none of what the decorator looks for in one."""
        return isinstance(hint, str) and "ClassVar" not in hint and "InitVar" not in hint and "KW_ONLY" not in hint

    class _Plain:
        """The placeholder for a string annotation naming none of ``ClassVar``, ``InitVar`` and ``KW_ONLY``."""

    def dataclass(cls: type | None = None, /, **options: Any) -> Any:
        """:func:`dataclasses.dataclass` (same options), its methods compiled on first call."""

        def wrap(cls: type) -> type:
            if _create_fn is None:
                return dataclasses.dataclass(cls, **options)
            written = inspect.get_annotations(cls)
            plain = {name: hint for name, hint in written.items() if _plain(hint)}
            if plain:
                cls.__annotations__ = {name: _Plain if name in plain else hint for name, hint in written.items()}
            dataclasses._create_fn = _on_first_call(plain, eager_init=not cls.__dict__.get("__doc__"))
            try:
                made: type = dataclasses.dataclass(cls, **options)
            finally:
                dataclasses._create_fn = _create_fn
                if plain:
                    cls.__annotations__ = written
            if plain:
                made.__annotations__ = written  # (slots=True makes a new class)
                for each in dataclasses.fields(made):
                    if each.type is _Plain:
                        each.type = plain[each.name]
            return made

        return wrap if cls is None else wrap(cls)

    def _on_first_call(plain: dict[str, str], eager_init: bool) -> Callable[..., Any]:
        # the names under which __init__'s annotations reach _create_fn (3.11, 3.12)
        written = {
            key: hint for field, hint in plain.items() for key in (f"_type_{field}", f"__dataclass_type_{field}__")
        }

        def create(name: str, args: Any, body: Any, **how: Any) -> Any:
            if name == "__init__":  # the one method annotated with the fields' types
                names = how.get("locals") or {}
                for key in written.keys() & names.keys():
                    if names[key] is _Plain:
                        names[key] = written[key]
                if eager_init:
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
