"""fetch_document against a real local HTTP server, and the SSRF rules on real addresses.

No test sends a packet beyond loopback: the guard below fails any connection to another address,
so a refused target is proven refused before a connection is attempted.
"""

import ipaddress
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from littlebird.documents.errors import DocumentError
from littlebird.documents.fetch import address_refusal, fetch_document, looks_like_address, parse_url

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"
_real_create_connection = socket.create_connection


class _Handler(BaseHTTPRequestHandler):
    """Routes: fixture pages with various headers, redirects, errors, slow and large bodies."""

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(
        self, body: bytes, content_type: str | None = "text/html; charset=utf-8", status: int = 200, length: bool = True
    ):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        route = parts.path
        if route.startswith("/page/"):
            name = route.removeprefix("/page/")
            self._send((PAGES / name).read_bytes(), query.get("type", ["text/html"])[0])
        elif route == "/redirect":
            self.send_response(int(query.get("status", ["302"])[0]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif route == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
        elif route == "/text":
            self._send("Plain notes.\n\nThe harbour library opens at nine.".encode(), "text/plain; charset=utf-8")
        elif route == "/pdf":
            self._send(b"%PDF-1.4 fake", "application/pdf")
        elif route == "/image":
            self._send(b"GIF89a\x01\x00\x01\x00", "image/gif")
        elif route == "/missing":
            self._send(b"not here", "text/html", status=404)
        elif route == "/empty":
            self._send(b"", "text/html")
        elif route == "/notype":
            self._send("<html><body><p>No content type here.</p><p>Second.</p></body></html>".encode(), None)
        elif route == "/big":
            size = int(query["mb"][0]) * 1_000_000
            paragraph = b"<p>" + b"The lake is deep and the water is clear. " * 24 + b"</p>\n"
            body = b"<html><body>" + paragraph * (size // len(paragraph) + 1) + b"</body></html>"
            self._send(body, length="nolength" not in query)
        elif route == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(30):
                self.wfile.write(b"<p>drip</p>")
                self.wfile.flush()
                time.sleep(0.1)
        else:
            self._send(b"unknown route", "text/plain", status=404)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Fail the test on any attempt to connect beyond loopback; record the attempts."""
    attempts = []

    def guarded(address, *args, **kwargs):
        attempts.append(address[0])
        if not ipaddress.ip_address(address[0]).is_loopback:
            pytest.fail(f"a connection to {address[0]} was attempted")
        return _real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)
    return attempts


def fake_dns(monkeypatch, answers: dict[str, list[str]]):
    """Make chosen host names resolve to chosen addresses without asking a DNS server."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            family = lambda a: socket.AF_INET6 if ":" in a else socket.AF_INET  # noqa: E731
            return [(family(a), socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]
        if host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


# --- pages that must come through ---------------------------------------------------------------


def test_fetches_korean_utf8_page(server):
    raw = fetch_document(f"{server}/page/ko_wiki_sejong.html?type=text/html;%20charset=utf-8", allow_local=True)
    assert raw.is_html and raw.encoding == "utf-8"
    assert "훈민정음은 1443년에 완성되었고" in raw.text
    assert raw.source.startswith(server) and raw.fetch_seconds > 0


def test_euc_kr_label_decodes_cp949_only_syllables(server):
    raw = fetch_document(f"{server}/page/cp949_jeju.html?type=text/html;%20charset=euc-kr", allow_local=True)
    assert raw.encoding == "cp949"
    assert "똠방각하" in raw.text and "한라산" in raw.text


def test_cp949_page_without_header_charset_is_detected(server):
    raw = fetch_document(f"{server}/page/cp949_jeju.html", allow_local=True)
    assert raw.encoding == "cp949" and "삼다도" in raw.text


def test_plain_text_and_missing_content_type(server):
    raw = fetch_document(f"{server}/text", allow_local=True)
    assert not raw.is_html and "opens at nine" in raw.text
    assert fetch_document(f"{server}/notype", allow_local=True).is_html


def test_two_megabyte_page_is_read_whole(server):
    raw = fetch_document(f"{server}/big?mb=2", allow_local=True)
    assert len(raw.text) > 2_000_000 and raw.text.endswith("</html>")


def test_redirect_to_a_local_page_is_followed(server):
    raw = fetch_document(f"{server}/redirect?to=/page/en_wiki_baikal.html", allow_local=True)
    assert "Lake Baikal" in raw.text and raw.source.endswith("/page/en_wiki_baikal.html")


def test_address_without_scheme_means_https():
    target = parse_url("example.org/wiki/Page?x=1")
    assert (target.scheme, target.host, target.port, target.path) == ("https", "example.org", 443, "/wiki/Page?x=1")
    target = parse_url("example.org:8080/a")
    assert (target.scheme, target.host, target.port, target.path) == ("https", "example.org", 8080, "/a")
    target = parse_url("https://한국어.example/위키 문서?q=세종")
    assert (target.host, target.path) == (
        "xn--3e0bk47br7k.example",
        "/%EC%9C%84%ED%82%A4%20%EB%AC%B8%EC%84%9C?q=%EC%84%B8%EC%A2%85",
    )


# --- refusals with a sentence for the user -------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/file.txt",
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "file:/etc/passwd",
        "file://localhost/etc/passwd",
        "gopher://example.org/",
        "ssh://example.org",
        "javascript:alert(1)",
        "data:text/html,hi",
    ],
)
def test_only_http_and_https(url, loopback_only):
    with pytest.raises(
        DocumentError, match="Only http and https addresses.*for safety, only public web pages can be fetched"
    ):
        fetch_document(url)
    assert loopback_only == []


def test_other_schemes_get_the_same_refusal_as_internal_addresses():
    refusals = []
    for url in ("file:///etc/passwd", "http://10.0.0.1/"):
        with pytest.raises(DocumentError) as error:
            fetch_document(url)
        refusals.append(str(error.value))
    assert all(r.endswith("for safety, only public web pages can be fetched.") for r in refusals), refusals


@pytest.mark.parametrize(
    "text, address",
    [
        ("https://ko.wikipedia.org/wiki/세종", True),
        ("  http://example.org/a b  ", True),  # typed addresses hold spaces; the fetcher quotes them
        ("file:///etc/passwd", True),
        ("file:/etc/passwd", True),
        ("ftp://example.org/x", True),
        ("FTP://example.org/x", True),
        ("javascript:alert(1)", True),
        ("data:text/html,<h1>hi</h1>", True),
        ("javascript: a language for web pages", False),  # prose, not an address
        ("Note: see https://example.org", False),
        ("file:///etc/passwd\nand a second line", False),  # a document that mentions an address
        ("<p>https://example.org</p>", False),
        ("example.org", False),  # without a scheme: text in the API, an https address in the URL box
        ("", False),
    ],
)
def test_looks_like_address(text, address):
    assert looks_like_address(text) is address


def test_credentials_in_url_are_refused():
    with pytest.raises(DocumentError, match="user name or password"):
        fetch_document("http://admin:secret@example.org/")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "127.1.2.3"])
