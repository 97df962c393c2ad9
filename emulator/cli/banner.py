"""The start-up banner: what a newcomer needs when ``payemu serve`` starts — where it
listens, the keys, the files it read, the limits, the pages — as plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.domain.config import DEFAULT_KEYS, Settings, describe_limits
from emulator.domain.release import __version__

if TYPE_CHECKING:
    from emulator.tenants.runtime import Runtime

__all__ = ["banner", "limits_text"]


def _any_key_note(settings: Settings) -> str:
    if not settings.any_key:
        return ""
    if settings.any_key_admin_required:
        return " (+ any key with X-Admin-Key: --any-key, --any-key-needs-admin)"
    return " (+ any key: --any-key)"


def _dropped_keys(settings: Settings) -> list[str]:
    """The line naming the built-in keys a config file's ``keys:`` left out (a request with
    one of them is a 401), or none when every built-in key still works."""
    kept = {spec.key for spec in settings.keys}
    dropped = ", ".join(spec.key for spec in DEFAULT_KEYS if spec.key not in kept)
    if not dropped:
        return []
    fate = "fresh sandbox tenants (--any-key)" if settings.any_key else "answered 401"
    return [f"  not served     {dropped}: the config file's keys: replace them ({fate}); list them there to keep them"]


def banner(settings: Settings, runtime: Runtime, card_form: str | None = None) -> str:
    """What a newcomer needs on start: where it listens, the keys, the files it read."""
    base = f"http://{settings.host}:{settings.port}"
    keys = ", ".join(f"{k.key} ({'sandbox' if k.is_sandbox else 'live'})" for k in settings.keys)
    lines = [
        f"payemu {__version__} — payment orchestration emulator, interface {runtime.api.interface_version}",
        f"  listening on   {base}",
        f"  API keys       {keys}{_any_key_note(settings)}",
        *_dropped_keys(settings),
        f"  schema         {runtime.api.source} (version {runtime.api.version})",
    ]
    counts = runtime.scenarios.counts()  # the gateways' own triggers are not listed (nor read)
    for index, path in enumerate(runtime.scenarios.files()):
        label = "scenarios" if index == 0 else ""
        count = counts.get(str(path), 0)
        lines.append(f"  {label:<14} {path} ({count} rule{'' if count == 1 else 's'})")
    lines.append(f"  limits         {limits_text(settings)} (config file: limits)")
    if settings.state_path:
        saved = "changes on disk within 1 s, seconds under full load"
        lines.append(f"  state          {settings.state_path} ({saved}; docs/state.md)")
    if settings.seed is not None:
        lines.append(f"  seed           {settings.seed} (clocks from {settings.clock_start:%Y-%m-%dT%H:%M:%SZ})")
    lines.append(f"  start page     {base}/ (links the dashboard, the API page and the schemas)")
    lines.append(f"  dashboard      {base}/_emulator/")
    lines.append(f"  API page       {base}/docs")
    if card_form:
        lines.append(f"  card form      {card_form}")
    if settings.access_log:
        lines.append("  access log     on: one line per request")
    lines.append(f"  admin key      {'set (X-Admin-Key)' if settings.admin_key else 'none'}")
    from emulator.endpoints.admin import exposure_warning

    warning = exposure_warning(settings)
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def limits_text(settings: Settings) -> str:
    """The memory limits as people read them: config key and value, sizes in KiB/MiB."""

    def shown(key: str, value: object) -> str:
        if key.endswith("Bytes") or "Bytes" in key:
            size = float(value)  # type: ignore[arg-type]
            for unit in ("bytes", "KiB", "MiB", "GiB"):
                if size < 1024 or unit == "GiB":
                    return f"{size:g} {unit}"
                size /= 1024
        if key.endswith("Seconds"):
            return f"{value:g} s"
        return str(value)

    return ", ".join(f"{key} {shown(key, value)}" for key, value in describe_limits(settings.limits))
