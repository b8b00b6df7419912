"""Reading files surfacelab did not write (an lm-eval log, a data file from elsewhere): they never hang a reader,
never grow its memory without end and never end in a traceback.

* Only regular files are read (a symlink to one is followed). A folder, a FIFO, a device or a socket is refused by
  name before it is opened (opening some devices has effects of its own), and again from the opened descriptor, in
  case the path was swapped between the two; the open does not block, so a FIFO swapped in cannot hold it.
* At most ``cap`` bytes are read: a larger file is refused with its size, one that grows while it is read too.
* JSON Lines are split on ``\\n`` only: ``str.splitlines`` also splits on U+2028, U+2029 and U+0085, which a JSON
  writer leaves raw inside strings (lm-eval's ``ensure_ascii=False``: JSON escapes only the controls below U+0020).
* A JSON error names the file and line: a byte that is not UTF-8, malformed JSON, a number Python will not read
  (over 4300 digits), nesting deeper than the parser's recursion limit, or a lone surrogate (a ``\\ud800`` escape is
  not text: no tokenizer, CSV or terminal takes it; the field holding it is named).

Each error is a ``ValueError`` whose message starts with ``where``, the caller's words for the file (for example
``"path: '/runs/samples_arc_2024.jsonl'"``).

>>> import json, tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
>>> _ = f.write_text(json.dumps({"text": "one\\u2028two"}, ensure_ascii=False) + "\\n", encoding="utf-8")
>>> list(json_lines(f, cap=1000, where=str(f)))
[(1, {'text': 'one\\u2028two'})]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from typing import Any, BinaryIO, Iterator

from .text import bad_character

#: A ``\\uD800``-``\\uDFFF`` escape in JSON text: only then can a parsed string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: Bytes read at a time.
CHUNK = 1 << 20
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def size_text(n: int) -> str:
    """A byte count as a person reads it: ``2.0 GiB (2147483648 bytes)``."""
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _check(path: str | os.PathLike, st: os.stat_result, cap: int, where: str) -> None:
    """Refuse what is not a regular file of at most ``cap`` bytes, by name."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "a file of an unknown kind")
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise ValueError(f"{where} is {kind}{link}, not a regular file; surfacelab reads only regular files")
    if st.st_size > cap:
        raise ValueError(f"{where} is {size_text(st.st_size)}, over the {size_text(cap)} surfacelab reads from such "
                         "a file")


@contextlib.contextmanager
def open_regular(path: str | os.PathLike, *, cap: int, where: str) -> Iterator[BinaryIO]:
    """The regular file ``path`` opened for reading in binary, checked before and after the open (see the module).

    Raises:
        ValueError: starting with ``where``: missing, unreadable, not a regular file, or over ``cap`` bytes.
    """
    try:
        _check(path, os.stat(path), cap, where)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        missing = isinstance(err, FileNotFoundError)
        raise ValueError(f"{where} {'does not exist' if missing else 'cannot be read'}"
                         f"{' (a broken link)' if missing and os.path.islink(path) else ''}"
                         f"{'' if missing else f' ({err.strerror})'}") from None
    try:
        _check(path, os.fstat(fd), cap, where)
    except ValueError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        yield fh


