"""The README's set-up commands, run as a user runs them (``make``), where they can fail without a browser."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.process


def make(target: str, *variables: str) -> subprocess.CompletedProcess:
    """``make <target>`` as a user runs it, set-up treated as done (``-o <venv>/.installed``)."""
    venv = Path(sys.prefix)
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "-o", f"{venv}/.installed", target,
                           f"VENV={venv}", *variables], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("target", ["lab", "app"])
def test_make_lab_or_app_on_a_taken_port_says_so_and_prints_no_url(tmp_path, target):
    # jupyter's bind failed after make lab had printed a URL that would never work
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = make(target, f"PORT={port}", f"{target.upper()}_DIR={tmp_path / target}", "OPEN=0")
    assert run.returncode != 0
    assert "http" not in run.stdout + run.stderr
    assert f"make {target}: port {port} on 127.0.0.1 is in use" in run.stderr and f"PORT={port + 1}" in run.stderr
    assert not (tmp_path / target).exists()  # nothing set up for a server that will not start


def test_make_app_with_a_server_that_does_not_answer_fails_before_a_url(tmp_path):
    # every visitor's kernel would fail on it; make app says so once, in the terminal
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once the socket is closed
    server = f"http://127.0.0.1:{closed}/v1"
    run = make("app", f"SERVER={server}", f"PORT={closed}", f"APP_DIR={tmp_path / 'app'}")
    assert run.returncode != 0
    assert f"make app: SERVER={server} could not score smollm2-135m" in run.stderr, run.stderr
    assert "unreachable" in run.stderr  # the reason, from surfacelab score
    assert "surfacelab app:" not in run.stdout and not (tmp_path / "app").exists()


def test_make_app_with_a_cap_that_is_not_a_number_fails_before_a_url(tmp_path):
    # every visitor's kernel would refuse it; make app says so once, in the terminal, naming the variable
    run = make("app", "APP_MAX_ITEMS=lots", f"PORT={_free_port()}", f"APP_DIR={tmp_path / 'app'}")
    assert run.returncode != 0
    assert "$SURFACELAB_MAX_ITEMS: expected a positive whole number or 'off', got 'lots'" in run.stderr, run.stderr
    assert "APP_MAX_ITEMS" in run.stderr and "http" not in run.stdout and not (tmp_path / "app").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
