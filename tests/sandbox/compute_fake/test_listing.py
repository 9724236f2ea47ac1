"""List semantics: filter, maxResults, page tokens, orderBy."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import compute_v1

from lbhc.sandbox.compute_fake import ComputeFake

P = "proj"
HCS = f"projects/{P}/global/httpHealthChecks"
NAMES = ["k8s-abc-node", "k8s-def-node", "lbhc-shared", "other"]


@pytest.fixture
def checks(fake: ComputeFake) -> ComputeFake:
    for name in NAMES:
        fake.add_http_health_check(P, name, description="lbhc" if "lbhc" in name else "")
    return fake


def names(api: Any, **params: Any) -> list[str]:
    body = api.call("GET", HCS, params=params)
    return [item["name"] for item in body.get("items", [])]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('name eq "k8s-.*-node"', ["k8s-abc-node", "k8s-def-node"]),
        ("name eq k8s-abc-node", ["k8s-abc-node"]),
        ("name eq 'lbhc-.*'", ["lbhc-shared"]),
        ('name ne "k8s-.*"', ["lbhc-shared", "other"]),
        ('name eq "k8s"', []),  # eq is a full match, not a search
        ('name = "other"', ["other"]),
        ('name != "other"', ["k8s-abc-node", "k8s-def-node", "lbhc-shared"]),
        ('(name eq "k8s-.*") (name ne ".*def.*")', ["k8s-abc-node"]),
        ('(description = "lbhc") AND (name = "lbhc-shared")', ["lbhc-shared"]),
        ("port = 80", NAMES),
        ("", NAMES),
    ],
)
def test_filters(api: Any, checks: ComputeFake, expression: str, expected: list[str]) -> None:
    assert names(api, filter=expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        'name = "a" OR name = "b"',
        'name : "k8s-*"',
        'name < "m"',
        'labels.env = "prod"',
        "name eq",
        '(name = "a"',
        'name = "a" AND',
        "name eq (unbalanced",
    ],
)
def test_unsupported_filters_are_rejected(api: Any, checks: ComputeFake, expression: str) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        names(api, filter=expression)
    assert info.value.errors[0]["reason"] == "invalid"
    assert "does not support" in info.value.errors[0]["message"]


def test_filter_through_the_client(clients: Any, fake: ComputeFake) -> None:
    for name in ("k8s-a-node-hc", "k8s-b-node-hc", "mine"):
        body = compute_v1.Firewall(name=name, allowed=[compute_v1.Allowed(I_p_protocol="tcp")])
        clients.firewalls.insert_unary(project=P, firewall_resource=body, retry=None)
    request = compute_v1.ListFirewallsRequest(project=P, filter='name eq "k8s-.*-node-hc"')
    listed = clients.firewalls.list(request=request, retry=None)
    assert [f.name for f in listed] == ["k8s-a-node-hc", "k8s-b-node-hc"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"maxResults": "501"}, "maxResults"),
        ({"maxResults": "-1"}, "maxResults"),
        ({"maxResults": "many"}, "maxResults"),
        ({"pageToken": "!!garbage!!"}, "pageToken"),
        ({"orderBy": "port"}, "orderBy"),
        ({"filter": "name eq (["}, "filter"),
    ],
)
def test_invalid_list_parameters(
    api: Any, checks: ComputeFake, params: dict[str, str], field: str
) -> None:
    with pytest.raises(gexc.BadRequest) as info:
        names(api, **params)
    assert f"'{field}'" in info.value.errors[0]["message"]


def test_paging_by_hand(api: Any, checks: ComputeFake) -> None:
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        params = {"maxResults": 3, **({"pageToken": token} if token else {})}
        body = api.call("GET", HCS, params=params)
        pages += 1
        seen += [item["name"] for item in body["items"]]
        token = body.get("nextPageToken")
        if not token:
            break
    assert (pages, seen) == (2, NAMES)
    assert names(api, maxResults=0) == NAMES  # 0 means the default page size


def test_page_tokens_survive_deletes(api: Any, checks: ComputeFake) -> None:
    first = api.call("GET", HCS, params={"maxResults": 2})
    api.call("DELETE", f"{HCS}/k8s-abc-node")
    rest = api.call("GET", HCS, params={"maxResults": 2, "pageToken": first["nextPageToken"]})
    assert [i["name"] for i in rest["items"]] == ["lbhc-shared", "other"]


def test_order_by(api: Any, checks: ComputeFake) -> None:
    assert names(api, orderBy="name desc") == sorted(NAMES, reverse=True)
    assert names(api, orderBy="creationTimestamp") == NAMES