def read_bytes(path: str | os.PathLike, *, cap: int, where: str) -> bytes:
    """The whole of the regular file ``path`` (at most ``cap`` bytes), read a MiB at a time (a buffer as large as the
    cap is never made for a small file)."""
    parts, total = [], 0
    with open_regular(path, cap=cap, where=where) as fh:
        while chunk := fh.read(min(CHUNK, cap + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
            if total > cap:
                raise ValueError(f"{where} grew past {size_text(cap)} while it was read")
    return b"".join(parts)


def read_json(path: str | os.PathLike, *, cap: int, where: str, max_depth: int | None = None) -> Any:
    """One JSON document from the regular file ``path`` (at most ``cap`` bytes), every error naming ``where``; with
    ``max_depth``, one nested deeper is refused (what is kept of it is later written out again, and ``json.dumps``
    or ``repr`` of a value near the recursion limit fails there)."""
    value = parse_json(read_bytes(path, cap=cap, where=where), where)
    if max_depth is not None and (deep := depth(value)) > max_depth:
        raise ValueError(f"{where}: JSON nested {deep} levels deep, more than the {max_depth} such a file has")
    return value


def json_lines(path: str | os.PathLike, *, cap: int, where: str) -> Iterator[tuple[int, Any]]:
    """``(1-based line number, value)`` of every non-blank line of the JSON Lines file ``path``, read as it goes
    (lines end at ``\\n`` only; the file is at most ``cap`` bytes; a UTF-8 BOM is allowed)."""
    with open_regular(path, cap=cap, where=where) as fh:
        total, n = 0, 0
        while raw := fh.readline(cap + 1 - total):
            total, n = total + len(raw), n + 1
            if total > cap:
                raise ValueError(f"{where} grew past {size_text(cap)} while it was read")
            if raw.strip():
                yield n, parse_json(raw, f"{where} line {n}", bom=n == 1, unit="line")


def parse_json(data: bytes, where: str, *, bom: bool = True, unit: str = "file") -> Any:
    """``data`` (UTF-8, a BOM allowed when ``bom``) parsed as JSON; every error says what, starting with ``where``
    (``unit``: what ``data`` is, for the byte position of a character that is not UTF-8)."""
    try:
        text = data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 (byte 0x{data[exc.start]:02X} at byte {exc.start + 1} of the "
                         f"{unit}); save the file as UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if "\n" in text.rstrip("\n") else f"column {exc.colno}"
        raise ValueError(f"{where}: malformed JSON: {exc.msg} ({at})") from None
    except ValueError:  # json reads integers with int(), which refuses more digits than this
        raise ValueError(f"{where}: a number JSON holds cannot be read (more than the {sys.get_int_max_str_digits()} "
                         "digits Python reads)") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply to read (arrays or objects more than about "
                         f"{sys.getrecursionlimit()} levels inside each other)") from None
    if _SURROGATE_ESCAPE.search(text):
        bad = lone_surrogate(value)
        if bad:
            raise ValueError(f"{where}: {bad}")
    return value


def lone_surrogate(value: Any) -> str | None:
    """Where the first string of ``value`` (a parsed JSON value: keys too) holding a lone surrogate is, and which
    character: ``"arguments.gen_args_0.arg_0: character 12 (0-based) is a lone surrogate U+D800, ..."``; None if
    none does. Walked without recursion (a value may be nested as deep as the parser allows)."""
    todo: list[tuple[str, Any]] = [("the value", value)]
    while todo:
        field, v = todo.pop()
        if isinstance(v, str):
            bad = bad_character(v)
            if bad:
                return f"{field}: {bad}"
        elif isinstance(v, dict):
            base = "" if field == "the value" else f"{field}."
            for k, item in reversed(v.items()):
                todo += [(f"{base}{k}", item), (f"a key of {field}", k)]
        elif isinstance(v, list):
            todo += [(f"{field}[{i}]", item) for i, item in reversed(list(enumerate(v)))]
    return None


def depth(value: Any) -> int:
    """How deep ``value`` (a parsed JSON value) nests lists and objects (a scalar: 0), walked without recursion."""
    deepest, todo = 0, [(0, value)]
    while todo:
        level, v = todo.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, level + 1)
            todo += [(level + 1, item) for item in (v.values() if isinstance(v, dict) else v)]
    return deepest


def head(path: str | os.PathLike, n: int = 256) -> bytes:
    """The first ``n`` bytes of the regular file ``path`` (b"" for what is not one, or cannot be read): what a log
    reader's ``detect`` looks at. Opened without blocking, so a FIFO cannot hold it."""
    try:
        with open_regular(path, cap=2 ** 62, where=str(path)) as fh:
            return fh.read(n)
    except ValueError:
        return b""
