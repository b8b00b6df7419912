"""One way for result objects to be written and read back: ``save(path)`` / ``Result.load(path)`` as one JSON file.

Every ``pd.DataFrame`` field is stored as a list of records (native Python scalars, floats exact, NaN as null,
infinities as strings) with its column dtypes under ``"dtypes"`` (and tuple columns under ``"tuples"``), every
other field as JSON (a dataclass such as the engine's counters as its fields), so ``load`` gives back equal frames.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import files

if TYPE_CHECKING:
    from .models import LM, MLM


def _cell(v: Any) -> Any:
    """A frame cell as exact JSON: native Python scalars (floats by repr), NaN as null, infinities as strings."""
    v = v.item() if isinstance(v, np.generic) else v
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else str(v)
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_cell(x) for x in v]
    return v


def frame_to_json(frame: pd.DataFrame) -> dict:
    """A frame as ``{"columns", "dtypes", "data"}`` (plus ``"tuples"``: object columns that hold tuples)."""
    doc = {"columns": list(frame.columns), "dtypes": {c: str(t) for c, t in frame.dtypes.items()},
           "data": [[_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]}
    tuples = [c for c in frame.columns
              if frame[c].dtype == object and len(frame) and isinstance(frame[c].iloc[0], tuple)]
    if tuples:
        doc["tuples"] = tuples
    return doc


def frame_from_json(doc: dict) -> pd.DataFrame:
    """The frame ``frame_to_json`` wrote."""
    if not doc["data"]:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in doc["dtypes"].items()})
    frame = pd.DataFrame(doc["data"], columns=doc["columns"])
    for c in doc.get("tuples", []):
        frame[c] = [tuple(v) if isinstance(v, list) else v for v in frame[c]]
    numeric = {c: t for c, t in doc["dtypes"].items() if t != "object"}
    for c, t in numeric.items():  # infinities were written as strings
        if t.startswith("float") and frame[c].dtype == object:
            frame[c] = [float(v) if isinstance(v, str) else v for v in frame[c]]
    return frame.astype(numeric)


#: The largest JSON file a result, a run's meta.json or a session is read from.
MAX_JSON_BYTES = 256 << 20


def read_json(path: Path, what: str) -> Any:
    """The JSON document at ``path``, or a ``ValueError`` naming ``path``: no such ``what``, not a regular file of at
    most ``MAX_JSON_BYTES``, not UTF-8, not valid JSON, or nested too deep to read (``files.read_json``)."""
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"path: no {what} at {str(path)!r}")
    return files.read_json(path, cap=MAX_JSON_BYTES, where=f"path: {path.name}")


def model_meta(lm: LM | MLM, **more: Any) -> dict[str, Any]:
    """What a result records of its model: ``fingerprint`` (model + tokenizer + dtype) and ``backend``
    ("transformers", "vllm"; a masked LM always runs in-process: "transformers"), then ``more``."""
    return {"fingerprint": getattr(lm, "fingerprint", ""),
            "backend": getattr(getattr(lm, "backend", None), "kind", "transformers"), **more}


def macro_ci(accuracy: Any, n: Any, z: float = 1.96) -> tuple[float, float, float]:
    """The mean of independent accuracies (one per group of ``n`` items) and its normal-approximation CI.

    Args:
        accuracy: per-group accuracies in [0, 1] (one group: a plain accuracy).
        n: items per group.
        z: the normal quantile (1.96: 95%).

    Returns:
        (mean, low, high), the bounds clipped to [0, 1]: ``se = sqrt(sum(p (1 - p) / n)) / groups``.

    >>> [round(v, 4) for v in macro_ci([0.5], [100])]
    [0.5, 0.402, 0.598]
    """
    p, n = np.asarray(accuracy, dtype=float), np.asarray(n, dtype=float)
    mean = float(p.mean())
    se = float(np.sqrt(np.sum(p * (1 - p) / n)) / len(p))
    return mean, max(0.0, mean - z * se), min(1.0, mean + z * se)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, pd.Series):
        return {str(k): _cell(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _is_frame(f: dataclasses.Field) -> bool:
    return f.type in ("pd.DataFrame", pd.DataFrame)


class JSONResult:
    """Mixin for result dataclasses: ``save(path)`` writes ``*.json``, ``load(path)`` reads it back."""

    def _save_json(self, path: Path) -> Path:
        doc: dict[str, Any] = {"type": type(self).__name__}
        dtypes, tuples = {}, {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not _is_frame(f):
                doc[f.name] = value
                continue
            frame = frame_to_json(value)
            doc[f.name] = [dict(zip(frame["columns"], row)) for row in frame["data"]]
            dtypes[f.name] = frame["dtypes"]
            tuples[f.name] = frame.get("tuples", [])
        doc["dtypes"], doc["tuples"] = dtypes, tuples
        path.write_text(json.dumps(doc, indent=1, default=_plain))
        return path

    def save(self, path: str | Path) -> Path:
        """Write every frame and field to ``*.json`` (``load`` reads it back)."""
        path = Path(path)
        if path.suffix != ".json":
            raise ValueError(f"path: expected a .json file name, got {path.name!r}")
        return self._save_json(path)

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Read a result written by ``save`` (``ValueError`` naming ``path`` if it is not one)."""
        path = Path(path)
        doc = read_json(path, "file")
        if not isinstance(doc, dict) or doc.get("type", cls.__name__) != cls.__name__:
            raise ValueError(f"path: {path.name} is not a saved {cls.__name__}")
        fields = dataclasses.fields(cls)
        missing = [f.name for f in fields if f.name not in doc and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ValueError(f"path: {path.name} is not a saved {cls.__name__} (missing {missing})")
        values = {}
        for f in (f for f in fields if f.name in doc):
            where = f"path: {path.name}: {f.name}"
            if _is_frame(f):
                try:
                    values[f.name] = _read_frame(doc, f.name)
                except (TypeError, ValueError, KeyError, AttributeError) as err:
                    raise ValueError(f"{where}: not a saved table ({str(err)[:200]})") from None
            elif not _fits(doc[f.name], str(f.type)):
                raise ValueError(f"{where}: expected {f.type}, got {json.dumps(doc[f.name], default=str)[:80]}")
            else:
                values[f.name] = doc[f.name]
        options = values.get("options")
        for name in OPTION_INDEX_FIELDS:
            index = values.get(name)
            if isinstance(index, int) and isinstance(options, list) and not 0 <= index < len(options):
                raise ValueError(f"path: {path.name}: {name}: {index} is not an index into the "
                                 f"{len(options)} options")
        try:
            return cls(**values)
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            raise ValueError(f"path: {path.name} is not a saved {cls.__name__} ({str(err)[:200]})") from None


#: Fields of a result that index into its ``options`` (checked on load).
OPTION_INDEX_FIELDS = ("gold", "against")
_SCALARS = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,),
            "list": (list,), "None": (type(None),)}


