"""Mount a ComputeFake in-process on a `responses.RequestsMock`.

One callback serves every route (any HTTP method) under `{base_url}/compute/v1/`, dispatching
through the same route table as the HTTP server. A single registration avoids the `responses`
rule that overlapping matches are consumed one by one, lets unknown routes get the fake's
real-looking 404 instead of a ConnectionError, and keeps `assert_all_requests_are_fired` quiet
about routes a test never used.
"""

from __future__ import annotations

import re
from typing import Any

import responses
from requests import PreparedRequest

from .fake import ComputeFake
from .routes import API_PREFIX


class _AnyMethodCallback(responses.CallbackResponse):
    """A CallbackResponse that matches every HTTP method."""

    def matches(self, request: PreparedRequest) -> tuple[bool, str]:
        if not self._url_matches(self.url, str(request.url)):
            return False, "URL does not match"
        return self._req_attr_matches(self.match, request)


def mount_responses(
    fake: ComputeFake,
    rsps: responses.RequestsMock,
    base_url: str = "https://compute.googleapis.com",
) -> list[responses.BaseResponse]:
    """Serve `fake` for requests to `base_url`; returns the registrations (for rsps.remove)."""
    prefix = base_url.rstrip("/") + API_PREFIX

    def callback(request: PreparedRequest) -> tuple[int, dict[str, str], bytes]:
        headers = {k: v if isinstance(v, str) else v.decode() for k, v in request.headers.items()}
        body: Any = request.body
        return fake.handle(str(request.method), str(request.path_url), None, headers, body or b"")

    registered = rsps.add(
        _AnyMethodCallback(
            "GET",  # ignored by the any-method matcher
            re.compile(re.escape(prefix) + r".*"),
            callback=callback,
            content_type="application/json",
        )
    )
    return [registered]
