"""Reading the gateway catalog's files: the shared file (``catalog.yaml``) and each gateway's
(``gateways/<Name>.yaml``), checked against their JSON Schemas (:mod:`emulator.catalog.schema`)
and for a provenance of every fact, each problem named with its file and line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from emulator.catalog.catalog import CATALOG_PATH, Catalog, CatalogError, GatewaySpec
from emulator.catalog.schema import FACT_KEYS, GATEWAY, SHARED
from emulator.domain.datafiles import gateway_files, load_checked


def load_gateway(path: Path, card_checks: dict[str, Any], defaults: dict[str, Any]) -> GatewaySpec:
    """One gateway's file, checked: its schema, its name matching the file's, and a
    provenance for every fact it states."""
    data = load_checked(path, GATEWAY, "gateway file", "gateway", CatalogError)
    problems: list[tuple[str, str]] = []  # (the key whose line names the problem, the problem)
    if data["name"] != path.stem:
        problems.append(("name", f"name {data['name']!r} is not the file's name {path.stem!r}"))
    stated = data.get("provenance", {})
    for key in FACT_KEYS:
        if key in data and key not in stated:
            problems.append((key, f"{key}: no provenance (give its source URL or label it a guess)"))
    overlap = set(data["credentialsNames"]) & set(data.get("optionalCredentials", ()))
    if overlap:
        problems.append(("optionalCredentials", f"{sorted(overlap)} both required and optional"))
    if problems:
        lines = _fact_lines(path)  # read again only to name the lines
        raise CatalogError("\n".join(f"{path}:{lines.get(key, 1)}: {problem}" for key, problem in problems))
    spec = GatewaySpec.from_data(data, card_checks, defaults)
    return replace(spec, file=str(path))


def _fact_lines(path: Path) -> dict[str, int]:
    """The line of each top-level key of a gateway file (for its problems)."""
    lines: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        key = line.split(":", 1)[0]
        if key and not line[0].isspace() and key not in lines and key.isidentifier():
            lines[key] = number
    return lines


_READ: dict[tuple[tuple[str, int, int], ...], Any] = {}


def read(file: Path | None, shared: Path) -> Any:
    """The shared file's data (``file`` None) or a gateway's spec, checked; kept by the files'
    paths, modification times and sizes: a process reads a file once however many catalogs
    it makes (the test suite makes hundreds)."""
    paths = (shared,) if file is None else (file, shared)
    try:
        key = tuple((str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in paths)
    except OSError:
        key = ()  # read below, which names the file
    found = _READ.get(key)
    if found is None:
        if file is None:
            found = load_checked(shared, SHARED, "gateway catalog", "catalog", CatalogError)
        else:
            data = read(None, shared)
            found = load_gateway(file, data["cardChecks"], data["defaults"])
        if key:
            if len(_READ) >= 1024:
                _READ.clear()
            _READ[key] = found
    return found


def on_demand(path: str | Path | None = None, folder: str | Path | None = None) -> Catalog:
    """The catalog :func:`load_catalog` reads, each gateway's file read (and checked) when that
    gateway is first asked for: for payemu's own files, which the test suite reads and
    checks whole (``payemu serve`` reads none of them before its first answer)."""
    shared = Path(path) if path else CATALOG_PATH
    files = gateway_files(Path(folder) if folder else shared.parent / "gateways")
    return Catalog([], files, lambda file: read(file, shared))


def load_catalog(path: str | Path | None = None, folder: str | Path | None = None) -> Catalog:
    """The shared file ``path`` and every gateway file of ``folder`` (default: the
    ``gateways`` folder beside ``path``), in the order of their names, each read and checked
    now (:class:`CatalogError` naming every problem)."""
    path = Path(path) if path else CATALOG_PATH
    files = gateway_files(Path(folder) if folder else path.parent / "gateways")
    read(None, path)
    problems: list[str] = []
    gateways: list[GatewaySpec] = []
    seen: dict[str, Path] = {}
    for file in files:
        try:
            gateway = read(file, path)
        except CatalogError as exc:
            problems.append(str(exc))
            continue
        if gateway.name.lower() in seen:
            problems.append(f"{file}:1: gateway {gateway.name} is also defined in {seen[gateway.name.lower()]}")
        seen[gateway.name.lower()] = file
        gateways.append(gateway)
    if not files:
        problems.append(f"{path}: no gateway files in {path.parent / 'gateways'}")
    if problems:
        raise CatalogError("\n".join(problems))
    return Catalog(gateways)
