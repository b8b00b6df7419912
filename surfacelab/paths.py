"""Where surfacelab keeps what it writes outside the project (one cache folder: converted models, the score cache),
and how a file is written whole or not at all (``write_atomic``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def cache_dir() -> Path:
    """The surfacelab cache dir: ``$SURFACELAB_CACHE`` or the user cache dir."""
    env = os.environ.get("SURFACELAB_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("surfacelab"))


def write_atomic(path: Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path`` (same suffix), then move it onto ``path``, readable as
    an ordinary new file is (the umask's mode, not ``mkstemp``'s private one).

    A run that fails while writing leaves no half-written file behind.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".partial{path.suffix}")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
