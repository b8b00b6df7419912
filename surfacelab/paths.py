"""Where surfacelab keeps what it writes outside the project (one cache folder: converted models, the score cache),
how a file is written whole or not at all (``write_atomic``), and how a file from elsewhere is checked before it is
read (``check_readable``: a regular file of a bounded size, never a device, a FIFO or a folder)."""

from __future__ import annotations

import os
import stat
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


def check_readable(path: Path, max_bytes: int, what: str) -> Path:
    """``path`` when it is a regular file (a link is followed) of at most ``max_bytes`` bytes.

    A file that comes from elsewhere (a saved run, a session) is read whole; a link to ``/dev/zero`` or a FIFO would
    never end, and a huge file would fill the memory.

    Raises:
        ValueError: naming ``what`` and ``path``: missing, not a regular file, or larger than ``max_bytes``.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ValueError(f"{what}: no file {str(path)!r}") from None
    except OSError as err:
        raise ValueError(f"{what}: {str(path)!r} cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what}: {str(path)!r} is not a regular file")
    if info.st_size > max_bytes:
        raise ValueError(f"{what}: {str(path)!r} holds {info.st_size:,} bytes, more than the {max_bytes:,} read "
                         "from such a file")
    return path
