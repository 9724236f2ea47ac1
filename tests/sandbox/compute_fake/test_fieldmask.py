"""Partial responses (`fields` / X-Goog-FieldMask): what lbhc relies on to list pools without
their instance lists, served the way the real API serves them."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc

from lbhc.sandbox.compute_fake import ComputeFake, fieldmask
from tests.sandbox.compute_fake.conftest import (
    PROJECT,
    REGION,
    Api,
    Clients,
    check_url,
    instance_url,
)

POOLS = f"projects/{PROJECT}/regions/{REGION}/targetPools"


@pytest.fixture
def pools(fake: ComputeFake) -> ComputeFake:
    for name in ("a", "b"):
        fake.add_target_pool(
            PROJECT,
            REGION,
            name,
            description=f"pool {name}",
            instances=[instance_url(f"node-{i}") for i in range(3)],
            health_checks=[check_url("hc")],
        )
    return fake


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        ("a", {"a": None}),
        ("a,b", {"a": None, "b": None}),
        ("a/b,a/c", {"a": {"b": None, "c": None}}),
        ("a(b,c/d)", {"a": {"b": None, "c": {"d": None}}}),
        ("a(b),a", {"a": None}),  # the whole field wins over part of it
        (
            "items(name, healthChecks),nextPageToken",
            {"items": {"name": None, "healthChecks": None}, "nextPageToken": None},
        ),
        ("*", {"*": None}),
    ],
)
def test_parses_the_system_parameter_syntax(mask: str, expected: dict[str, Any]) -> None:
    assert fieldmask.parse(mask) == expected


@pytest.mark.parametrize("mask", ["a(", "a)", "a,,b", "(a)", "/a", "a/", "a(b", "a b c", "a-b"])
def test_malformed_masks_are_rejected(mask: str) -> None:
    with pytest.raises(fieldmask.ComputeError, match="Invalid field selection"):
        fieldmask.parse(mask)


def test_a_selection_applies_to_every_element_of_an_array() -> None:
    selection = fieldmask.parse("items(name,x/y)")
    body = {"items": [{"name": "a", "x": {"y": 1, "z": 2}, "q": 3}, {"name": "b"}], "kind": "k"}
    assert fieldmask.apply(selection, body) == {
        "items": [{"name": "a", "x": {"y": 1}}, {"name": "b"}]
    }


@pytest.mark.parametrize("how", ["query", "header"])
def test_lists_only_the_fields_asked_for(pools: ComputeFake, api: Api, how: str) -> None:
    mask = "items(name,healthChecks),nextPageToken"
    params = {"fields": mask} if how == "query" else None
    headers = {"X-Goog-FieldMask": mask} if how == "header" else None
    body = api.call("GET", POOLS, params=params, headers=headers)
    assert body == {
        "items": [
            {"name": "a", "healthChecks": [check_url("hc")]},
            {"name": "b", "healthChecks": [check_url("hc")]},
        ]
    }
    assert [e.field_mask for e in pools.journal] == [mask]


def test_the_generated_client_gets_partial_pools_through_the_header(
    pools: ComputeFake, clients: Clients
) -> None:
    from google.cloud import compute_v1

    pager = clients.target_pools.list(
        request=compute_v1.ListTargetPoolsRequest(project=PROJECT, region=REGION),
        metadata=(("x-goog-fieldmask", "items(name,description,healthChecks),nextPageToken"),),
    )
    listed = list(pager)
    assert [(p.name, p.description, list(p.health_checks)) for p in listed] == [
        ("a", "pool a", [check_url("hc")]),
        ("b", "pool b", [check_url("hc")]),
    ]
    assert all(not p.instances and not p.self_link for p in listed)


@pytest.mark.parametrize(
    ("mask", "unknown"),
    [
        ("items(name,instancez)", "instancez"),  # not a TargetPool field
        ("itemz", "itemz"),  # not a list field
        ("items(name),nextPageToken,pageToken", "pageToken"),
    ],
)
def test_a_field_the_resource_does_not_have_is_a_400_naming_it(
    pools: ComputeFake, api: Api, mask: str, unknown: str
) -> None:
    with pytest.raises(gexc.BadRequest, match=f"Invalid field selection {unknown}"):
        api.call("GET", POOLS, params={"fields": mask})


def test_a_get_is_checked_against_the_resource_and_an_error_is_never_masked(
    pools: ComputeFake, api: Api
) -> None:
    assert api.call("GET", f"{POOLS}/a", params={"fields": "name"}) == {"name": "a"}
    with pytest.raises(gexc.BadRequest, match="Invalid field selection items"):
        api.call("GET", f"{POOLS}/a", params={"fields": "items"})
    with pytest.raises(gexc.NotFound) as missing:
        api.call("GET", f"{POOLS}/nope", params={"fields": "name"})
    assert missing.value.errors and missing.value.errors[0]["reason"] == "notFound"


def test_an_empty_mask_means_every_field(pools: ComputeFake, api: Api) -> None:
    body = api.call("GET", f"{POOLS}/a", params={"fields": ""})
    assert len(body["instances"]) == 3
