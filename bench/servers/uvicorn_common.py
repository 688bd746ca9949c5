"""The uvicorn settings every contender of bench/http_load.py runs under: those of
``toolwire serve --http`` (toolwire.host.serve.http.serve_http), one worker, uvloop and
httptools when installed (uvicorn's ``auto``)."""

from __future__ import annotations

import sys
from typing import Any


def serve(app: Any) -> None:
    """Run ``app`` on 127.0.0.1:PORT (``sys.argv[1]``) until SIGINT/SIGTERM."""
    import uvicorn

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=3,
        h11_max_incomplete_event_size=64 * 1024,
        ws="none",
        server_header=False,
        proxy_headers=False,
        date_header=False,
    )
