"""Pages of the dashboard's lists (emulator/ui/paging.py)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from emulator.ui import paging

ROWS = list(range(1, 46))  # 45 rows
KEEP = {"key": "k", "result": "Rejected"}


def query(url: str | None) -> dict[str, list[str]]:
    assert url is not None
    return parse_qs(urlsplit(url).query)


def test_first_page_links_to_the_next_keeping_filters_and_other_pages() -> None:
    page = paging.paginate(ROWS, "page", {"jpage": "3"}, "/_emulator/", KEEP, 20)
    assert list(page.items) == ROWS[:20]
    assert (page.number, page.pages, page.total, page.first_index, page.last_index) == (1, 3, 45, 1, 20)
    assert page.prev_url is None
    assert query(page.next_url) == {"key": ["k"], "result": ["Rejected"], "jpage": ["3"], "page": ["2"]}


def test_last_page_and_page_numbers_out_of_range() -> None:
    last = paging.paginate(ROWS, "page", {"page": "99"}, "/d/", KEEP, 20)
    assert list(last.items) == ROWS[40:]
    assert (last.number, last.first_index, last.last_index, last.next_url) == (3, 41, 45, None)
    assert query(last.prev_url)["page"] == ["2"]
    back_to_first = paging.paginate(ROWS, "page", {"page": "2"}, "/d/", KEEP, 20)
    assert "page" not in query(back_to_first.prev_url)
    for raw in ("0", "-4", "x", ""):
        assert paging.paginate(ROWS, "page", {"page": raw}, "/d/", KEEP, 20).number == 1


def test_an_empty_list_is_one_empty_page() -> None:
    page = paging.paginate([], "jpage", {}, "/d/", {}, 20)
    assert (list(page.items), page.pages, page.first_index, page.last_index) == ([], 1, 0, 0)
