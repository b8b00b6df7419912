"""The README's set-up commands, run as a user runs them (``make``), where they can fail without a browser."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.process


def test_make_lab_on_a_taken_port_says_so_and_prints_no_url(tmp_path):
    # jupyter's bind failed after make lab had printed a URL that would never work
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        venv = Path(sys.prefix)
        run = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "-o", f"{venv}/.installed", "lab",
                              f"VENV={venv}", f"PORT={port}", f"LAB_DIR={tmp_path / 'lab'}", "OPEN=0"],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "http" not in run.stdout + run.stderr
    assert f"port {port} on 127.0.0.1 is in use" in run.stderr and f"PORT={port + 1}" in run.stderr
    assert not (tmp_path / "lab").exists()  # nothing set up for a server that will not start
