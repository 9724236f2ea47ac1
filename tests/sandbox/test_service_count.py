"""One Service count: what `lbhc sandbox --help` says `--services N` makes, the count the
sandbox's banner states (the demo's first line counts the same property) and what its
kube-apiserver fake serves to `kubectl get services -A` are one number."""

from __future__ import annotations

import argparse
import re
from typing import Any

import requests

from lbhc.cli.parser import build_parser
from lbhc.cli.sandbox import sandbox_spec
from lbhc.sandbox.sandbox import Sandbox, SandboxOptions


def sandbox_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = (
        build_parser()
        ._subparsers._group_actions[0]
        .choices[  # type: ignore[union-attr]
            "sandbox"
        ]
    )
    return parser


def services_help() -> str:
    """`--services`' help as `lbhc sandbox --help` shows it, on one line."""
    parser = sandbox_parser()
    action = next(a for a in parser._actions if "--services" in a.option_strings)
    return " ".join(parser._get_formatter()._expand_help(action).split())


def stated_count(args: argparse.Namespace) -> int:
    """The number of Services the help says these flags make, read from its own words."""
    text = services_help()
    added = re.search(r"In all N\+(\d+) LoadBalancer Services \(legacy: N\)", text)
    assert added, f"--services' help no longer states its total: {text!r}"
    extra = int(added.group(1))
    assert f"adds {extra} when N > 0" in text, text
    if args.cloud_provider == "legacy" or args.services == 0:
        return int(args.services)
    return int(args.services) + extra


def served(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    """Every Service the sandbox's kube-apiserver lists across namespaces (the request
    `kubectl get services -A` makes), and its banner."""
    options = SandboxOptions(spec=sandbox_spec(args), kube_proxy_port=0, operation_latency=0)
    with Sandbox(options) as sandbox:
        assert sandbox.kube_server is not None
        response = requests.get(f"{sandbox.kube_server.url}/api/v1/services", timeout=30)
        response.raise_for_status()
        return response.json()["items"], sandbox.usage()


def test_the_default_count_in_the_help_is_what_the_sandbox_serves() -> None:
    args = sandbox_parser().parse_args([])
    text = services_help()
    default = re.search(r"\(default: (\d+), so (\d+) Services\)", text)
    assert default, f"--services' help no longer states its default total: {text!r}"
    assert int(default.group(1)) == args.services
    total = int(default.group(2))
    assert total == stated_count(args)

    services, banner = served(args)
    assert len(services) == total, [s["metadata"] for s in services]
    assert f"{total} LoadBalancer Services in namespace demo" in banner
    assert {s["spec"]["type"] for s in services} == {"LoadBalancer"}
    assert {s["metadata"]["namespace"] for s in services} == {"demo"}


def test_the_helps_rule_holds_for_the_legacy_cloud_provider() -> None:
    args = sandbox_parser().parse_args(["--cloud-provider", "legacy", "--services", "2"])
    services, banner = served(args)
    assert len(services) == stated_count(args)
    assert f"{len(services)} LoadBalancer Services in namespace demo" in banner
