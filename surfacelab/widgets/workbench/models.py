"""The Workbench's models (a part of the ``Workbench``): the model pickers and the server box, each model loaded once
per workbench and server with progress in the widget; a model that fails to load becomes a message and the views keep
the one they had. The API key goes only to a server the person gave (an argument, the box, or the "send my API key"
button); in the app the server is fixed and the box never read."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import ipywidgets as w

from ...backends.credentials import SERVER_ENV, normalize_url
from ...models import DEFAULT_LM, DEFAULT_MLM, list_presets, load_lm, load_mlm
from ..app import NO_SERVER, AppPolicy
from ..kit.layout import classed
from .inputs import Problem
from .timing import Load, StepClock
from .updates import ViewState

if TYPE_CHECKING:
    from .host import Host


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
    """The models of a ``Workbench``: ``lm`` and ``mlm`` (the ones the views use), the pickers and the server box.

    Args:
        host: the workbench (``Host``): the views marked stale while a model loads, its progress bar and status line.
        lm, mlm: a loaded model, a preset / folder name, or None (the default preset).
        server: the causal LM's server URL, or None (in this kernel).
        api_key: the API key of ``server`` or of a server typed into the box (kept here, never shown or saved).
        key_for_server: whether ``api_key`` may go to ``server`` (False for a server only a file names).
        policy: in the app the causal LM's server is fixed for the workbench's life and the box is never read.
    """

    def __init__(self, host: Host, lm: Any, mlm: Any, *, server: str | None, api_key: str | None,
                 key_for_server: bool, policy: AppPolicy) -> None:
        self.host, self.policy = host, policy
        self._api_key = api_key
        server = (server or "").strip()
        # the servers the person gave (this argument, typed in the box, confirmed): the only ones the key goes to
        self._trusted = {normalize_url(server)} if server and key_for_server else set()
        self._loaded: dict[tuple[str, str, str], Any] = {}  # (kind, name, server URL or "") -> model
        self._failed: dict[tuple[str, str, str], Problem] = {}  # models that failed to load, until retried
        self._loads: list[Load] = []  # the loads not reported yet (``take_loads``)
        self.lm = self.resolve(lm, "causal", server)
        self.mlm = self.resolve(mlm, "masked")
        for load in self._loads:  # loaded here, before any update: the first update's breakdown names them
            load.before = True
        # in the app, the causal LM's server for the workbench's life ("": in this kernel); None: the server box's
        self.fixed_server = server_url(self.lm) if policy.app else None
        presets = list_presets()
        causal = presets.loc[presets["kind"] == "causal", "preset"].tolist()
        masked = presets.loc[presets["kind"] == "masked", "preset"].tolist()
        self.lm_picker = w.Dropdown(options=list(dict.fromkeys(causal + [self.lm.name])), value=self.lm.name,
                                    description="causal LM")
        # continuous_update=False: a URL is tried when typed out (Enter or leaving the box), not per keystroke
        self.server_box = w.Text(value=server_url(self.lm), description="server", continuous_update=False,
                                 placeholder="in-process, or a vLLM URL",
                                 tooltip="empty: the causal LM runs in this kernel; a vLLM server's URL (e.g. "
                                         "http://127.0.0.1:8000/v1): it scores the causal LM there; the API key "
                                         "comes from Workbench(api_key=...) or $SURFACELAB_API_KEY (for "
                                         "$SURFACELAB_SERVER) and is never shown or saved")
        if policy.app:  # what the app set, shown; the box is never read (see ``wanted``)
            self.server_box.value, self.server_box.disabled = server_url(self.lm) or NO_SERVER, True
            self.server_box.tooltip = "the app's server, set by whoever runs the app (make app SERVER=...)"
        self.trust_button = w.Button(description="send my API key to this server", icon="key",
                                     layout=w.Layout(display="none", width="auto"),
                                     tooltip="this server came from a file and was contacted without your key")
        self.mlm_picker = w.Dropdown(options=list(dict.fromkeys(masked + [self.mlm.name])), value=self.mlm.name,
                                     description="masked LM")
        classed([(self.lm_picker, "sl-lm-picker"), (self.server_box, "sl-server"), (self.mlm_picker, "sl-mlm-picker"),
                 (self.trust_button, "sl-trust-server")])
        self.lm_picker.observe(lambda _: host.edited(0), "value")
        self.mlm_picker.observe(lambda _: host.edited(0), "value")
        if not policy.app:  # in the app the server is fixed: what the box receives is never read
            self.server_box.observe(self._server_changed, "value")
            self.trust_button.on_click(lambda _: self.trust())

    def resolve(self, value: Any, kind: str, server: str = "",
                progress: Callable[[float, str], None] | None = None) -> Any:
        """A loaded model for ``value`` (None: the default preset; a causal one on ``server`` when given),
        loaded once per workbench and server; each load, timed step by step, waits in ``take_loads``."""
        if value is None or isinstance(value, (str, Path)):
            name = str(value) if value is not None else (DEFAULT_LM if kind == "causal" else DEFAULT_MLM)
            key = (kind, name, server)
            if key not in self._loaded:
                clock = StepClock(name + (f" on {server}" if server else ""), progress)
                try:
                    if kind == "causal":
                        remote = {"server": server, "api_key": self.key_for(server)} if server else {}
                        self._loaded[key] = load_lm(name, progress=clock, **remote)
                    else:
                        self._loaded[key] = load_mlm(name, progress=clock)
                finally:
                    self._loads.append(clock.done(loaded=key in self._loaded))
            return self._loaded[key]
        if server and server != server_url(value):
            raise ValueError(f"server: {server!r} given with an LM loaded "
                             f"{'on ' + server_url(value) if server_url(value) else 'in-process'}; "
                             "pass the model's name instead, or no server")
        self._loaded[(kind, value.name, server_url(value))] = value
        return value

    def key_for(self, server: str) -> str | None:
        """The workbench's API key if ``server`` is one the person gave (``server=``, typed into the box, or
        confirmed with the "send my API key" button), else None: ``load_lm`` then sends ``$SURFACELAB_API_KEY``
        only if ``$SURFACELAB_SERVER`` names that server. A URL from a file never gets a key by itself."""
        try:
            return self._api_key if normalize_url(server) in self._trusted else None
        except ValueError:
            return None

    def trust(self, url: str | None = None) -> None:
        """Let the workbench's API key go to ``url`` (default: the server box's): what the "send my API key to
        this server" button does for a server that came from a file. The model loaded there without the key (or
        that failed without it) is loaded again."""
        url = normalize_url(url if url is not None else self.server_box.value)
        self._trusted.add(url)
        for key in [k for k in (*self._loaded, *self._failed) if k[2] and normalize_url(k[2]) == url]:
            self._loaded.pop(key, None)
            self._failed.pop(key, None)
        self._show_trust()
        self.host.score()

    def _server_changed(self, _change: Any) -> None:
        """The server box changed: a URL typed by the person is theirs to send the key to; one set from a file (an
        example, a saved state: set while the workbench holds its updates) is not, until confirmed."""
        url = self.server_box.value.strip()
        if url and not self.host.holding_edits:
            try:
                self._trusted.add(normalize_url(url))
            except ValueError:
                pass  # the load says what is wrong with the URL
        self._show_trust()
        self.host.edited(0)

    def _show_trust(self) -> None:
        """The "send my API key" button: shown while the server in the box came from a file and a key is held."""
        url = self.server_box.value.strip()
        show = bool(url and self._api_key) and self.key_for(url) is None
        self.trust_button.layout.display = None if show else "none"

    def wanted(self, kind: str) -> tuple[str, str, str]:
        """The model the pickers (and the server box; in the app, the workbench's fixed server) ask for: (kind, name,
        server URL or "")."""
        if kind == "causal":
            fixed = self.fixed_server
            return kind, self.lm_picker.value, self.server_box.value.strip() if fixed is None else fixed
        return kind, self.mlm_picker.value, ""

    def changed(self) -> dict[str, bool]:
        """Whether the pickers ask for another model than the views use, by what a view ``needs`` ("lm", "mlm")."""
        return {"lm": self.wanted("causal") != ("causal", self.lm.name, server_url(self.lm)),
                "mlm": self.mlm_picker.value != self.mlm.name}

    @contextmanager
    def _loading(self, name: str) -> Iterator[Callable[[float, str], None]]:
        """Show a model load in the workbench's progress bar and status line ("loading <name>: <step> · <n> s",
        the name once: the load's steps do not repeat it), with the seconds elapsed."""
        start = time.monotonic()
        state = {"step": "starting", "fraction": 0.0}
        done = threading.Event()
        line = self.host.status_line

        def show() -> None:
            line.report(state["fraction"], f"loading {name}: {state['step']} · {time.monotonic() - start:.0f} s")

        def report(fraction: float, step: str) -> None:
            state["fraction"], state["step"] = min(max(float(fraction), 0.0), 1.0), step
            show()

        def tick() -> None:
            while not done.wait(1.0):
                show()

        ticker = threading.Thread(target=tick, daemon=True, name="surfacelab-loading")
        line.progress.bar_style = "info"
        show()
        ticker.start()
        try:
            yield report
        finally:
            done.set()
            line.progress.bar_style = ""

    def load(self) -> list[Problem]:
        """Load what the pickers ask for. A model that fails (a bad or unreachable server, a missing folder)
        becomes a message, and the views keep the model they had; it is tried again once ``forget_failures`` ran
        (Score, ``update()``).

        Returns:
            The problems, one per model that could not be loaded.
        """
        out = []
        for kind, attr in (("causal", "lm"), ("masked", "mlm")):
            key = self.wanted(kind)
            if key not in self._loaded and key not in self._failed:
                try:
                    with self._loading(key[1] + (f" on {key[2]}" if key[2] else "")) as report:
                        for v in self.host.views.values():  # the views that read this model
                            if v.state != ViewState.EMPTY and attr in v.needs:
                                v.set_state(ViewState.STALE, "loading model…")
                        self.resolve(key[1], kind, key[2], report)
                except Exception as err:  # a model that fails to load must not kill the UI
                    self._failed[key] = Problem(load_failure(key, err, getattr(self, attr)), kind="model",
                                                blocking=False)
            if key in self._failed:
                out.append(self._failed[key])
            else:
                setattr(self, attr, self._loaded[key])
        return out

    def take_loads(self) -> list[Load]:
        """The loads not reported yet, in order (the constructor's, then those of ``load``), now reported."""
        loads, self._loads = self._loads, []
        return loads

    def forget_failures(self) -> None:
        """Try the models that failed to load again at the next load (Score, ``update()``)."""
        self._failed.clear()
