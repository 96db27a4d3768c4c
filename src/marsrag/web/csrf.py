"""CSRF tokens for the pages' forms: a random nonce signed with a key every server of a deployment shares.

Double submit, signed: the token is in a ``SameSite=Strict`` cookie and in each form, and a post passes only
when the two copies match **and** the token carries this deployment's signature (``nonce.HMAC-SHA256(key,
nonce)``). So a cookie a client made up, or one planted by a sibling subdomain, is refused however well it
matches its form field; and no server-side state is needed.

The key is the same in every server process of a deployment, so any of them accepts the others' cookies:

- with ``MARSRAG_TOKEN`` set (always, off loopback), it is derived from the token (HMAC-SHA256 of a fixed label
  keyed by the token): every server of a deployment has the token;
- without one (loopback), it is a random secret kept in ``<data dir>/csrf.key`` (created once, mode 0600), which
  the servers of one machine share. Should the data directory be unwritable, the key is this process's own
  (logged): its forms still work, another process's are refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from starlette.requests import Request

from marsrag.web.settings import WebSettings

__all__ = ["CSRF_COOKIE", "CSRF_FIELD", "KEY_FILE", "csrf_key", "csrf_ok", "csrf_token", "issue", "signed"]

CSRF_COOKIE = "marsrag_csrf"
CSRF_FIELD = "csrf_token"
#: The file in the data directory holding the CSRF key of servers run without a token.
KEY_FILE = "csrf.key"

_LABEL = b"marsrag csrf token v1"
_NONCE_BYTES = 32
log = logging.getLogger(__name__)


def csrf_key(settings: WebSettings) -> bytes:
    """The key CSRF tokens are signed with: derived from the bearer token, else the data directory's secret."""
    if settings.token:
        return hmac.new(settings.token.encode(), _LABEL, hashlib.sha256).digest()
    try:
        return _stored_key(settings.settings.data_dir / KEY_FILE)
    except OSError as error:
        log.warning(
            "cannot keep the CSRF key in %s (%s): this server signs forms with a key of its own",
            settings.settings.data_dir / KEY_FILE,
            error.strerror or error,
        )
        return secrets.token_bytes(32)


def _stored_key(path: Path) -> bytes:
    """The key in ``path``, created (atomically, readable by its owner only) when there is none yet."""
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        # A hard link fails when the name exists: of servers starting together, the first one's key wins.
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
    finally:
        draft.unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    text = path.read_text(encoding="ascii").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise OSError(f"{path} does not hold a key (delete it and restart to make a new one)")
    return key


def _signature(key: bytes, nonce: str) -> str:
    digest = hmac.new(key, nonce.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def issue(key: bytes) -> str:
    """A new token: a random nonce and its signature."""
    nonce = secrets.token_urlsafe(_NONCE_BYTES)
    return f"{nonce}.{_signature(key, nonce)}"


def signed(key: bytes, token: str | None) -> bool:
    """Whether ``token`` is a nonce of the expected size signed with ``key``."""
    if not token or token.count(".") != 1:
        return False
    nonce, signature = token.split(".")
    if len(nonce) < 43:  # token_urlsafe(32) gives 43 characters
        return False
    return secrets.compare_digest(signature.encode(), _signature(key, nonce).encode())


def _key_of(request: Request) -> bytes:
    key: bytes = request.app.state.csrf_key
    return key


def csrf_token(request: Request) -> str:
    """The request's CSRF token: the cookie's when this deployment signed it, else a new one (set with the page)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if signed(_key_of(request), existing):
        return existing or ""
    token: str | None = getattr(request.state, "new_csrf", None)
    if token is None:
        token = issue(_key_of(request))
        request.state.new_csrf = token
    return token


def csrf_ok(request: Request, submitted: Any) -> bool:
    """Whether a form's token matches the cookie's, and the cookie is signed by this deployment."""
    cookie = request.cookies.get(CSRF_COOKIE)
    if not isinstance(submitted, str) or not signed(_key_of(request), cookie):
        return False
    return secrets.compare_digest((cookie or "").encode(), submitted.encode())
