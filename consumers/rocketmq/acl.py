"""ACL request signing (AccessKey / Signature), the scheme of 4.x ACL 1.0 and 5.3 ACL 2.0.

The signature is HMAC-SHA1 over the values of every ext field except Signature, sorted by
key in ordinal (code point) order, concatenated with nothing between them, then the body.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never let a secret reach a log line or a page
        return f"Credentials(access_key={self.access_key!r}, secret_key='***')"


def sign(ext_fields: dict[str, str], body: bytes, credentials: Credentials) -> dict[str, str]:
    """Return a copy of ext_fields with AccessKey, SecurityToken and Signature added."""
    signed = dict(ext_fields)
    signed.pop("Signature", None)
    signed["AccessKey"] = credentials.access_key
    if credentials.security_token:
        signed["SecurityToken"] = credentials.security_token
    # Python's str ordering is code-point order, which equals Java's UTF-16 order for
    # every key the protocol uses (ASCII).
    content = "".join(signed[key] for key in sorted(signed)).encode() + (body or b"")
    digest = hmac.new(credentials.secret_key.encode(), content, hashlib.sha1).digest()
    signed["Signature"] = base64.b64encode(digest).decode()
    return signed
