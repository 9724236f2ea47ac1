"""Kinds of setting value, each checked in one place so that every setting of a kind says the
same thing when it is wrong."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_settings import NoDecode

from lbhc.durations import http_address, parse_duration
from lbhc.planner.config import KNOWN_KUBE_PROXY_SELECTORS, selector_text
from lbhc.planner.names import GCE_NAME

DEFAULT_KUBE_PROXY_SELECTOR = " | ".join(selector_text(s) for s in KNOWN_KUBE_PROXY_SELECTORS)

# Project ids (also domain-scoped, example.com:proj) and regions: no spaces or slashes, so a
# value can never change which URL a request goes to.
_PROJECT = re.compile(r"^[a-z0-9][-a-z0-9.:]*$")
_REGION = re.compile(r"^[a-z0-9][-a-z0-9]*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
# A Kubernetes qualified name (annotation keys, loadBalancerClass): [prefix/]name, as
# k8s.io/apimachinery/pkg/util/validation IsQualifiedName defines it.
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_SELECTOR = re.compile(r"^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*$")


def as_duration(value: object) -> object:
    """Text as flags take it, with a unit (`30s`, `5m`, `1h30m`: units make it unambiguous,
    so `LBHC_CONTROLLER_RESYNC_PERIOD=300` is refused); a YAML number is seconds."""
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except Exception as exc:  # argparse's error type: the message is what matters
            raise ValueError(str(exc)) from None
    return value


def _as_address(value: str) -> str:
    try:
        return http_address(value)
    except Exception as exc:
        raise ValueError(str(exc)) from None


def _matching(pattern: re.Pattern[str], expected: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"expected {expected}")
        return value

    return AfterValidator(check)


def _split_commas(value: Any) -> Any:
    """Flags and LBHC_* variables give lists as `a,b`; YAML may give either form."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _label_selectors(value: str) -> str:
    alternatives = [a.strip() for a in value.split("|")]
    if not all(
        a and all(_LABEL_SELECTOR.match(p.strip()) for p in a.split(",")) for a in alternatives
    ):
        raise ValueError(
            "expected equality label selectors such as k8s-app=kube-proxy, alternatives "
            "separated by | (component=kube-proxy,tier=node | app=kubernetes,role=proxy)"
        )
    return " | ".join(alternatives)


Duration = Annotated[float, BeforeValidator(as_duration), Field(gt=0, allow_inf_nan=False)]
Seconds = Annotated[float, Field(allow_inf_nan=False)]
ListenAddress = Annotated[str, AfterValidator(_as_address)]
ProjectId = Annotated[
    str, _matching(_PROJECT, "a GCE project id such as my-project (no spaces or slashes)")
]
Region = Annotated[str, _matching(_REGION, "a GCE region such as us-central1")]
GceName = Annotated[
    str,
    _matching(
        GCE_NAME,
        "a GCE name such as gke-my-cluster-node: lowercase letters, digits and dashes, "
        "starting with a letter (at most 63 characters)",
    ),
]
DnsLabel = Annotated[
    str, _matching(_DNS_LABEL, "a DNS label such as kube-system (a namespace name)")
]
DnsSubdomain = Annotated[
    str,
    _matching(
        _DNS_SUBDOMAIN,
        "a DNS subdomain name such as lbhc (lowercase letters, digits, dashes and dots)",
    ),
]
QualifiedName = Annotated[
    str,
    _matching(
        _QUALIFIED_NAME,
        "a qualified name such as lbhc.dev/ignore or example.com/my-lb ([prefix/]name)",
    ),
]
LabelSelectors = Annotated[str, AfterValidator(_label_selectors)]
# A list written `a,b` in flags and variables; NoDecode keeps pydantic-settings from
# expecting JSON there.
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_split_commas)]
GceNames = Annotated[list[GceName], NoDecode, BeforeValidator(_split_commas)]
QualifiedNames = Annotated[list[QualifiedName], NoDecode, BeforeValidator(_split_commas)]


def is_duration(field_metadata: list[Any]) -> bool:
    return any(getattr(m, "func", None) is as_duration for m in field_metadata)
