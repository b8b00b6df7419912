"""Command line: ``surfacelab score | models | pll | eval``.

One module per sub-command (``score``, ``models``, ``pll``, ``evaluate``), each with ``add_cli(subparsers)``
and ``run(args)``; ``_checks`` refuses bad paths, devices and cache dirs before any work, ``_output`` prints
tables that fit the terminal (or csv / json / markdown). ``main`` is the ``surfacelab`` console script: a
user's mistake ends in one line on stderr and exit status 2, never in a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import warnings
from typing import Iterator, NoReturn, Sequence

from .._format import printable
from . import _checks, evaluate, models, pll, score

#: exit status of a run stopped with Ctrl-C (128 + SIGINT), as shells report it
INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``surfacelab`` argument parser with all sub-commands."""
    parser = _Parser(prog="surfacelab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    parser.commands = {}  # sub-command -> its parser (what an unknown option is compared with)
    for command in (score, models, pll, evaluate):
        p = command.add_cli(sub)
        parser.commands[p.prog.split()[-1]] = p
    return parser


def _interrupted() -> str:
    """What a Ctrl-C leaves behind, in one line."""
    if os.environ.get("SURFACELAB_NO_CACHE"):
        return "interrupted; nothing was written and nothing is cached, so a rerun starts over"
    from ..paths import cache_dir

    return (f"interrupted; no output file was written. Rerun the same command: it reuses every score that the "
            f"score cache ({cache_dir() / 'scores.sqlite'}) holds, batches finished before the interrupt included")


@contextlib.contextmanager
def _no_loading_bars() -> Iterator[None]:
    """No "Loading weights" bars from transformers between the tables (restored afterwards, for in-process calls)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when transformers is first imported
    hf_logging = getattr(sys.modules.get("transformers.utils.logging"), "disable_progress_bar", None)
    was_on = hf_logging is not None and sys.modules["transformers.utils.logging"].is_progress_bar_enabled()
    if was_on:
        hf_logging()
    try:
        yield
    finally:
        if was_on:
            sys.modules["transformers.utils.logging"].enable_progress_bar()


def _warning_line(command: str):
    """A warning as one line of the command's own (``surfacelab eval: warning: ...``): no Python source line, and
    no ESC sequence from a file name or a log's text reaches the terminal."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
        print(f"surfacelab {command}: warning: {printable(' '.join(str(message).split()))}", file=sys.stderr)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``surfacelab`` command; returns the exit status (0, 2 for a user's mistake, 130 on Ctrl-C)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        with _no_loading_bars(), warnings.catch_warnings():
            warnings.showwarning = _warning_line(args.command)
            _checks.unknown_options(extra, parser.commands[args.command])
            _checks.argument_text(args)
            return args.func(args)
    except KeyboardInterrupt:
        pass
    except (ValueError, TypeError, OSError, ImportError, RuntimeError) as err:
        if isinstance(err, RuntimeError):
            from ..models import PresetNotInstalled  # loaded by now: only a model load raises it

            if not isinstance(err, PresetNotInstalled):
                raise  # a bug, not the user's mistake: the traceback is the report
            err = ValueError(f"--model: {err}")
        text = f"{err.filename}: {err.strerror}" if isinstance(err, OSError) and err.filename else str(err)
        message = printable(" ".join(text.split()))  # one line, whatever the message holds; no ESC sequence
        print(f"surfacelab {args.command}: error: {message}", file=sys.stderr)
        return 2
    gc.collect()  # the stopped loop's progress bar closes now (its frames are gone), not after the line below
    print(f"\nsurfacelab {args.command}: {_interrupted()}", file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
