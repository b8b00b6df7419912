"""Run a vLLM OpenAI-compatible server from Python (tests, benchmarks, a local workbench): :class:`LocalServer`.

The client that scores through such a server is :class:`surfacelab.backends.vllm.VLLMBackend`.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Sequence

from .credentials import Secret, on_this_machine


class LocalServer:
    """A vLLM OpenAI-compatible server run by this process (tests, benchmarks, a local workbench).

    It runs ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm serve`` script fails on the
    CPU build) in its own process group, which ``stop`` ends whole; the server also gets SIGTERM if
    the process that started it dies. Use it as a context manager.

    Args:
        model_dir: a plain (safetensors) model folder, e.g. a preset's converted copy.
        python: the interpreter of the virtual environment vLLM is installed in.
        port: the port on 127.0.0.1 (default: a free one).
        api_key: start the server with ``--api-key`` (clients must send it).
        served_model_name: the name clients use (default: ``model_dir``).
        args: more command-line arguments for the server.
        log_path: where the server's output goes (default: a temporary file).
    """

    def __init__(self, model_dir: str | os.PathLike, *, python: str | os.PathLike, port: int | None = None,
                 api_key: str | None = None, served_model_name: str | None = None, max_model_len: int = 2048,
                 dtype: str = "float32", args: Sequence[str] = (), log_path: str | os.PathLike | None = None) -> None:
        import tempfile

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._key = Secret(api_key)
        self.cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
                    "--dtype", dtype, "--max-model-len", str(max_model_len), "--enforce-eager",
                    "--host", "127.0.0.1", "--port", str(self.port),
                    *(["--served-model-name", served_model_name] if served_model_name else []), *args]
        self.log_path = str(log_path) if log_path else tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1]
        self.proc: Any = None

    def __repr__(self) -> str:
        state = "running" if self.proc is not None and self.proc.poll() is None else "stopped"
        return f"LocalServer(url={self.url!r}, {state}, log={self.log_path!r})"

    def start(self) -> "LocalServer":
        """Launch the server (returns at once; ``wait`` for it)."""
        import atexit
        import subprocess

        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
        if self._key.value:
            env["VLLM_API_KEY"] = self._key.value  # not on the command line, where `ps` would show it
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, start_new_session=True, preexec_fn=_death_signal())
        atexit.register(self.stop)
        return self

    def wait(self, timeout: float = 600.0) -> None:
        """Block until the server answers ``/health``.

        Raises:
            RuntimeError: the server exited, or was not ready within ``timeout`` seconds (it is then stopped).
        """
        import httpx

        health = self.url[: -len("/v1")] + "/health"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM server exited with code {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(health, timeout=5.0, trust_env=not on_this_machine(health)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vLLM server not ready after {timeout:g} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        """The last ``n`` lines of the server's output."""
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL the server and every process it started, at once."""
        import signal

        if self.proc is not None:
            self._signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the server's process group; SIGKILL what is left after ``grace`` seconds."""
        import signal
        import subprocess

        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self._signal(signal.SIGKILL)  # engine and worker processes that outlived the server
        self.proc.wait()

    def __enter__(self) -> "LocalServer":
        if self.proc is None:
            self.start()
        try:
            self.wait()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``),
    so no server is orphaned; None where that is not available. Resolved here, in the parent: the
    function the child runs between fork and exec imports nothing."""
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)