def _fits(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a field's annotation ("str", "int | None", "list[str]", "dict[str, float]", ...;
    a type JSON cannot hold, such as ``np.ndarray``, is the class's to convert)."""
    for alt in (a.strip() for a in annotation.split("|")):
        outer, _, inner = alt.partition("[")
        args = [a.strip() for a in inner.rstrip("]").split(",") if a.strip() not in ("", "...")]
        if outer in ("list", "tuple"):
            if isinstance(value, list) and all(_fits(v, args[0]) for v in value):
                return True
        elif outer == "dict":
            if isinstance(value, dict) and (len(args) < 2 or all(_fits(v, args[1]) for v in value.values())):
                return True
        elif outer not in _SCALARS:
            return True
        elif isinstance(value, _SCALARS[outer]) and (outer in ("bool", "None") or not isinstance(value, bool)):
            return True
    return False


def _read_frame(doc: dict, name: str) -> pd.DataFrame:
    value = doc[name]
    if isinstance(value, dict):  # {"columns", "dtypes", "data"} (WhyResult files before records)
        return frame_from_json(value)
    dtypes = doc.get("dtypes", {}).get(name, {})
    columns = list(dtypes) or list(dict.fromkeys(k for r in value for k in r))
    return frame_from_json({"columns": columns, "dtypes": dtypes, "tuples": doc.get("tuples", {}).get(name, []),
                            "data": [[r.get(c) for c in columns] for r in value]})
