"""The behaviours payemu decides where the interface document is silent.

``emulator/data/fidelity.yaml`` lists each with its source and alternatives; from it come
docs/reference/fidelity.md and the schema's ``x-payemu-source`` extensions
(``python -m emulator.contract.fidelity --write-docs --write-schema``; a test checks both)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from emulator.domain.datafiles import REPOSITORY, data_path, load_checked

DATA = data_path("fidelity.yaml")
PAGE = REPOSITORY / "docs" / "reference" / "fidelity.md"  # the docs page holding the table
# the served schema (schemas/openapi.json at the top of the repository links to it)
SCHEMAS = (data_path("openapi.json"),)
START, END = "<!-- fidelity:start -->", "<!-- fidelity:end -->"
EXTENSION = "x-payemu-source"
SOURCES = {"public-export": "public export", "public-docs": "public docs", "payemu": "payemu's own"}
_TEXT = {"type": "string", "minLength": 1}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["choices"],
    "properties": {
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "topic", "spec", "payemu", "source", "why", "alternatives"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                    "topic": _TEXT,
                    "spec": _TEXT,
                    "payemu": _TEXT,
                    "why": _TEXT,
                    "alternatives": _TEXT,
                    "source": {"enum": list(SOURCES)},
                    "setting": _TEXT,
                    "schema": {"type": "array", "items": {"type": "string", "pattern": "^/"}},
                },
            },
        }
    },
}


class FidelityError(ValueError): ...


def choices(path: Path = DATA) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = load_checked(path, _SCHEMA, "fidelity file", "fidelity", FidelityError)["choices"]
    return found


def markdown(items: list[dict[str, Any]]) -> str:
    lines = [
        "| behaviour | the interface document | payemu | source | alternatives |",
        "| --- | --- | --- | --- | --- |",
    ]
    for item in items:
        alternatives = item["alternatives"]
        if item.get("setting"):
            alternatives += f" Select: {item['setting']}."
        cells = [
            f"{item['topic']} (`{item['id']}`)",
            item["spec"],
            item["payemu"],
            f"{SOURCES[item['source']]}: {item['why']}",
            alternatives,
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def readme_with_section(readme: str, section: str) -> str:
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise FidelityError(f"{PAGE.name} has no {START} ... {END} markers")
    return readme[: start + len(START)] + "\n" + section + readme[end:]


def _pointer(document: Any, pointer: str) -> Any:
    node = document
    for part in pointer.lstrip("/").split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or key not in node:
            raise FidelityError(f"schema pointer {pointer} does not exist (at {key!r})")
        node = node[key]
    return node


def extension(item: dict[str, Any]) -> dict[str, str]:
    return {"choice": item["id"], "source": item["source"]}


def annotated(document: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """``document`` with the current ``x-payemu-source`` extensions, old ones removed."""
    _strip(document)
    for item in items:
        for pointer in item.get("schema", []):
            node = _pointer(document, pointer)
            if isinstance(node, dict):
                node[EXTENSION] = extension(item)
    return document


def _strip(node: Any) -> None:
    if isinstance(node, dict):
        node.pop(EXTENSION, None)
        for value in node.values():
            _strip(value)
    elif isinstance(node, list):
        for value in node:
            _strip(value)


def _dump(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator.contract.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-docs", "--write-readme", dest="write_docs", action="store_true", help="write the docs' Fidelity page"
    )
    parser.add_argument("--write-schema", action="store_true", help="write x-payemu-source into the schemas")
    args = parser.parse_args(argv)
    items = choices()
    section = markdown(items)
    if args.write_docs:
        PAGE.write_text(readme_with_section(PAGE.read_text(encoding="utf-8"), section), encoding="utf-8")
    if args.write_schema:
        for path in SCHEMAS:
            path.write_text(_dump(annotated(json.loads(path.read_text(encoding="utf-8")), items)), encoding="utf-8")
    if not (args.write_docs or args.write_schema):
        print(section, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
