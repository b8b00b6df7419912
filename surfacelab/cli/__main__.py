"""``python -m surfacelab.cli``: the same as the ``surfacelab`` command."""

from . import main

raise SystemExit(main())
