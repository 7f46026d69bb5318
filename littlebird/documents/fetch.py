"""URL -> RawDocument, without letting a URL reach into the machine or the network it runs on.

Every host is resolved before any connection, every address it resolves to is checked, and the
connection goes to the address that was checked (so a second DNS answer cannot swap in another).
Redirects are followed by hand so each hop goes through the same checks.
"""

import http.client
import ipaddress
import re
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from littlebird.documents import formats
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.formats import MAX_FILE_BYTES, MAX_TEXT_BYTES, Format
from littlebird.documents.upload import read_file

MAX_REDIRECTS = 5
FETCH_SECONDS = 10.0  # a page or file and every redirect before it, all together
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Schemes written without "//"; anything else before a colon is a host with a port ("example.org:8080").
_OPAQUE_SCHEME = re.compile(r"^(javascript|data|mailto|file|about|blob|vbscript|tel|urn):", re.IGNORECASE)
_CHUNK = 65536
_HEADERS = {
    "User-Agent": "LittleBirdQA/0.1 (document question answering)",
    "Accept": formats.accept_header(),
    # Compressed bodies would need a second size limit after decompression; plain is simpler.
    "Accept-Encoding": "identity",
}


def looks_like_address(text: str) -> bool:
    """True when ``text`` is one line that starts with a URL scheme ("https://...", "file:///...",
    "ftp://...", "javascript:..."): an address to fetch (or refuse), not a document to read.

    A line such as "javascript: a language" (a space after the colon) stays text.
    """
    text = (text or "").strip()
    if "\n" in text or "\r" in text:
        return False
    opaque = _OPAQUE_SCHEME.match(text)
    return bool(_HAS_SCHEME.match(text)) or bool(opaque and text[opaque.end() : opaque.end() + 1].strip())


@dataclass
class _Target:
    url: str
    scheme: str
    host: str  # ASCII (IDNA) host name or address literal, without brackets
    port: int
    path: str  # path and query, as sent in the request line


def parse_url(url: str) -> _Target:
    """Split ``url`` into what a request needs, refusing anything but http and https.

    An address typed without a scheme ("example.com/page") is taken as https.
    """
    url = (url or "").strip()
    if not url:
        raise DocumentError("Please enter the address of a web page.")
    if not _HAS_SCHEME.match(url) and not _OPAQUE_SCHEME.match(url):
        url = "https://" + url.lstrip("/")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DocumentError(
            f"Only http and https addresses can be fetched, not {scheme}: ones; "
            "for safety, only public web pages can be fetched."
        )
    if parts.username is not None or parts.password is not None:
        raise DocumentError(
            "Addresses with a user name or password cannot be fetched. Please remove them from the address."
        )
    try:
        port = parts.port or (443 if scheme == "https" else 80)
        host = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise DocumentError(f"The address {url!r} is not valid. Please check it.") from None
    if not host:
        raise DocumentError(f"The address {url!r} has no server name. Please check it.")
    # Typed addresses hold spaces and Hangul; the request line takes ASCII only.
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    if parts.query:
        path += "?" + quote(parts.query, safe="/?%:@!$&'()*+,;=-._~")
    return _Target(url=url, scheme=scheme, host=host, port=port, path=path)


