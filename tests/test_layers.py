"""The package's floors hold: no module of ``emulator`` imports itself round, type-only
imports included, and the import-linter contracts of pyproject.toml are kept.

Run alone: ``pytest -q tests/test_layers.py`` (``lint-imports`` checks the contracts too;
``scripts/check`` runs it).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
MAX_LINES = 400


def _graph() -> grimp.ImportGraph:
    graph = grimp.build_graph("emulator", exclude_type_checking_imports=False, cache_dir=None)
    for contract in CONFIG["contracts"]:  # the exceptions the layers contract names, and no other
        for ignored in contract.get("ignore_imports", []):
            importer, imported = (part.strip() for part in ignored.split("->"))
            graph.remove_import(importer=importer, imported=imported)
    return graph


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(module: str) -> None:
        nonlocal counter
        index[module] = low[module] = counter
        counter += 1
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == module:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_round() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = _graph()
    graph.add_import(importer="emulator.errors", imported="emulator.runtime")  # runtime reaches errors
    cycles = _cycles(graph)
    assert len(cycles) == 1
    assert {"emulator.errors", "emulator.runtime"} <= set(cycles[0])


def test_the_layers_contract_counts_type_only_imports_and_names_at_most_three_exceptions() -> None:
    assert CONFIG["exclude_type_checking_imports"] is False
    layers = next(contract for contract in CONFIG["contracts"] if contract["type"] == "layers")
    assert len(layers.get("ignore_imports", [])) <= 3
    lines = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for ignored in layers.get("ignore_imports", []):  # each explained by the comment above it
        where = next(number for number, line in enumerate(lines) if f'"{ignored}"' in line)
        assert lines[where - 1].strip().startswith("#"), ignored


@pytest.mark.parametrize("contract", ["layers", "stores"])
def test_the_import_contracts_are_kept(contract: str) -> None:
    run = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--contract", contract, "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_every_module_that_imports_payemu_is_on_a_floor() -> None:
    layers = next(contract for contract in CONFIG["contracts"] if contract["type"] == "layers")
    named = {name.strip() for floor in layers["layers"] for name in floor.replace("|", ":").split(":")}
    graph = _graph()
    off = [
        module
        for module in sorted(graph.modules)
        if not any(module == name or module.startswith(f"{name}.") for name in named)
        and graph.find_modules_directly_imported_by(module)
    ]
    assert off == []


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "emulator").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
