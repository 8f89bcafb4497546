"""A hand-written HTTP handler served on 127.0.0.1 for one test or module.

For servers that must answer in a shape no scripted server gives (a vLLM-like
reply with engine figures, a tokenizer behind a key): ``with serving(Handler) as
url`` starts it on a free port in a thread and shuts it down and closes its
socket afterwards, however the test ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of ``handler`` served until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
