"""ingress-gce's L4 names, bit for bit: the expected values are upstream's own test vectors
(kubernetes/ingress-gce pkg/utils/namer/l4_namer_test.go TestL4Namer, kube-system UID
"kubesystem-uid1" as frontendnamer_test.go has it), not recomputed here."""

from __future__ import annotations

import json

import pytest

from lbhc.sandbox.upstream.ingress_gce import names
from lbhc.sandbox.upstream.ingress_gce.names import L4Namer

NAMER = L4Namer("kubesystem-uid1", "cluster-uid")
LONG_NS = "012345678901234567890123456789012345678901234567890123456789abc"
LONG_NAME = "012345678901234567890123456789012345678901234567890123456789pqr"


@pytest.mark.parametrize(
    ("made", "upstream"),
    [
        (NAMER.forwarding_rule("namespace", "name", "TCP"),
         "k8s2-tcp-7kpbhpki-namespace-name-956p2p7x"),
        (NAMER.backend("namespace", "name"), "k8s2-7kpbhpki-namespace-name-956p2p7x"),
        (NAMER.health_check("namespace", "name", False), "k8s2-7kpbhpki-namespace-name-956p2p7x"),
        (NAMER.health_check("namespace", "name", True), "k8s2-7kpbhpki-l4-shared-hc"),
        (NAMER.health_check_firewall("namespace", "name", False),
         "k8s2-7kpbhpki-namespace-name-956p2p7x-fw"),
        (NAMER.health_check_firewall("namespace", "name", True), "k8s2-7kpbhpki-l4-shared-hc-fw"),
        (NAMER.forwarding_rule(LONG_NS, LONG_NAME, "UDP"),
         "k8s2-udp-7kpbhpki-012345678901234567-01234567890123456-hwm400mg"),
        (NAMER.backend(LONG_NS, LONG_NAME),
         "k8s2-7kpbhpki-01234567890123456789-0123456789012345678-hwm400mg"),
        (NAMER.health_check_firewall(LONG_NS, LONG_NAME, False),
         "k8s2-7kpbhpki-01234567890123456789-0123456789012345678-hwm40-fw"),
        (NAMER.instance_group, "k8s-ig--cluster-uid"),
    ],
)  # fmt: skip
def test_names_are_upstreams(made: str, upstream: str) -> None:
    assert made == upstream and len(made) <= 63


@pytest.mark.parametrize(
    ("maximum", "fields", "trimmed"),
    [
        (10, ("abc", "def"), ["abc", "def"]),  # short enough: as they are
        (4, ("abcd", "ef"), ["abc", "e"]),  # the longer one cut more
        (0, ("abcd", "ef"), ["abcd", "ef"]),  # no limit
    ],
)
def test_trim_fields_evenly(maximum: int, fields: tuple[str, ...], trimmed: list[str]) -> None:
    assert names.trim_fields_evenly(maximum, *fields) == trimmed


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        (
            names.service_description("demo/web", "", False, names.ILB),
            {"networking.gke.io/service-name": "demo/web", "networking.gke.io/api-version": "ga"},
        ),
        (
            names.service_description("demo/web", "1.2.3.4", False, names.XLB),
            {
                "networking.gke.io/service-name": "demo/web",
                "networking.gke.io/api-version": "ga",
                "networking.gke.io/service-ip": "1.2.3.4",
            },
        ),
        (
            names.service_description("demo/web", "", True, names.XLB),
            {
                "networking.gke.io/service-name": "",
                "networking.gke.io/api-version": "ga",
                "networking.gke.io/resource-description": "This resource is shared by all L4 "
                "XLB Services using ExternalTrafficPolicy: Cluster.",
            },
        ),
        (
            names.firewall_description("demo/web", "", True),
            {
                "networking.gke.io/service-name": "",
                "networking.gke.io/api-version": "ga",
                "networking.gke.io/resource-description": "This resource is shared by all L4  "
                "Services using ExternalTrafficPolicy: Cluster.",
            },
        ),
        (
            names.neg_description("uid", "demo", "web"),
            {"cluster-uid": "uid", "namespace": "demo", "service-name": "web", "port": "0"},
        ),
    ],
)
def test_descriptions_are_gos_json_in_struct_order(description: str, expected: object) -> None:
    """json.Marshal of upstream's structs: no spaces, the fields in declaration order, the
    omitempty ones left out when empty (service-name is not omitempty)."""
    assert description == json.dumps(expected, separators=(",", ":"))
