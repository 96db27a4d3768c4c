"""Transfer encodings a capture keeps: the message as its recipient reads it, not as it was sent.

A model's answer captured on the wire or from a mailbox carries its transport's framing: an HTTP/1.1 body sent
``Transfer-Encoding: chunked`` has a chunk size line (hexadecimal) before each piece, cutting the answer's words
anywhere (RFC 9112 section 7.1); an email part sent quoted-printable or base64 has its soft line breaks and
``=C3=A9`` escapes, and a multipart message several parts (RFC 2045, 2046). The standard library reads the email;
the chunks are joined by their sizes.
"""

from __future__ import annotations

import email
import email.policy
import re
from typing import Final

_CHUNKED: Final = re.compile(r"(?im)^transfer-encoding:[ \t]*chunked[ \t]*\r?$")
_HEADERS_END: Final = re.compile(r"\r?\n\r?\n")
_CHUNK_SIZE: Final = re.compile(rb"([0-9a-fA-F]{1,8})(?:;[^\r\n]*)?\r?\n")
_MIME: Final = re.compile(r"(?im)^content-transfer-encoding:[ \t]*(?:quoted-printable|base64)[ \t]*\r?$")
_MAIL_HEADER: Final = re.compile(r"(?i)(?:[\w-]{1,40}:[^\n]*\n(?:[ \t][^\n]*\n)*){2,}")


def may_be_transport(text: str) -> bool:
    """A cheap test: False means the text carries no transfer encoding this module reads."""
    return ("chunked" in text or "ransfer-" in text) and (
        _CHUNKED.search(text) is not None or _MIME.search(text) is not None
    )


def transport_decoded(text: str) -> str | None:
    """The message as read: an HTTP response's chunked body joined (its head kept), or an email's text parts
    decoded; None when the framing does not parse."""
    if _MIME.search(text) and _MAIL_HEADER.match(text.lstrip()):
        return _mail_text(text.lstrip())
    chunked = _CHUNKED.search(text)
    if chunked is None:
        return None
    end = _HEADERS_END.search(text, chunked.end())
    if end is None:
        return None
    body = _dechunked(text[end.end() :].encode("utf-8"))
    return None if body is None else text[: end.end()] + body


def _dechunked(body: bytes) -> str | None:
    pieces: list[bytes] = []
    position = 0
    while position < len(body):
        size = _CHUNK_SIZE.match(body, position)
        if size is None:
            return None
        length = int(size[1], 16)
        if length == 0:
            break
        start = size.end()
        pieces.append(body[start : start + length])
        position = start + length
        if body[position : position + 2] == b"\r\n":
            position += 2
        elif body[position : position + 1] == b"\n":
            position += 1
        else:
            return None
    return b"".join(pieces).decode("utf-8", errors="replace")


def _mail_text(text: str) -> str | None:
    message = email.message_from_string(text, policy=email.policy.default)
    parts: list[tuple[str, str]] = []
    for part in message.walk():
        if part.is_multipart() or part.get_content_maintype() != "text":
            continue
        try:
            content = part.get_content()
        except (LookupError, ValueError):
            continue
        if isinstance(content, str):
            parts.append((part.get_content_subtype(), content))
    plain = [content for subtype, content in parts if subtype == "plain"]
    chosen = plain or [content for _, content in parts]
    return "\n\n".join(chosen) if chosen else None
