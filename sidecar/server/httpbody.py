"""An HTTP/1.1 request body read as the protocol frames it, for ``http.server`` handlers: chunked
transfer coding or Content-Length, and a framing error answered before anything past the headers
is read (``http.server`` itself reads neither chunks nor checks the length)."""

from __future__ import annotations

from typing import Any


class BadRequest(Exception):
    """The request's framing is wrong (HTTP status, message): answered, then the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(headers: Any, rfile: Any, limit: int) -> bytes:
    """The request body as HTTP/1.1 frames it: ``Transfer-Encoding: chunked`` (chunks, then
    trailers), else ``Content-Length`` (none: empty). A malformed, negative or over-``limit``
    length is a BadRequest before anything is read past the headers."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        chunks, total = [], 0
        while True:
            line = rfile.readline(1024)
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise BadRequest(400, f"bad chunk size {size_text[:20]!r}") from None
            if size < 0:
                raise BadRequest(400, "negative chunk size")
            if size == 0:
                break
            total += size
            if total > limit:
                raise BadRequest(413, f"body over {limit} bytes")
            chunk = rfile.read(size)
            if len(chunk) != size or rfile.read(2) != b"\r\n":
                raise BadRequest(400, "truncated chunk")
            chunks.append(chunk)
        while rfile.readline(1024) not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(chunks)
    text = headers.get("Content-Length")
    if text is None:
        return b""
    if not (text.strip().isascii() and text.strip().isdigit()):
        raise BadRequest(400, f"bad Content-Length {text[:20]!r}")
    length = int(text)
    if length > limit:
        raise BadRequest(413, f"body over {limit} bytes")
    body: bytes = rfile.read(length)
    if len(body) != length:
        raise BadRequest(400, f"body ended after {len(body)} of {length} bytes")
    return body
