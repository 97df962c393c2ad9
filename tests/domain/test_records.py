"""``emulator.domain.records.dataclass`` makes the classes the standard decorator makes, its
methods compiled on their first call."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from dataclasses import KW_ONLY, InitVar
from typing import Any, ClassVar

import pytest

from emulator.domain import records


def _both(**options: Any) -> list[type]:
    """The same class made by the standard decorator and by payemu's."""
    made = []
    for decorate in (dataclasses.dataclass, records.dataclass):

        class Point:
            """A point with a label."""

            x: int
            y: int = 0
            tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
            note: str = dataclasses.field(default="", compare=False, repr=False)
            checked: bool = dataclasses.field(default=False, init=False, compare=False)

            def __post_init__(self) -> None:
                object.__setattr__(self, "checked", True)

        made.append(decorate(**options)(Point))
    return made


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"frozen": True},
        {"unsafe_hash": True},
        {"order": True},
        {"slots": True},
        {"frozen": True, "slots": True},
        {"eq": False},
    ],
    ids=str,
)
def test_the_same_class_as_the_standard_decorator(options: dict[str, Any]) -> None:
    standard, lazy = _both(**options)
    assert [f.name for f in dataclasses.fields(lazy)] == [f.name for f in dataclasses.fields(standard)]
    assert lazy.__dataclass_params__.__repr__() == standard.__dataclass_params__.__repr__()  # type: ignore[attr-defined]
    assert ("__hash__" in lazy.__dict__) == ("__hash__" in standard.__dict__)
    assert (lazy.__hash__ is None) == (standard.__hash__ is None)
    a, b = standard(1, 2), lazy(1, 2)
    assert repr(b) == repr(a)
    assert b.checked and a.checked
    assert (lazy(1, 2, note="x") == lazy(1, 2)) == (standard(1, 2, note="x") == standard(1, 2))
    assert (lazy(1, 2) == lazy(1, 3)) == (standard(1, 2) == standard(1, 3))
    if standard.__hash__ is not None and options.get("eq", True):
        assert hash(lazy(1, 2)) == hash(standard(1, 2))
    if options.get("order"):
        assert lazy(1, 2) < lazy(1, 3)
    assert dataclasses.asdict(dataclasses.replace(b, y=5)) == dataclasses.asdict(dataclasses.replace(a, y=5))
    assert dataclasses.asdict(b) == dataclasses.asdict(a)
    assert repr(copy.deepcopy(b)) == repr(b)
    if options.get("frozen"):
        for made in (a, b):
            with pytest.raises(dataclasses.FrozenInstanceError):
                made.x = 3  # type: ignore[misc]
            with pytest.raises(dataclasses.FrozenInstanceError):
                del made.x  # type: ignore[misc]


def test_a_method_is_compiled_on_its_first_call_and_then_is_the_class_s_own() -> None:
    @records.dataclass(frozen=True)
    class Pair:
        """Two numbers."""

        left: int
        right: int

    stub = Pair.__dict__["__eq__"]
    assert stub.__qualname__.endswith("Pair.__eq__")
    assert Pair(1, 2) == Pair(1, 2)
    compiled = Pair.__dict__["__eq__"]
    if not hasattr(dataclasses, "_create_fn"):  # 3.13 writes a class's methods in one go: the standard's
        assert compiled is stub and stub.__code__.co_filename != records.__file__
        return
    assert compiled is not stub
    assert compiled.__qualname__ == stub.__qualname__
    assert Pair(1, 2) != Pair(2, 1)
    assert Pair.__dict__["__eq__"] is compiled  # once


def test_a_class_without_a_docstring_is_documented_as_the_standard_decorator_does() -> None:
    docs = []
    for decorate in (dataclasses.dataclass, records.dataclass):

        class Bare:
            name: str
            size: int = 1

        docs.append(decorate(frozen=True)(Bare).__doc__)
    assert docs[1] == docs[0]
    assert docs[0].startswith("Bare(name:")


def test_a_subclass_calls_its_base_s_method_once_compiled() -> None:
    @records.dataclass
    class Base:
        """A base."""

        a: int

    class Child(Base):
        pass

    assert Child(1) == Child(1)
    assert Base(2) == Base(2)
    assert repr(Child(3)).endswith("Child(a=3)")


def test_annotations_read_as_written_and_classvar_initvar_and_kw_only_as_the_standard() -> None:
    made = []
    for decorate in (dataclasses.dataclass, records.dataclass):

        class Account:
            """An account with a shared limit, a seed for __post_init__ and a keyword-only owner."""

            limit: ClassVar[int] = 5
            name: str
            seed: InitVar[int | None] = None
            _: KW_ONLY
            owner: str = ""
            tags: tuple[str, ...] = ()

            def __post_init__(self, seed: int | None) -> None:
                self.tags = (*self.tags, f"seed={seed}")

        made.append(decorate(Account))
    standard, lazy = made
    assert lazy.__annotations__ == standard.__annotations__
    assert [(f.name, f.type) for f in dataclasses.fields(lazy)] == [
        ("name", "str"),
        ("owner", "str"),
        ("tags", "tuple[str, ...]"),
    ]
    assert [(f.name, f.type) for f in dataclasses.fields(lazy)] == [
        (f.name, f.type) for f in dataclasses.fields(standard)
    ]
    assert lazy.limit == 5 and "limit" not in {f.name for f in dataclasses.fields(lazy)}
    for cls in (standard, lazy):
        assert cls("a", 7, owner="o").tags == ("seed=7",)
        with pytest.raises(TypeError):
            cls("a", 7, "o")  # owner is keyword-only
    assert inspect.signature(lazy) == inspect.signature(standard)  # once __init__ is compiled
    assert lazy.__init__.__annotations__ == standard.__init__.__annotations__
