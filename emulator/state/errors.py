"""The one error of the state file: a file payemu cannot use, said in one line."""

from __future__ import annotations

from emulator.domain.config import ConfigError


class StateError(ConfigError):
    """A state file payemu cannot use; the message is one line naming the file."""
