"""The package's floors hold: each floor is a package, the import-linter contracts of
pyproject.toml are kept with no exceptions, no module imports itself round (type-only
imports included), and the packages stay small with one meaning per class name.

Run alone: ``pytest -q tests/system/test_layers.py`` (``lint-imports`` checks the contracts too;
``scripts/check`` runs it).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
MAX_LINES = 400


def _graph() -> grimp.ImportGraph:
    graph = grimp.build_graph("emulator", exclude_type_checking_imports=False, cache_dir=None)
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
    graph.add_import(importer="emulator.domain.errors", imported="emulator.tenants.runtime")  # runtime reaches errors
    cycles = _cycles(graph)
    assert len(cycles) == 1
    assert {"emulator.domain.errors", "emulator.tenants.runtime"} <= set(cycles[0])


def _layers() -> list[str]:
    contract = next(contract for contract in CONFIG["contracts"] if contract["type"] == "layers")
    assert "ignore_imports" not in contract  # no exceptions: a floor imports only the floors below it
    return list(contract["layers"])


def _floor_names() -> set[str]:
    return {name.strip() for floor in _layers() for name in floor.replace("|", ":").split(":")}


PACKAGE = ROOT / "emulator"
ROOT_MODULES = {"emulator", "emulator.__main__", "emulator.testing"}  # what users import or run


def test_the_layers_contract_names_packages_only_on_at_most_twelve_floors() -> None:
    assert CONFIG["exclude_type_checking_imports"] is False
    assert len(_layers()) <= 12
    for name in _floor_names():
        folder = ROOT / name.replace(".", "/")
        assert (folder / "__init__.py").is_file(), f"{name} is not a package"
        assert name.count(".") == 1, f"{name} is not a package of the root"


def test_every_package_is_on_a_floor_and_the_root_holds_only_what_users_import() -> None:
    packages = {f"emulator.{path.parent.name}" for path in PACKAGE.glob("*/__init__.py")}
    assert packages == _floor_names()
    root = {f"emulator.{path.stem}" for path in PACKAGE.glob("*.py")} - {"emulator.__init__"}
    assert len(root) + 1 <= 4, root
    graph = _graph()
    off = [
        module
        for module in sorted(graph.modules)
        if not any(module == name or module.startswith(f"{name}.") for name in _floor_names())
    ]
    assert set(off) <= ROOT_MODULES
    for module in sorted(graph.modules):  # no floor reaches back up to the root's modules
        if module not in ROOT_MODULES:
            assert not graph.find_modules_directly_imported_by(module) & ROOT_MODULES, module


def test_no_package_holds_more_than_fifteen_modules() -> None:
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in sorted(path.parent for path in PACKAGE.rglob("__init__.py"))
        if (count := len([path for path in folder.glob("*.py") if path.name != "__init__.py"])) > 15
    }
    assert crowded == {}


def test_no_class_name_is_defined_twice() -> None:
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_the_import_contracts_are_kept() -> None:
    run = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "emulator").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
