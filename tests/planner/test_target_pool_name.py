"""The name of a Service's target pool, pinned to examples worked out by hand from the upstream
rule, so lbhc and the sandbox's emulator of the cloud provider cannot drift together.

The rule: kubernetes/cloud-provider-gcp providers/gce/gce_loadbalancer.go GetLoadBalancerName
returns cloudprovider.DefaultLoadBalancerName(svc) (kubernetes/cloud-provider cloud.go):
    ret := "a" + string(service.UID)
    ret = strings.Replace(ret, "-", "", -1)
    if len(ret) > 32 { ret = ret[:32] }
Case is kept (no ToLower): the API server writes UIDs in lowercase, so an uppercase UID would
give a name GCE refuses, and lbhc must then look for that name, not a lowercased one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lbhc.planner.names import is_valid_gce_name, target_pool_name
from lbhc.sandbox.upstream.names import load_balancer_name

# (Service UID, the load balancer name, worked out by hand)
EXAMPLES = [
    # 32 characters without dashes; with "a" in front 33, so the last one ("c") is cut.
    ("6f2c9b0e-3a7d-4c1e-9b8a-0d5e7f1a2b3c", "a6f2c9b0e3a7d4c1e9b8a0d5e7f1a2b3"),
    # Shorter than 31 without dashes: nothing is cut.
    ("1234-5678", "a12345678"),
    # Exactly 31 without dashes: 32 with the "a", still nothing cut.
    ("0123456789-abcdef-0123456789abcde", "a0123456789abcdef0123456789abcde"),
    # Dashes are removed before cutting: ten leading ones cost no characters.
    ("----------0123456789abcdef0123456789abcdef", "a0123456789abcdef0123456789abcde"),
    # Anything longer is cut at 32, whatever it is.
    ("abcdefghij" * 4, "aabcdefghijabcdefghijabcdefghija"),
    # Case kept as upstream keeps it.
    ("6F2C9B0E-3A7D-4C1E-9B8A-0D5E7F1A2B3C", "a6F2C9B0E3A7D4C1E9B8A0D5E7F1A2B3"),
    ("", "a"),
]
NAMERS: list[Callable[[str], str]] = [target_pool_name, load_balancer_name]


@pytest.mark.parametrize("namer", NAMERS, ids=["lbhc", "sandbox emulator"])
@pytest.mark.parametrize(("uid", "name"), EXAMPLES, ids=[n for _, n in EXAMPLES])
def test_the_name_is_a_plus_the_uid_without_dashes_cut_to_32(
    namer: Callable[[str], str], uid: str, name: str
) -> None:
    assert namer(uid) == name


def test_a_uid_as_the_api_server_writes_it_gives_a_valid_gce_name() -> None:
    assert is_valid_gce_name(target_pool_name("6f2c9b0e-3a7d-4c1e-9b8a-0d5e7f1a2b3c"))
    assert not is_valid_gce_name(target_pool_name("6F2C9B0E-3A7D-4C1E-9B8A-0D5E7F1A2B3C"))
