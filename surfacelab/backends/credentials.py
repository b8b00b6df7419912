"""Where an API key may go, and the URL rules it is read with: a key goes only to the server it was given for.

An ``api_key=`` argument goes to the server of the same call; ``$SURFACELAB_API_KEY`` goes only to the server
``$SURFACELAB_SERVER`` names (no key at all for any other URL, such as one read from a file). A key is kept in a
``Secret``, which no repr, error message, log line, fingerprint, result or pickle shows. A server on this machine is
reached directly, never through a proxy the environment names.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Environment variable read when no ``api_key`` is given ...
API_KEY_ENV = "SURFACELAB_API_KEY"
#: ... for the server this one names, and for no other.
SERVER_ENV = "SURFACELAB_SERVER"


class Secret:
    """Holds the API key; its repr never shows it."""

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<hidden>" if self.value else "None"


def normalize_url(server: Any) -> str:
    """The completions API root of ``server``: ``http(s)://host:port/v1`` (``/v1`` added to a bare host).

    Raises:
        ValueError: ``server`` is not an http(s) URL.
    """
    if not isinstance(server, str) or not server.strip():
        raise ValueError(f"server: expected an http(s) URL such as 'http://127.0.0.1:8000/v1', got {server!r}")
    parts = urlsplit(server.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"server: expected an http(s) URL such as 'http://127.0.0.1:8000/v1', got {server!r}")
    if parts.username or parts.password:
        raise ValueError("server: put credentials in api_key= (or $SURFACELAB_API_KEY), not in the URL")
    path = parts.path.rstrip("/")
    for tail in ("/completions", "/models"):
        if path.endswith(tail):
            path = path[: -len(tail)]
    return urlunsplit((parts.scheme, parts.netloc, path or "/v1", "", ""))


def server_root(url: str) -> str | None:
    """The server's own root under an API root that ends in ``/v1`` (where vLLM serves ``/metrics`` and its token
    route); None for an API root that does not, whose server root is unknown.

    >>> server_root("http://gpu-box:8000/v1"), server_root("https://lab.example/vllm/v1"), server_root("http://h/api")
    ('http://gpu-box:8000', 'https://lab.example/vllm', None)
    """
    return url[: -len("/v1")] if url.endswith("/v1") else None


def on_this_machine(url: str) -> bool:
    """Whether ``url`` names a loopback host; such a server is reached directly, never through ``$HTTP_PROXY`` /
    ``$HTTPS_PROXY`` / ``$ALL_PROXY`` (set for a registry, with no ``$NO_PROXY``, they would send 127.0.0.1 to the
    proxy).

    >>> on_this_machine("http://127.0.0.1:8000/v1"), on_this_machine("http://localhost:8000"), on_this_machine("http://gpu-box:8000")
    (True, True, False)
    """
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key_from(api_key: str | None, url: str) -> str | None:
    """The key to send to the server at ``url``: ``api_key`` if given (it was given for this server), else
    ``$SURFACELAB_API_KEY`` if ``$SURFACELAB_SERVER`` names this same server, else None.

    Raises:
        ValueError: ``api_key`` is not a non-empty string.
    """
    if api_key is None:
        key, bound = os.environ.get(API_KEY_ENV), os.environ.get(SERVER_ENV)
        if not key or not bound:
            return None
        try:
            return key if normalize_url(bound) == normalize_url(url) else None
        except ValueError:  # a $SURFACELAB_SERVER that is not a URL binds the key to nothing
            return None
    if not isinstance(api_key, str) or not api_key.strip():
        raise ValueError("api_key: expected a non-empty string")
    return api_key
