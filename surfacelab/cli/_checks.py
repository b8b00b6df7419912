"""Checks the command line runs BEFORE any work: output paths, the device, the cache dir, argument text.

Each raises ``ValueError`` with one line naming the option and what is wrong, which ``main`` prints
with exit status 2; so a mistake costs nothing and a finished run never dies on its way to disk.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

from .. import text

if TYPE_CHECKING:
    from ..models import LM, MLM


#: load_lm / load_mlm's argument names -> the flags that set them
MODEL_FLAGS = {"name_or_path": "--model", "device": "--device", "server": "--server", "served_model": "--served-model"}


def causal_lm(args: argparse.Namespace) -> LM:
    """The causal LM ``--model`` / ``--device`` / ``--server`` / ``--served-model`` name (errors name the flag)."""
    from ..models import load_lm

    with flags(MODEL_FLAGS):
        return load_lm(args.model, device=args.device, server=args.server, served_model=args.served_model)


def masked_lm(args: argparse.Namespace) -> MLM:
    """The masked LM ``--model`` / ``--device`` name (errors name the flag)."""
    from ..models import load_mlm

    with flags(MODEL_FLAGS):
        return load_mlm(args.model, device=args.device)


@contextlib.contextmanager
def flags(names: Mapping[str, str]) -> Iterator[None]:
    """A library ``ValueError`` that names one of ``names``' arguments ("name_or_path: ...") names its flag instead
    ("--model: ...")."""
    try:
        yield
    except ValueError as err:
        arg, sep, rest = str(err).partition(": ")
        if sep and arg in names:
            raise ValueError(f"{names[arg]}: {rest}") from None
        raise


def unknown_options(extra: list[str], parser: argparse.ArgumentParser) -> None:
    """Refuse what ``parse_known_args`` left over, naming the closest option of ``parser`` (``--options`` ->
    ``--option``)."""
    if not extra:
        return
    known = sorted(set(re.findall(r"--[A-Za-z][\w-]*", parser.format_help())))
    flag = next((e.split("=", 1)[0] for e in extra if e.startswith("--")), None)
    if flag is None:
        raise ValueError(f"{extra[0]}: unexpected argument (see {parser.prog} --help)")
    close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ValueError(f"{flag}: unknown option{hint}; see {parser.prog} --help")


def _probe_writable(folder: Path, what: str) -> None:
    """Create and remove a file in ``folder`` (the only test that holds for root and on read-only mounts)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".surfacelab-probe-"):
            pass
    except OSError as err:
        raise ValueError(f"{what}: cannot write in {folder} ({err.strerror or err})") from None


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (where a missing folder would be created)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def output_file(value: str | None, flag: str, suffix: str) -> Path | None:
    """The path of an output file, refused unless it ends in ``suffix`` and its folder exists and is writable."""
    if value is None:
        return None
    path = Path(text.check_text(value, flag, allow_empty=False)).expanduser()
    if path.suffix.lower() != suffix:
        raise ValueError(f"{flag}: expected a file name ending in {suffix}, got {value!r}")
    if path.is_dir():
        raise ValueError(f"{flag}: {value} is a folder, not a file")
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f"{flag}: the folder {folder} does not exist")
    _probe_writable(folder, flag)
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{flag}: {value} exists and is read-only")
    return path


def output_dir(value: str | None, flag: str) -> Path | None:
    """A folder to write into (created later if missing): refused if it is a file or cannot be written."""
    if value is None:
        return None
    path = Path(text.check_text(value, flag, allow_empty=False)).expanduser()
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise ValueError(f"{flag}: {existing} is a file, not a folder")
    _probe_writable(existing, flag)
    return path


