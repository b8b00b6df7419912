"""The Workbench's models: loaded once per workbench and server, with progress in the widget; a model that fails
to load becomes a message and the views keep the one they had (a mixin of ``Workbench``)."""

from __future__ import annotations

import html
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ...backends.vllm import SERVER_ENV, normalize_url
from ...models import DEFAULT_LM, DEFAULT_MLM, load_lm, load_mlm
from .inputs import Problem
from .updates import ViewState


def server_url(lm: Any) -> str:
    """The URL of the server ``lm`` scores on ("" for an in-process model)."""
    return str(getattr(getattr(lm, "backend", None), "url", "") or "")


def default_server(lm: Any, server: str | None) -> str | None:
    """The server a new workbench's causal LM scores on: ``server`` when given; with neither an LM nor a server,
    the one ``$SURFACELAB_SERVER`` names (``make app SERVER=...``: every visitor's kernel scores on one shared
    server), else None (in-process). ``$SURFACELAB_API_KEY`` goes only to that same server (``load_lm``).

    Raises:
        ValueError: ``$SURFACELAB_SERVER`` is used and is not an http(s) URL.
    """
    if server is not None or lm is not None:
        return server
    named = os.environ.get(SERVER_ENV, "").strip()
    if not named:
        return None
    try:
        return normalize_url(named)
    except ValueError as err:  # say where the bad URL came from: no argument of the call names it
        raise ValueError(f"${SERVER_ENV}: {err}") from None


def load_failure(key: tuple[str, str, str], err: Exception, current: Any) -> str:
    """The message for a model that could not be loaded: what was asked, why, and what the views keep using."""
    kind, name, server = key
    what = (f"The {'causal' if kind == 'causal' else 'masked'} LM {name!r}"
            + (f" on the server {server}" if server else ""))
    why = str(err) if isinstance(err, (ValueError, ConnectionError, OSError)) else f"{type(err).__name__}: {err}"
    why = " ".join(why.split())  # a server's error page arrives as a page of HTML: one line, cut short
    why = why if len(why) <= 300 else why[:299] + "…"
    where = f" on {server_url(current)}" if server_url(current) else ""
    return (f"{what} could not be loaded: {why}. The views still use {current.name}{where}; fix the "
            f"{'URL' if server else 'model'} or press Score to try again.")


