"""``toolwire serve --http`` is secure by default: Host/Origin allowlists, no
unauthenticated non-loopback bind, bearer tokens, bounded bodies and body time."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from tests.http_support import (
    LEGACY_HEADERS,
    http_host,
    initialize_body,
    modern_request,
    run_host_expect_exit,
)

TIMEOUT = httpx.Timeout(60.0)


def test_bad_host_is_421_and_bad_origin_403(tmp_path: Path) -> None:
    with http_host(
        tmp_path, ["--allowed-host", "tools.example", "--allowed-origin", "https://app.example"]
    ) as h:
        body, headers = modern_request(1, "tools/list")
        r = httpx.post(h.url, json=body, headers={**headers, "Host": "evil.example.com"})
        assert r.status_code == 421
        assert r.json()["error"]["code"] == -32600 and r.json()["id"] is None
        # DNS rebinding: the page's Origin and Host both name the attacker's domain
        r = httpx.post(
            h.url,
            json=body,
            headers={**headers, "Host": "evil.example.com", "Origin": "http://evil.example.com"},
        )
        assert 400 <= r.status_code < 500
        for origin in ("http://evil.example.com", "null", "https://app.example.evil"):
            r = httpx.post(h.url, json=body, headers={**headers, "Origin": origin})
            assert r.status_code == 403, origin
            message = r.json()["error"]["message"]
            assert repr(origin) in message and "--allowed-origin" in message, message
        # loopback names and the configured additions pass
        port = h.hostport.rsplit(":", 1)[1]
        for host_header, origin in (
            (h.hostport, f"http://{h.hostport}"),
            (f"localhost:{port}", f"http://localhost:{port}"),
            ("tools.example", "https://app.example"),
            (f"tools.example:{port}", None),
        ):
            hdrs = {**headers, "Host": host_header}
            if origin:
                hdrs["Origin"] = origin
            r = httpx.post(h.url, json=body, headers=hdrs)
            assert r.status_code == 200, (host_header, origin, r.text)


def test_non_loopback_bind_without_auth_is_refused(tmp_path: Path) -> None:
    code, err = run_host_expect_exit(tmp_path, ["--http", "0.0.0.0:0", "--sandbox", "none"])
    assert code == 2
    assert "without authentication" in err and "--allow-unauthenticated" in err


def test_a_host_that_does_not_start_exits_with_its_reason(tmp_path: Path) -> None:
    """A start-up failure in the ASGI lifespan (here a tools module that does not
    import) ends ``serve --http`` with exit code 2 and the reason, as on stdio; uvicorn
    exits with SystemExit(3) then, which once escaped as a traceback and exit code 1."""
    code, err = run_host_expect_exit(
        tmp_path,
        ["--http", "127.0.0.1:0", "--sandbox", "none", "--tools", "no_such_module_xyz"],
    )
    assert code == 2, err
    assert "no_such_module_xyz" in err and "Traceback" not in err


def test_bearer_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    root = tmp_path / "root"
    root.mkdir()
    with http_host(root, ["--token-file", str(token_file)]) as h:
        body, headers = modern_request(1, "tools/list")
        r = httpx.post(h.url, json=body, headers=headers)
        assert r.status_code == 401
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith("Bearer") and "error=" not in challenge  # RFC 6750 §3.1
        r = httpx.post(h.url, json=body, headers={**headers, "Authorization": "Bearer nope"})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
        r = httpx.post(h.url, json=body, headers={**headers, "Authorization": "Basic czNjcmV0"})
        assert r.status_code == 401
        r = httpx.post(
            h.url, json=body, headers={**headers, "Authorization": "Bearer s3cret-token"}
        )
        assert r.status_code == 200 and "result" in r.json()
        # the legacy leg needs it on every request too
        r = httpx.post(h.url, json=initialize_body(), headers=LEGACY_HEADERS)
        assert r.status_code == 401
        assert httpx.get(h.base + "/healthz").status_code == 200  # probes need no token


def test_token_from_environment(tmp_path: Path) -> None:
    with http_host(tmp_path, env={"TOOLWIRE_TOKEN": "from-env"}) as h:
        body, headers = modern_request(1, "tools/list")
        assert httpx.post(h.url, json=body, headers=headers).status_code == 401
        r = httpx.post(h.url, json=body, headers={**headers, "Authorization": "Bearer from-env"})
        assert r.status_code == 200


def test_token_makes_non_loopback_bind_allowed(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("t0ken")
    root = tmp_path / "root"
    root.mkdir()
    with http_host(root, ["--token-file", str(token_file)], listen="0.0.0.0:0") as h:
        port = h.hostport.rsplit(":", 1)[1]
        body, headers = modern_request(1, "tools/list")
        r = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json=body,
            headers={**headers, "Authorization": "Bearer t0ken"},
        )
        assert r.status_code == 200


def test_body_size_and_deadline(tmp_path: Path) -> None:
    config = tmp_path / "toolwire.toml"
    config.write_text("[http]\nbody_timeout = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    with http_host(root, ["--config", str(config), "--max-message-size", "2048"]) as h:
        body, headers = modern_request(1, "tools/call", {"name": "steps", "arguments": {"n": 1}})
        body["params"]["arguments"]["pad"] = "x" * 4096
        r = httpx.post(h.url, json=body, headers=headers)
        assert r.status_code == 413
        # chunked, so no Content-Length to refuse up front: counted as it arrives

        def chunks():  # type: ignore[no-untyped-def]
            for _ in range(8):
                yield b" " * 1024

        r = httpx.post(h.url, content=chunks(), headers=headers)
        assert r.status_code == 413
        # a client that sends only part of its body: 408 when the deadline passes
        host, port = h.hostport.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as s:
            s.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: " + h.hostport.encode() + b"\r\n"
                b"Content-Type: application/json\r\nAccept: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"jsonrpc"'
            )
            reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
        # and the host keeps serving
        body, headers = modern_request(2, "tools/list")
        assert httpx.post(h.url, json=body, headers=headers).status_code == 200


@pytest.mark.parametrize("value", ["[::1]:0"])
def test_ipv6_loopback_listen(tmp_path: Path, value: str) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with http_host(tmp_path, listen=value) as h:
        assert h.url.startswith("http://[::1]:")
        body, headers = modern_request(1, "tools/list")
        assert httpx.post(h.url, json=body, headers=headers).status_code == 200


def test_a_token_file_others_can_read_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolwire.host.serve.http.config import read_token_file

    token = tmp_path / "token"
    token.write_text("s3cret\n")
    token.chmod(0o600)
    assert read_token_file(token) == "s3cret"
    assert capsys.readouterr().err == ""
    token.chmod(0o640)
    assert read_token_file(token) == "s3cret"
    err = capsys.readouterr().err
    assert "can be read by other users (mode 640)" in err and "chmod 600" in err, err
    assert "s3cret" not in err