def address_refusal(address: str, *, allow_local: bool = False) -> str | None:
    """Why ``address`` must not be contacted (a phrase like "a private network address"), or None.

    ``allow_local`` admits loopback addresses (this machine) for tests and local use; private,
    link-local and the other non-public ranges stay refused, because a QA app never needs them
    and they are where cloud metadata services and internal admin pages live.
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id ("fe80::1%eth0")
    if isinstance(ip, ipaddress.IPv6Address):
        # IPv4 addresses tunnelled in IPv6 reach the IPv4 target, so judge that target.
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            ip = embedded
    if ip.is_loopback:
        return None if allow_local else "a loopback address (this computer)"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private network address"
    if not ip.is_global:  # e.g. carrier-grade NAT (100.64.0.0/10), documentation ranges
        return "a reserved address"
    return None


def resolve_host(host: str, port: int, *, allow_local: bool = False) -> list[str]:
    """All addresses of ``host``, each checked; raises DocumentError if any is refused.

    One refused address refuses the host: a name that answers with both a public and a
    private address is a known way to slip past a check on the first answer only.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise DocumentError(f"The server {host} could not be found. Please check the address.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    for address in addresses:
        refusal = address_refusal(address, allow_local=allow_local)
        if refusal:
            raise DocumentError(
                f"The address {host} points to {refusal} ({address}); for safety, only public web pages can be fetched."
            )
    if not addresses:
        raise DocumentError(f"The server {host} could not be found. Please check the address.")
    return addresses


def _remaining(deadline: float, timeout: float, host: str) -> float:
    left = deadline - time.perf_counter()
    if left <= 0:
        raise DocumentError(f"The page at {host} did not load within {timeout:g} seconds. Please try again later.")
    return left


def _connect(target: _Target, address: str, timeout: float) -> http.client.HTTPConnection:
    """An HTTP(S) connection to ``address`` that still sends ``target.host`` as Host and TLS name."""
    if target.scheme == "https":
        conn = http.client.HTTPSConnection(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
    # http.client looks the host up again when it connects; pin it to the address we checked.
    conn._create_connection = lambda _addr, t, source=None: socket.create_connection((address, target.port), t, source)
    return conn


def _request(target: _Target, addresses: list[str], deadline: float, timeout: float):
    """Send the GET to the first address that accepts a connection; return (connection, response)."""
    last_error: OSError | None = None
    for address in addresses:
        conn = _connect(target, address, _remaining(deadline, timeout, target.host))
        try:
            conn.request("GET", target.path, headers=_HEADERS)
            return conn, conn.getresponse()
        except OSError as error:
            conn.close()
            if isinstance(error, (TimeoutError, ssl.SSLError)):
                raise  # the server was reached: another address would not do better
            last_error = error
    raise last_error or OSError("no address")


def _read_body(conn, response, max_bytes: int, deadline: float, timeout: float, host: str) -> bytes:
    too_big = (
        f"The page is larger than {max_bytes / 1e6:g} MB, the most this app reads. "
        "Please save the part you need and upload it."
    )
    length = response.getheader("Content-Length")
    if length and length.strip().isdigit() and int(length) > max_bytes:
        raise DocumentError(too_big)
    chunks, total = [], 0
    while True:
        # The socket timeout bounds one read; the deadline bounds a server that drips bytes slowly.
        left = _remaining(deadline, timeout, host)
        if conn.sock is not None:
            conn.sock.settimeout(left)
        chunk = response.read1(_CHUNK)  # returns what has arrived, so the deadline is checked often
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise DocumentError(too_big)
        chunks.append(chunk)


def _content_format(response, url: str) -> Format | None:
    """The format the Content-Type names; None when the server does not say, or says only that it is binary
    (then the first bytes tell)."""
    if response.getheader("Content-Type") is None:
        return None
    content_type = response.headers.get_content_type()
    if content_type in formats.UNNAMED_CONTENT_TYPES:
        return None
    format = formats.by_content_type(content_type)
    if format is None:
        raise DocumentError(
            f"The address {url} gives a {content_type} file, not a web page. Only these can be "
            f"read: {formats.label_list()}."
        )
    return format


def _http_error(status: int, reason: str, url: str) -> DocumentError:
    hint = "Please check the address." if 400 <= status < 500 else "Please try again later."
    return DocumentError(f"The server answered {status} {reason} for {url}. {hint}")


def fetch_document(
    url: str,
    *,
    allow_local: bool = False,
    timeout: float = FETCH_SECONDS,
    max_bytes: int = MAX_TEXT_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> RawDocument:
    """Download a page or file of any format in :data:`littlebird.documents.formats.FORMATS` over http(s) and
    read it.

    Refuses (with a DocumentError whose message is for the user) other schemes, hosts that
    resolve to loopback (unless ``allow_local``), private, link-local, multicast or reserved
    addresses, before and after every redirect; pages over ``max_bytes`` (files of the other formats: over
    ``max_file_bytes``); other content types; and anything that takes longer than ``timeout`` seconds
    in total. A file's format is told by its content type, or by its first bytes when the server does not say
    or says otherwise.
    """
    start = time.perf_counter()
    deadline = start + timeout
    for _ in range(MAX_REDIRECTS + 1):
        target = parse_url(url)
        addresses = resolve_host(target.host, target.port, allow_local=allow_local)
        try:
            conn, response = _request(target, addresses, deadline, timeout)
            try:
                if response.status in _REDIRECT_STATUSES:
                    location = response.getheader("Location")
                    if not location:
                        raise DocumentError(
                            f"The server redirected {target.url} without saying where to. Please try another address."
                        )
                    url = urljoin(target.url, location.strip())
                    continue
                if not 200 <= response.status < 300:
                    raise _http_error(response.status, response.reason, target.url)
                format = _content_format(response, target.url)
                data = _read_body(
                    conn,
                    response,
                    max_bytes if format is not None and format.is_text else max_file_bytes,
                    deadline,
                    timeout,
                    target.host,
                )
                charset = response.headers.get_content_charset()
            finally:
                conn.close()
        except (TimeoutError, socket.timeout):
            raise DocumentError(
                f"The page at {target.host} did not load within {timeout:g} seconds. Please try again later."
            ) from None
        except ssl.SSLError as error:
            raise DocumentError(
                f"A secure connection to {target.host} could not be made ({error.reason or error})."
            ) from None
        except ConnectionRefusedError:
            raise DocumentError(
                f"The server {target.host} refused the connection. Please check the address or try later."
            ) from None
        except http.client.HTTPException:
            raise DocumentError(f"The server {target.host} sent a response that could not be understood.") from None
        except OSError as error:
            raise DocumentError(f"The server {target.host} could not be reached ({error.strerror or error}).") from None
        if not data.strip():
            raise DocumentError(f"The page at {target.url} is empty.")
        named = format is not None
        format = formats.by_first_bytes(data) or format  # a file, whatever the server called it
        if format is None and len(data) > max_bytes:
            raise DocumentError(
                f"The page is larger than {max_bytes / 1e6:g} MB, the most this app reads. Please save "
                "the part you need and upload it."
            )
        raw = read_file(
            data, format or formats.TEXT, source=target.url, declared=charset, sniff=not named, max_bytes=len(data)
        )
        raw.fetch_seconds = time.perf_counter() - start
        return raw
    raise DocumentError(
        f"The address redirected more than {MAX_REDIRECTS} times. Please try the final page's address directly."
    )
