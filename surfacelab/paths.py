"""Where surfacelab keeps what it writes outside the project: one cache folder (converted models, the score cache)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The surfacelab cache dir: ``$SURFACELAB_CACHE`` or the user cache dir."""
    env = os.environ.get("SURFACELAB_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("surfacelab"))