def device(value: str | None) -> None:
    """Refuse a device torch does not know, or one this machine does not have (``--device``)."""
    if value is None:
        return
    import torch

    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError):
        raise ValueError(f"--device: unknown device {value!r}; expected cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"--device: {value!r} asked for, but torch {torch.__version__} sees no CUDA device; "
                             "use --device cpu")
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"--device: {value!r} asked for, but there are only {count} CUDA devices")
    elif dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError(f"--device: {value!r} asked for, but MPS is not available here; use --device cpu")
    elif dev.type != "cpu":
        raise ValueError(f"--device: {value!r} is not supported; expected cpu, cuda, cuda:N or mps")


def cache_dir() -> str | None:
    """Refuse a cache dir (converted models, score cache) that is a file; a note when it cannot be written.

    A read-only cache dir is a legitimate shared setup: scores and converted models are read from it,
    nothing is stored (converting a preset that is not there yet then fails, in one line, at loading).

    Returns:
        None, or the note to show.
    """
    from ..paths import cache_dir as configured

    where = "cache dir ($SURFACELAB_CACHE)" if os.environ.get("SURFACELAB_CACHE") else "cache dir"
    existing = _nearest_existing(configured())
    if not existing.is_dir():
        raise ValueError(f"{where}: {existing} is a file, not a folder; point SURFACELAB_CACHE at a folder")
    if os.environ.get("SURFACELAB_NO_CACHE"):
        return None
    try:
        _probe_writable(existing, where)
    except ValueError as err:
        return f"note: {err}: scores and models are read from it, nothing new is stored"
    return None


def machine(device_name: str | None) -> None:
    """The device and the cache dir, before any model is loaded; a read-only cache dir is a note on stderr."""
    device(device_name)
    note = cache_dir()
    if note:
        print(note, file=sys.stderr)


def argument_text(args: argparse.Namespace) -> None:
    """Every string argument is valid text (a byte that is not UTF-8 is named with its option and position)."""
    for key, value in vars(args).items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, str):
            text.check_text(value, flag)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, str):
                    text.check_text(v, f"{flag} (#{i + 1})")


def batch_size(value: str) -> int | str:
    """``--batch-size``: "auto" or a positive integer."""
    if value == "auto":
        return value
    try:
        rows = int(value)
    except ValueError:
        rows = 0
    if rows < 1:
        raise ValueError(f"--batch-size: expected a positive integer or 'auto', got {value!r}")
    return rows


#: the chat template's argument names -> the flags that set them
CHAT_FLAGS = {"chat_template": "--chat-template", "chat_template.system_instruction": "--system-instruction"}
#: the largest template file --chat-template reads (real templates are a few KB; the largest known ~40 KB)
CHAT_TEMPLATE_CAP = 1 << 20


def add_chat_arguments(p: argparse.ArgumentParser) -> None:
    """``--chat-template [FILE]`` and ``--system-instruction TEXT`` (lm-eval's ``--apply_chat_template`` and
    ``--system_instruction``)."""
    p.add_argument("--chat-template", nargs="?", const=True, default=None, metavar="FILE",
                   help="render the premise and the domain premise alike through a chat template, as lm-eval's "
                        "--apply_chat_template does: the model's own, or the Jinja template in FILE")
    p.add_argument("--system-instruction", default=None, metavar="TEXT",
                   help="with --chat-template: the system turn's text (lm-eval's --system_instruction)")


def chat_template(args: argparse.Namespace) -> object:
    """``--chat-template`` / ``--system-instruction`` as the library's ``chat_template=``: None (plain text), True (the
    model's own), a template file's text, or a ``ChatTemplate`` when a system instruction is given."""
    from ..chat import ChatTemplate
    from ..files import read_bytes

    value, system = args.chat_template, args.system_instruction
    if value is None:
        if system is not None:
            raise ValueError("--system-instruction: only with --chat-template (it is the chat's system turn)")
        return None
    if value is not True:
        data = read_bytes(value, cap=CHAT_TEMPLATE_CAP, where=f"--chat-template: {value!r}")
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"--chat-template: {value!r} is not UTF-8 text (byte {err.start})") from None
    return value if system is None else ChatTemplate(None if value is True else value, system)