def test_loopback_refused_by_default(server, host, loopback_only):
    port = server.rsplit(":", 1)[1]
    with pytest.raises(DocumentError, match="loopback address"):
        fetch_document(f"http://{host}:{port}/page/ko_wiki_sejong.html")
    assert loopback_only == []  # refused before connecting, even to this machine


@pytest.mark.parametrize(
    "address, kind",
    [
        ("10.0.0.1", "private"),
        ("192.168.1.1", "private"),
        ("172.16.5.4", "private"),
        ("[fd00::1]", "private"),
        ("169.254.169.254", "link-local"),
        ("[fe80::1]", "link-local"),
        ("224.0.0.251", "multicast"),
        ("[ff02::1]", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "reserved"),
        ("[::ffff:10.0.0.1]", "private"),
        ("[2002:c0a8:0101::1]", "private"),
    ],
)
@pytest.mark.parametrize("allow_local", [False, True])
def test_non_public_addresses_refused_before_connecting(address, kind, allow_local, loopback_only):
    with pytest.raises(DocumentError, match=kind):
        fetch_document(f"http://{address}/latest/meta-data/", allow_local=allow_local)
    assert loopback_only == []


def test_public_address_is_not_refused():
    assert address_refusal("93.184.216.34") is None
    assert address_refusal("2606:2800:220:1:248:1893:25c8:1946") is None


def test_host_name_resolving_to_private_address(monkeypatch, loopback_only):
    fake_dns(monkeypatch, {"intranet.example": ["10.1.2.3"], "mixed.example": ["93.184.216.34", "192.168.0.7"]})
    for host in ("intranet.example", "mixed.example"):
        with pytest.raises(DocumentError, match="private network address"):
            fetch_document(f"https://{host}/")
    assert loopback_only == []


@pytest.mark.parametrize(
    "location, message",
    [
        ("http://10.0.0.1/admin", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fd00::1]:8080/", "private"),
        ("http://internal.example/", "private"),
        ("ftp://127.0.0.1/secret", "Only http and https"),
    ],
)
def test_redirects_are_checked_at_every_hop(server, monkeypatch, loopback_only, location, message):
    fake_dns(monkeypatch, {"internal.example": ["192.168.10.10"]})
    for status in ("302", "307"):
        with pytest.raises(DocumentError, match=message):
            fetch_document(f"{server}/redirect?status={status}&to={location}", allow_local=True)
    assert all(ipaddress.ip_address(a).is_loopback for a in loopback_only)


def test_redirect_to_loopback_refused_without_switch(server, monkeypatch, loopback_only):
    # A public name that redirects to this machine: the hop to 127.0.0.1 must be refused.
    port = server.rsplit(":", 1)[1]
    fake_dns(monkeypatch, {"public.example": ["127.0.0.1"]})
    with pytest.raises(DocumentError, match="loopback"):
        fetch_document(f"http://public.example:{port}/redirect?to=http://127.0.0.1:{port}/page/x")
    assert loopback_only == []


def test_redirect_loop(server):
    with pytest.raises(DocumentError, match="redirected more than"):
        fetch_document(f"{server}/loop", allow_local=True)


def test_unreachable_and_unknown_hosts(monkeypatch):
    fake_dns(monkeypatch, {})
    with pytest.raises(DocumentError, match="could not be found"):
        fetch_document("https://no-such-host.invalid/page")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with pytest.raises(DocumentError, match="refused the connection"):
        fetch_document(f"http://127.0.0.1:{port}/", allow_local=True)


@pytest.mark.parametrize(
    "route, message",
    [
        ("/pdf", "PDF could not be read: it is damaged"),
        ("/image", "image/gif file, not a web page"),
        ("/missing", "404"),
        ("/empty", "empty"),
        ("/big?mb=2", "larger than 1 MB"),
        ("/big?mb=2&nolength=1", "larger than 1 MB"),
    ],
)
def test_bad_pages_give_a_sentence(server, route, message):
    with pytest.raises(DocumentError, match=message) as error:
        fetch_document(f"{server}{route}", allow_local=True, max_bytes=1_000_000)
    assert str(error.value).endswith(".")


def test_time_limit_covers_slow_bodies(server):
    start = time.perf_counter()
    with pytest.raises(DocumentError, match="did not load within 1 seconds"):
        fetch_document(f"{server}/slow", allow_local=True, timeout=1.0)
    assert time.perf_counter() - start < 2.0
