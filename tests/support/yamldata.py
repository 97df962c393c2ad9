"""YAML data the tests read: case files, fixtures and documents whose content is the subject,
not the loading."""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's loader: a tenth of the pure-Python one's time, which every xdist worker would pay
# at collection; the pure-Python one where PyYAML was built without libyaml
_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """The data of a YAML document, as ``yaml.safe_load`` gives it."""
    return yaml.load(text, Loader=_LOADER)
