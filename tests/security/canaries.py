"""Distinctive fake credentials and the scan for them. The values only need to be unique
strings: they are not shaped like any real key or token format."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass

KUBE_TOKEN = "lbhcCanaryKubeToken7f3a9c1e"
GCE_ACCESS_TOKEN = "lbhcCanaryGceAccess5b2d8e40"
CANARIES = (KUBE_TOKEN, GCE_ACCESS_TOKEN)

# A credential could also leave as a header line or in an encoded form.
_HEADER = re.compile(r"(?i)\bauthorization\b\s*['\"]?\s*[:=]")
_BEARER = re.compile(r"(?i)\bbearer\s+['\"]?[a-z0-9._~+/-]{6,}")


def _forms(secret: str) -> tuple[str, ...]:
    raw = secret.encode()
    encoded = (base64.b64encode(raw), base64.urlsafe_b64encode(raw), base64.b16encode(raw))
    return (secret, *(e.decode().rstrip("=") for e in encoded))


@dataclass(frozen=True)
class Hit:
    source: str
    what: str
    excerpt: str


@dataclass
class Scan:
    """Everything scanned, so a report can say how much was looked at."""

    sources: int = 0
    bytes: int = 0

    def __call__(self, outputs: Iterable[tuple[str, str]]) -> list[Hit]:
        hits: list[Hit] = []
        for source, text in outputs:
            self.sources += 1
            self.bytes += len(text.encode())
            for secret in CANARIES:
                for form in _forms(secret):
                    at = text.find(form)
                    if at >= 0:
                        hits.append(Hit(source, f"canary {secret}", text[at - 60 : at + 60]))
            for pattern in (_HEADER, _BEARER):
                for match in pattern.finditer(text):
                    excerpt = text[match.start() - 60 : match.end() + 60]
                    hits.append(Hit(source, pattern.pattern, excerpt))
        return hits


def header_sent(wire: bytes, token: str) -> bool:
    """True if a request on `wire` carried `Authorization: Bearer <token>`."""
    needle = f"authorization: bearer {token}\r\n".lower().encode()
    return needle in wire.lower()
