"""A recording HTTP server on 127.0.0.1, for the tests of what surfacelab contacts (servers, API keys, the app): it
gives one fixed JSON answer and keeps every request it got."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


#: A request as recorded: (method, path, its ``Authorization`` header or None).
Seen = tuple[str, str, "str | None"]


@contextmanager
def recording(body: dict, *, get: int = 200, post: int = 200) -> Iterator[tuple[str, list[Seen]]]:
    """Serve ``body`` (as JSON) to every GET with status ``get`` and to every POST with ``post``; yields (the server's
    API root, ``http://127.0.0.1:<port>/v1``, and the requests it got: (method, path, ``Authorization`` header))."""
    seen: list[Seen] = []
    data = json.dumps(body).encode()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.send_response(get if self.command == "GET" else post)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
