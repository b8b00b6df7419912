"""BLiMP (Warstadt et al. 2020): 67 paradigms of minimal pairs, one ``<UID>.jsonl`` file each, read into a frame
for :func:`surfacelab.pll.pll_blimp`."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Sequence

import pandas as pd

from .._checks import check_int
from ..text import check_text
from .loader import default_data_root, read_jsonl


def _blimp_dir(data_dir: str | Path | None) -> Path:
    if data_dir is None:
        root = default_data_root()
        if root is None:
            raise ValueError("data_dir: no BLiMP folder given and no data root found ($SURFACELAB_DATA or "
                             "data/eval in the repository)")
        data_dir = root
    path = Path(data_dir).expanduser()
    for cand in (path, path / "blimp"):
        if cand.is_dir() and any(cand.glob("*.jsonl")):
            return cand
    raise ValueError(f"data_dir: {str(path)!r} holds no BLiMP <UID>.jsonl files (nor does its blimp/ folder)")


def load_blimp(data_dir: str | Path | None = None, *, paradigms: Sequence[str] | None = None,
               limit: int | None = None) -> pd.DataFrame:
    """BLiMP minimal pairs as a frame: one row per pair, in file order.

    Args:
        data_dir: the BLiMP folder (``<UID>.jsonl`` files) or a data root holding ``blimp/``;
            None: the default data root (``$SURFACELAB_DATA`` or ``data/eval``).
        paradigms: UIDs to read (default: every file, sorted).
        limit: read at most this many pairs per paradigm (the first lines of each file).

    Returns:
        Columns ``paradigm``, ``field``, ``linguistics_term``, ``pair_id``, ``sentence_good``,
        ``sentence_bad``. ``field`` is normalised: one paradigm (principle_A_case_2) spells it
        "syntax/semantics" where the 13 others say "syntax_semantics"; both read "syntax_semantics".
    """
    folder = _blimp_dir(data_dir)
    known = sorted(p.stem for p in folder.glob("*.jsonl"))
    if paradigms is None:
        chosen = known
    else:
        if isinstance(paradigms, str):
            paradigms = [paradigms]
        chosen = list(paradigms)
        for uid in chosen:
            if uid not in known:
                close = difflib.get_close_matches(str(uid), known, n=3)
                raise ValueError(f"paradigms: unknown paradigm {uid!r}"
                                 + (f" (did you mean {', '.join(close)}?)" if close else ""))
        if not chosen:
            raise ValueError("paradigms: must not be empty")
    check_int("limit", limit, 1, allow_none=True)
    rows = []
    for uid in chosen:
        path = folder / f"{uid}.jsonl"
        for lineno, rec in read_jsonl(path, limit=limit):
            try:
                row = {"paradigm": rec["UID"], "field": rec["field"].replace("/", "_"),
                       "linguistics_term": rec["linguistics_term"], "pair_id": str(rec["pairID"]),
                       "sentence_good": rec["sentence_good"], "sentence_bad": rec["sentence_bad"]}
            except (KeyError, AttributeError) as exc:
                raise ValueError(f"{path}: line {lineno}: not a BLiMP record (missing or bad field "
                                 f"{exc.args[0] if isinstance(exc, KeyError) else 'field'!r})") from None
            for key in ("sentence_good", "sentence_bad"):
                check_text(row[key], f"{path}: line {lineno}: {key}", allow_empty=False)
            rows.append(row)
    return pd.DataFrame(rows)