class ModelSlots:
    """The model part of ``Workbench``: ``_resolve``, ``_wanted``, ``_load_models`` and the Score retry."""

    def _resolve(self, value: Any, kind: str, server: str = "",
                 progress: Callable[[float, str], None] | None = None) -> Any:
        """A loaded model for ``value`` (None: the default preset; a causal one on ``server`` when given),
        loaded once per workbench and server."""
        if value is None or isinstance(value, (str, Path)):
            name = str(value) if value is not None else (DEFAULT_LM if kind == "causal" else DEFAULT_MLM)
            key = (kind, name, server)
            if key not in self._models:
                if kind == "causal":
                    remote = {"server": server, "api_key": self._key_for(server)} if server else {}
                    self._models[key] = load_lm(name, progress=progress, **remote)
                else:
                    self._models[key] = load_mlm(name, progress=progress)
            return self._models[key]
        if server and server != server_url(value):
            raise ValueError(f"server: {server!r} given with an LM loaded "
                             f"{'on ' + server_url(value) if server_url(value) else 'in-process'}; "
                             "pass the model's name instead, or no server")
        self._models[(kind, value.name, server_url(value))] = value
        return value

    def _key_for(self, server: str) -> str | None:
        """The workbench's API key if ``server`` is one the person gave (``server=``, typed into the box, or
        confirmed with the "send my API key" button), else None: ``load_lm`` then sends ``$SURFACELAB_API_KEY``
        only if ``$SURFACELAB_SERVER`` names that server. A URL from a file never gets a key by itself."""
        try:
            return self._api_key if normalize_url(server) in self._trusted else None
        except ValueError:
            return None

    def trust_server(self, url: str | None = None) -> None:
        """Let the workbench's API key go to ``url`` (default: the server box's): what the "send my API key to
        this server" button does for a server that came from a file. The model loaded there without the key (or
        that failed without it) is loaded again."""
        url = normalize_url(url if url is not None else self.server_box.value)
        self._trusted.add(url)
        for key in [k for k in (*self._models, *self._failed) if k[2] and normalize_url(k[2]) == url]:
            self._models.pop(key, None)
            self._failed.pop(key, None)
        self._show_trust()
        self._retry()

    def _server_changed(self, _change: Any) -> None:
        """The server box changed: a URL typed by the person is theirs to send the key to; one set from a file (an
        example, a saved state: set while the workbench holds its updates) is not, until confirmed."""
        url = self.server_box.value.strip()
        if url and not self._hold:
            try:
                self._trusted.add(normalize_url(url))
            except ValueError:
                pass  # the load says what is wrong with the URL
        self._show_trust()
        self.edited(0)

    def _show_trust(self) -> None:
        """The "send my API key" button: shown while the server in the box came from a file and a key is held."""
        url = self.server_box.value.strip()
        show = bool(url and self._api_key) and self._key_for(url) is None
        self.trust_button.layout.display = None if show else "none"

    def _wanted(self, kind: str) -> tuple[str, str, str]:
        """The model the pickers (and the server box; in the app, the workbench's fixed server) ask for: (kind, name,
        server URL or "")."""
        if kind == "causal":
            fixed = self._fixed_server
            return kind, self.lm_picker.value, self.server_box.value.strip() if fixed is None else fixed
        return kind, self.mlm_picker.value, ""

    @contextmanager
    def _loading(self, name: str) -> Iterator[Callable[[float, str], None]]:
        """Show a model load in the progress bar and the status line, with the seconds elapsed."""
        start = time.monotonic()
        state = {"step": "starting", "fraction": 0.0}
        done = threading.Event()

        def show() -> None:
            self.progress.value = state["fraction"]
            self.status.value = (f"<i>loading {html.escape(name)}: {html.escape(state['step'])} · "
                                 f"{time.monotonic() - start:.0f} s</i>")

        def report(fraction: float, step: str) -> None:
            state["fraction"], state["step"] = min(max(float(fraction), 0.0), 1.0), step
            show()

        def tick() -> None:
            while not done.wait(1.0):
                show()

        ticker = threading.Thread(target=tick, daemon=True, name="surfacelab-loading")
        self.progress.bar_style = "info"
        show()
        ticker.start()
        try:
            yield report
        finally:
            done.set()
            self.progress.bar_style = ""

    def _load_models(self) -> list[Problem]:
        """Load what the pickers ask for. A model that fails (a bad or unreachable server, a missing folder)
        becomes a message, and the views keep the model they had; it is tried again on Score / ``update()``.

        Returns:
            The problems, one per model that could not be loaded.
        """
        out, loaded, spent = [], [], 0.0
        for kind, attr in (("causal", "lm"), ("masked", "mlm")):
            key = self._wanted(kind)
            if key not in self._models and key not in self._failed:
                began = time.monotonic()
                try:
                    with self._loading(key[1] + (f" on {key[2]}" if key[2] else "")) as report:
                        for v in self.views.values():  # the views that read this model
                            if v.state != ViewState.EMPTY and attr in v.needs:
                                v.set_state(ViewState.STALE, "loading model…")
                        self._resolve(key[1], kind, key[2], report)
                    loaded.append(key[1])
                except Exception as err:  # a model that fails to load must not kill the UI
                    self._failed[key] = Problem(load_failure(key, err, getattr(self, attr)), kind="model",
                                                blocking=False)
                spent += time.monotonic() - began
            if key in self._failed:
                out.append(self._failed[key])
            else:
                setattr(self, attr, self._models[key])
        self.last_load = (" and ".join(loaded), spent) if spent else None
        return out

    def _retry(self) -> None:
        """Score: try models that failed to load again, then update."""
        self._failed.clear()
        self.updates.request()
