"""The takeover ledger: which check each pool carried before lbhc replaced it.

A target pool holds at most one legacy check, so taking a pool over means removing what it
carries before adding lbhc's; to give it back later (on `lbhc teardown`, in fallback, or when
the mode returns to coexist), lbhc must remember it. The record has to live in GCE, because
teardown needs no cluster access, and in a resource lbhc owns: its own check's description.
It is written before any pool is touched (the ensure phase runs first), so a crash between
the remove and the add leaves a pool with no check *and* a record of what to put back.

Descriptions are bounded (the Compute fake enforces 2048 characters), so a pool is recorded
as an 8-character code (the first 48 bits of SHA-256 of its name, base64url) grouped under
the check it carried; about 200 pools fit. Codes are only ever matched against the pools
that carry lbhc's check or nothing, where a collision is vanishingly unlikely.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lbhc.model.cloud import COMPUTE_URL_PREFIX, resource_path

CODE_LENGTH = 8
# The Compute API's description limit as lbhc's fake enforces it (the API does not document
# one); the whole description, ownership mark included, must fit.
MAX_DESCRIPTION = 2048
LEDGER_KEY = "replaced"


def ledger_code(pool_name: str) -> str:
    digest = hashlib.sha256(pool_name.encode()).digest()[:6]
    return base64.urlsafe_b64encode(digest).decode()


@dataclass(frozen=True)
class TakeoverLedger:
    """Pool code -> resource path of the check lbhc replaced on that pool."""

    entries: Mapping[str, str] = field(default_factory=dict)

    def recorded_for(self, pool_name: str) -> str | None:
        return self.entries.get(ledger_code(pool_name))

    def recorded_url(self, pool_name: str) -> str:
        """The recorded check as a full URL, as a pool's `healthChecks` holds it ("" if none)."""
        path = self.recorded_for(pool_name)
        return COMPUTE_URL_PREFIX + path if path else ""

    def __len__(self) -> int:
        return len(self.entries)

    def to_json(self) -> dict[str, str]:
        """Grouped by check, codes sorted and concatenated (fixed width, no separators)."""
        grouped: dict[str, list[str]] = {}
        for code, check in self.entries.items():
            grouped.setdefault(check, []).append(code)
        return {check: "".join(sorted(codes)) for check, codes in sorted(grouped.items())}

    @classmethod
    def from_json(cls, value: object) -> TakeoverLedger:
        """A ledger as written by to_json(); anything malformed reads as entries lost, never
        as an error: the description is not ours alone to trust (anyone may edit it)."""
        if not isinstance(value, dict):
            return cls()
        entries: dict[str, str] = {}
        for check, codes in value.items():
            if not isinstance(check, str) or not isinstance(codes, str):
                continue
            for start in range(0, len(codes) - CODE_LENGTH + 1, CODE_LENGTH):
                entries[codes[start : start + CODE_LENGTH]] = resource_path(check)
        return cls(entries)

    def restricted_to(self, pool_names: Iterable[str]) -> TakeoverLedger:
        wanted = {ledger_code(name) for name in pool_names}
        return TakeoverLedger({c: v for c, v in self.entries.items() if c in wanted})

    def with_records(self, records: Mapping[str, str]) -> TakeoverLedger:
        """Adds pool name -> replaced check URL records."""
        added = {ledger_code(pool): resource_path(url) for pool, url in records.items()}
        return TakeoverLedger({**self.entries, **added})
