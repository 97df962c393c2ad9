"""payemu: a local emulator of the payment orchestration service (interface 1.0.11.6)."""

from __future__ import annotations

__version__ = "0.1.0"
INTERFACE_VERSION = "1.0.11.6"

__all__ = ["INTERFACE_VERSION", "__version__", "create_app"]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from emulator.http.app import create_app

        return create_app
    raise AttributeError(name)
