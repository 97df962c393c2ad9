"""The ready file of ``payemu serve --ready-file PATH``: once the server answers requests,
``{"url": ..., "port": ..., "cardFormUrl": ...}`` is written to PATH as JSON, whole or not
at all (a temporary file beside it, then renamed), so a harness that polls for the file
reads the port payemu chose (``--port 0``) and never a half-written file. It is removed when
payemu stops."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def contents(host: str, port: int, card_form_port: int | None) -> dict[str, object]:
    """What the ready file says: payemu's base URL and port, and the card form's URL (null
    when it is not served). A server on every address (``0.0.0.0``, ``::``) is reached
    through loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    form = f"http://localhost:{card_form_port}//pay/" if card_form_port else None
    return {"url": f"http://{shown}:{port}", "port": port, "cardFormUrl": form}


def check(path: str | os.PathLike[str]) -> str | None:
    """Why the ready file cannot be written at ``path`` (None: it can), found before the
    server binds by writing and removing a temporary file where the real one will go."""
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        return f"{folder} is not a directory" if folder.exists() else f"no directory {folder}"
    if target.is_dir():
        return "it is a directory"
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        return f"cannot write in {folder} ({exc.strerror or exc})"
    os.close(handle)
    Path(temporary).unlink(missing_ok=True)
    return None


def write(path: str | os.PathLike[str], data: dict[str, object]) -> None:
    """Write ``data`` to ``path`` atomically."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(data, out)
            out.write("\n")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def remove(path: str | os.PathLike[str]) -> None:
    """Remove the ready file, if it is there, when the server has stopped."""
    Path(path).unlink(missing_ok=True)
