"""The app policy: what a visitor of ``make app`` may do, in one place.

``make app`` serves the workbench and the explorer to a class with Voilà, one kernel per visitor, and tells the
kernels so through the environment (``AppPolicy.from_env``): ``$SURFACELAB_APP=1``, the app folder
``$SURFACELAB_APP_DIR`` and the size caps. The ``Workbench``, the ``Explorer`` and the lesson button read the policy
when they are made. In the app:

* the causal LM's server is the one the workbench was made with (``make app SERVER=...``, or none): the *server* box
  is read-only and nothing a visitor types, and no server a saved state names, is ever contacted;
* every visitor writes into a folder of their own, ``<app folder>/visitors/<random>`` (mode 0700, made once per
  kernel), under the tool's own file names, and gets each file back through the download link in the page;
* the sizes a visitor picks are capped (``Caps``): premise and option length, options per item, items per run, each
  refused at once with a message that names it and its cap.

Outside the app (``make lab``, a script) nothing changes, except that the same caps can be switched on through the
same environment variables.

>>> AppPolicy.from_env({}).app, AppPolicy.from_env({}).caps == Caps()
(False, True)
>>> AppPolicy.from_env({"SURFACELAB_APP": "1", "SURFACELAB_APP_DIR": "/srv/app"}).caps.items
1000
>>> AppPolicy.from_env({"SURFACELAB_MAX_OPTIONS": "8"}).caps.options
8
"""

from __future__ import annotations

import functools
import os
import re
import secrets
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

#: ``1``: this kernel serves a visitor of ``make app``.
APP_ENV = "SURFACELAB_APP"
#: The app folder (absolute): the visitors' folders are made under it.
APP_DIR_ENV = "SURFACELAB_APP_DIR"
#: The folder under the app folder that holds one folder per visitor.
VISITORS = "visitors"
#: What the read-only server box shows in the app when the models run in the visitor's kernel.
NO_SERVER = "none: models run in this kernel"
#: A cap's value that switches it off.
OFF = "off"


@dataclass(frozen=True)
class Caps:
    """Size caps on what a person picks (None: no cap). ``premise_chars``: characters of the premise and of the domain
    premise; ``option_chars``: characters of an option and of each paraphrase; ``options``: options per item (and
    paraphrases per option); ``items``: items per explorer run."""

    premise_chars: int | None = field(default=None, metadata={"env": "SURFACELAB_MAX_PREMISE_CHARS"})
    option_chars: int | None = field(default=None, metadata={"env": "SURFACELAB_MAX_OPTION_CHARS"})
    options: int | None = field(default=None, metadata={"env": "SURFACELAB_MAX_OPTIONS"})
    items: int | None = field(default=None, metadata={"env": "SURFACELAB_MAX_ITEMS"})

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{f.name}: expected a cap >= 1 or None (no cap), got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str], defaults: Caps) -> Caps:
        """The caps the environment sets (``$SURFACELAB_MAX_*``: a positive integer, or ``off``), ``defaults`` for
        the others."""
        values = {}
        for f in fields(cls):
            text = environ.get(f.metadata["env"], "").strip()
            if not text:
                values[f.name] = getattr(defaults, f.name)
            elif text.lower() == OFF:
                values[f.name] = None
            elif text.isdigit() and int(text) >= 1:
                values[f.name] = int(text)
            else:
                raise ValueError(f"${f.metadata['env']}: expected a positive whole number or {OFF!r}, got {text!r}")
        return cls(**values)

    def text_problems(self, premise: str, domain: str | None, options: tuple[str, ...],
                      forms: tuple[tuple[str, ...], ...]) -> list[tuple[str, str | None]]:
        """What is too large among a workbench's inputs: (a message for people, the view it holds: None for every
        view). Only lengths are read, so the answer is instant whatever the size."""
        out: list[tuple[str, str | None]] = []
        if self.premise_chars is not None:
            for what, text in (("premise", premise), ("domain premise", domain or "")):
                if len(text) > self.premise_chars:
                    out.append((f"The {what} is {len(text):,} characters long; this workbench takes at most "
                                f"{self.premise_chars:,}: shorten it.", None))
        if self.options is not None and len(options) > self.options:
            out.append((f"There are {len(options):,} options; this workbench takes at most {self.options:,}: remove "
                        f"{len(options) - self.options:,}.", None))
        if self.option_chars is not None:
            for i, option in enumerate(options):
                if len(option) > self.option_chars:
                    out.append((f"Option {i + 1} is {len(option):,} characters long; this workbench takes at most "
                                f"{self.option_chars:,}: shorten it.", None))
        for i, listed in enumerate(forms):
            if self.options is not None and len(listed) > self.options:
                out.append((f"Option {i + 1} has {len(listed):,} paraphrases; this workbench takes at most "
                            f"{self.options:,} per option: remove some.", "paraphrase"))
            long = [f for f in listed if self.option_chars is not None and len(f) > self.option_chars]
            if long:
                out.append((f"A paraphrase of option {i + 1} is {len(long[0]):,} characters long; this workbench "
                            f"takes at most {self.option_chars:,}: shorten it.", "paraphrase"))
        return out

    def check_options(self, n: int) -> None:
        """A ``ValueError`` naming the cap when an item would have ``n`` options."""
        if self.options is not None and n > self.options:
            raise ValueError(f"options: {n:,} options; this workbench takes at most {self.options:,} per item")

    def check_items(self, n: int) -> None:
        """A ``ValueError`` naming the cap when a run would score ``n`` items."""
        if self.items is not None and n > self.items:
            raise ValueError(f"items: {n:,} asked; this explorer runs at most {self.items:,} items per run: ask for "
                             "fewer")


