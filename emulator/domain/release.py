"""payemu's release and the interface version it emulates, for every floor to name."""

__version__ = "0.1.0"
INTERFACE_VERSION = "1.0.11.6"
