"""Logging setup: one JSON object per line for the controller (what log pipelines parse),
readable text for people. Nothing in lbhc formats request headers or tokens; two guards make
sure a library cannot either: below WARNING only lbhc's own records are written (libraries
log requests, headers and token exchanges at DEBUG and INFO), and every line written has
anything shaped like a credential replaced."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys

REDACTED = "[REDACTED]"
# A header or field that carries a credential, then its value (after an optional scheme).
_CREDENTIAL = re.compile(
    r"""(?ix)
    (
        \b(?:proxy-)?authorization\b ['"]? \s* [:=] \s* ['"]? (?:(?:bearer|basic)\s+)?
      | \bbearer\s+
      | \b(?:access_token|refresh_token|id_token|client_secret|private_key|password)\b
        ['"]? \s* [:=] \s* ['"]?
    )
    [^\s'",}&]+
    """
)


def redact(text: str) -> str:
    return _CREDENTIAL.sub(lambda m: m.group(1) + REDACTED, text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _own_or_warning(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.name.split(".", 1)[0] == "lbhc"


def _not_a_library_retry(record: logging.LogRecord) -> bool:
    """urllib3 logs each retry it makes on its own as a WARNING ("Retrying (Retry(total=2,
    ...)) after connection broken by ..."), three per failed request by default. lbhc turns
    those retries off (its own are logged once each, by lbhc.gce.calls and the controller's
    loops), so such a line would only ever be noise from a client configured elsewhere."""
    return not (record.name.startswith("urllib3") and str(record.msg).startswith("Retrying"))


def configure(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_own_or_warning)
    handler.addFilter(_not_a_library_retry)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Also at the source, so their DEBUG records are not even built.
    for noisy in ("urllib3", "google", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