#: The caps of the app where ``make app`` sets none: above the largest item surfacelab ships (a premise of 4,952
#: characters and an option of 882, both MMLU; 6 options, TREC; 11 paraphrases of a teaching-set concept), so that
#: every item opens; the worst input they let through, 12 options of 1,000 characters under a 5,000-character premise,
#: is one update of about two minutes of a core (docs/app.md), where nothing bounded it before.
APP_CAPS = Caps(premise_chars=5_000, option_chars=1_000, options=12, items=1_000)


@dataclass(frozen=True)
class AppPolicy:
    """What a visitor may do: ``app`` (a kernel of ``make app``), ``folder`` (the app folder; the visitors' folders
    are under it) and ``caps``. ``AppPolicy()`` is outside the app, with no caps."""

    app: bool = False
    folder: Path | None = None
    caps: Caps = Caps()

    def __post_init__(self) -> None:
        if not isinstance(self.caps, Caps):
            raise TypeError(f"caps: expected a Caps, got {type(self.caps).__name__}")
        if self.app and (self.folder is None or not Path(self.folder).is_absolute()):
            raise ValueError(f"folder: the app needs an absolute app folder, got {self.folder!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppPolicy:
        """The policy ``environ`` (default: ``os.environ``) sets: ``$SURFACELAB_APP`` (``1``: the app; empty or
        ``0``: not), ``$SURFACELAB_APP_DIR`` (the app folder, absolute) and the caps (``$SURFACELAB_MAX_*``; in the
        app, ``APP_CAPS`` where none is set).

        Raises:
            ValueError: naming the variable whose value is wrong.
        """
        environ = os.environ if environ is None else environ
        flag = environ.get(APP_ENV, "").strip()
        if flag not in ("", "0", "1"):
            raise ValueError(f"${APP_ENV}: expected 1 (the app) or 0, got {flag!r}")
        app = flag == "1"
        if not app:
            return cls(caps=Caps.from_env(environ, Caps()))
        folder = environ.get(APP_DIR_ENV, "").strip()
        if not folder or not Path(folder).is_absolute():
            raise ValueError(f"${APP_DIR_ENV}: the app needs the app folder as an absolute path, got {folder!r}")
        return cls(app=True, folder=Path(folder), caps=Caps.from_env(environ, APP_CAPS))

    def public(self, text: str) -> str:
        """``text`` as a visitor may read it: in the app, a path of the visitor's folder says "your folder" and one
        of the app folder "the app folder" (the page names no place on the host); elsewhere ``text`` itself.

        >>> AppPolicy(app=True, folder=Path("/srv/app")).public("no session.json in '/srv/app/visitors/x1-_Z/explorer'")
        "no session.json in 'your folder/explorer'"
        """
        if not self.app:
            return text
        root = str(self.folder).rstrip("/")
        text = re.sub(re.escape(f"{root}/{VISITORS}/") + r"[A-Za-z0-9_-]+", "your folder", text)
        return text.replace(root, "the app folder")

    def visitor_folder(self) -> Path:
        """This kernel's own folder in the app: ``<folder>/visitors/<random>``, made (mode 0700) on the first call and
        the same for every later call in this process (the workbench and the explorer of one visitor share it)."""
        if not self.app:
            raise ValueError("visitor_folder: only a kernel of the app has a visitor's folder")
        return _visitor_folder(Path(self.folder))


@functools.cache
def _visitor_folder(root: Path) -> Path:
    """A new folder under ``root/visitors`` with an unguessable name, readable by this user alone; once per process."""
    visitors = root / VISITORS
    visitors.mkdir(mode=0o700, parents=True, exist_ok=True)
    visitors.chmod(0o700)  # nobody else on the machine lists the visitors
    path = visitors / secrets.token_urlsafe(18)
    path.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


def describe(policy: AppPolicy) -> str:
    """The caps of ``policy`` in words (what ``make app`` prints).

    >>> describe(AppPolicy(caps=Caps(premise_chars=6000, items=1000)))
    'premise 6,000 characters, option no cap, options per item no cap, items per run 1,000'
    """
    caps = policy.caps
    words = {"premise_chars": ("premise", " characters"), "option_chars": ("option", " characters"),
             "options": ("options per item", ""), "items": ("items per run", "")}
    return ", ".join(f"{label} {'no cap' if getattr(caps, name) is None else f'{getattr(caps, name):,}{unit}'}"
                     for name, (label, unit) in words.items())


if __name__ == "__main__":  # `make app` checks the environment it made, before a URL is printed, and says the caps
    import sys

    try:
        made = AppPolicy.from_env()
    except ValueError as err:
        sys.exit(f"make app: {err}")
    print(f"  each visitor's files: a folder of their own in {made.folder}/{VISITORS}/; caps: {describe(made)}")
