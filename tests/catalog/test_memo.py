"""Identity memos: made once per key and owner, made again for another owner under the
same key (an id reused), bounded."""

from __future__ import annotations

from emulator.catalog.identity_memo import IdentityMemo


def test_made_once_per_key_and_owner_and_bounded() -> None:
    made: list[str] = []

    def make(word: str) -> str:
        made.append(word)
        return word.upper()

    memo: IdentityMemo[str] = IdentityMemo(limit=2)
    owner, other = object(), object()
    assert memo.get((id(owner), "a"), owner, make, "a") == "A"
    assert memo.get((id(owner), "a"), owner, make, "a") == "A"
    assert made == ["a"]
    # the same key with another object behind it (its id reused): made afresh
    assert memo.get((id(owner), "a"), other, make, "b") == "B"
    assert made == ["a", "b"]
    memo.get((id(owner), "c"), owner, make, "c")
    assert len(memo) == 2
    memo.get((id(owner), "d"), owner, make, "d")  # at the limit: starts over
    assert len(memo) == 1
