"""lbhc's log setup keeps credentials out even when something tries to log one: a library's
request logging below WARNING is not written, and anything shaped like a credential in a
written line (message or traceback, JSON or text) is replaced."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from lbhc import logs
from tests.security.canaries import GCE_ACCESS_TOKEN, KUBE_TOKEN

PLANTED = [
    f"headers={{'Authorization': 'Bearer {KUBE_TOKEN}'}}",
    f"Authorization: Bearer {GCE_ACCESS_TOKEN}",
    f'{{"authorization": "Basic {KUBE_TOKEN}"}}',
    f"sent bearer {GCE_ACCESS_TOKEN} upstream",
    f"grant_type=refresh_token&refresh_token={KUBE_TOKEN}&client_secret={GCE_ACCESS_TOKEN}",
    f'{{"access_token": "{GCE_ACCESS_TOKEN}", "expires_in": 3599}}',
    f"proxy-authorization={KUBE_TOKEN}",
]


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("planted", PLANTED)
def test_a_credential_in_a_message_or_traceback_is_redacted(
    capsys: pytest.CaptureFixture[str], restore_logging: None, fmt: str, planted: str
) -> None:
    logs.configure("DEBUG", fmt)
    log = logging.getLogger("lbhc.test")
    log.info("request failed: %s", planted)
    try:
        raise RuntimeError(planted)
    except RuntimeError:
        log.exception("and as an exception")
    err = capsys.readouterr().err
    assert err.count(logs.REDACTED) >= 2
    assert KUBE_TOKEN not in err and GCE_ACCESS_TOKEN not in err, err
    if fmt == "json":
        assert all(json.loads(line) for line in err.splitlines())


def test_ordinary_lines_are_left_alone(
    capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    logs.configure("INFO", "json")
    message = "GCE add_health_check failed (401 authError: Unauthorized); continue token kept"
    logging.getLogger("lbhc.gce").warning(message)
    assert json.loads(capsys.readouterr().err)["msg"] == message


def test_below_warning_only_lbhc_records_are_written(
    capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    logs.configure("DEBUG", "json")
    for library in ("oauthlib", "requests_oauthlib", "websocket", "google.auth", "urllib3"):
        logging.getLogger(library).debug("send: %s", f"token {KUBE_TOKEN}")
        logging.getLogger(library).info("exchanged %s", KUBE_TOKEN)
    logging.getLogger("websocket").warning("connection lost")
    logging.getLogger("lbhc.controller").debug("pass skipped")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(e["logger"], e["msg"]) for e in lines] == [
        ("websocket", "connection lost"),
        ("lbhc.controller", "pass skipped"),
    ]


def test_a_librarys_own_retry_lines_are_not_written(
    capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    """urllib3 logs each retry it makes at WARNING; lbhc turns those retries off and logs
    its own, so such a line is noise (three per failed request by default). Its other
    warnings stay."""
    logs.configure("INFO", "text")
    pool = logging.getLogger("urllib3.connectionpool")
    pool.warning(
        "Retrying (%r) after connection broken by '%r': %s",
        "Retry(total=2, connect=None, read=None, redirect=None, status=None)",
        "NewConnectionError('Failed to establish a new connection: [Errno 111]')",
        "/api/v1/namespaces/kube-system",
    )
    pool.warning("Connection pool is full, discarding connection: %s", "127.0.0.1")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "Connection pool is full" in lines[0], lines
