"""payemu: a local emulator of the payment orchestration service (interface 1.0.11.6)."""

from __future__ import annotations

from emulator.domain.release import INTERFACE_VERSION, __version__

__all__ = ["INTERFACE_VERSION", "__version__", "create_app"]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from emulator.app.build import create_app

        return create_app
    raise AttributeError(name)
