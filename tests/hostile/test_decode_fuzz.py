"""Property-based fuzzing of the decode paths the controller and the CLI use: a projection's
model_validate (snapshot files), a list page's model_validate_json (the reflectors'
lists) and the whole snapshot loader. Whatever the input, the result is a projection (that
survives a dump and re-validation unchanged) or one clear line; never another exception."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lbhc.kube.client import describe_kube_error
from lbhc.kube.decode import (
    PROJECTIONS,
    DaemonSetList,
    NodeList,
    ObjectList,
    PodList,
    ServiceList,
    describe_validation_error,
)
from lbhc.kube.snapshot_file import SnapshotFileError, parse_cluster_snapshot
from lbhc.model.cloud import CloudSnapshot
from lbhc.model.cluster import ClusterSnapshot
from lbhc.model.plan import Action
from lbhc.planner.planner import plan
from tests.builders import config
from tests.chaos.record import record
from tests.hostile.fuzzing import fuzz_settings
from tests.hostile.strategies import RAW, json_values, mutated

SECTION = "hostile-input"
LISTS: dict[str, type[ObjectList]] = {
    "Node": NodeList,
    "Service": ServiceList,
    "Pod": PodList,
    "DaemonSet": DaemonSetList,
}
MAX_LINE = 300  # one clear line, whatever the input held
CONFIG = config(cluster_id="fuzz")  # a dump may lack the kube-system Namespace


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and "\r" not in message, repr(message)
    assert len(message) <= MAX_LINE + 400, len(message)  # the file path and EXPECTED on top


def raw_objects(kind: str) -> st.SearchStrategy[Any]:
    return RAW[kind] | mutated(RAW[kind]) | json_values


def test_a_projection_decodes_or_fails_in_one_line(chaos_scale: str) -> None:
    seen: Counter[str] = Counter()

    @fuzz_settings(chaos_scale, examples=300)
    @given(data=st.data(), kind=st.sampled_from(sorted(PROJECTIONS)))
    def check(data: st.DataObject, kind: str) -> None:
        raw = data.draw(raw_objects(kind))
        projection = PROJECTIONS[kind]
        try:
            obj = projection.model_validate(raw)
        except ValidationError as exc:
            message = describe_validation_error(exc)
            assert_one_line(message)
            assert len(message) <= MAX_LINE, message
            seen["invalid"] += 1
            return
        again = projection.model_validate(obj.model_dump(by_alias=True))
        assert again == obj
        seen["valid"] += 1

    check()
    record(SECTION, "projection-decode", examples=sum(seen.values()), crashes=0, **seen)
    assert seen["valid"] and seen["invalid"], seen  # both sides really exercised


def test_a_list_page_decodes_or_fails_in_one_line(chaos_scale: str) -> None:
    seen: Counter[str] = Counter()

    @fuzz_settings(chaos_scale, examples=150)
    @given(data=st.data(), kind=st.sampled_from(sorted(LISTS)))
    def check(data: st.DataObject, kind: str) -> None:
        page = data.draw(
            st.one_of(
                st.lists(raw_objects(kind), max_size=4).map(
                    lambda items: json.dumps(
                        {"kind": f"{kind}List", "metadata": {"continue": ""}, "items": items}
                    ).encode()
                ),
                st.binary(max_size=200),
                json_values.map(lambda value: json.dumps(value).encode()),
            )
        )
        try:
            listed = LISTS[kind].model_validate_json(page)
        except ValidationError as exc:
            assert_one_line(describe_kube_error(exc))  # what the reflector logs
            seen["invalid"] += 1
            return
        assert all(type(item).__name__ == kind for item in listed.items)
        seen["valid"] += 1

    check()
    record(SECTION, "list-page-decode", examples=sum(seen.values()), crashes=0, **seen)
    assert seen["valid"] and seen["invalid"], seen


@st.composite
def snapshot_texts(draw: st.DrawFn) -> str:
    items = draw(
        st.lists(
            st.sampled_from(sorted(RAW)).flatmap(lambda k: RAW[k] | mutated(RAW[k])), max_size=5
        )
    )
    # A real cluster's dump has Nodes and Services (default/kubernetes at least); most drawn
    # dumps start with a well-formed one of each, so the loader is fuzzed past the check that
    # refuses a dump without either, which the rest still meet.
    if draw(st.integers(0, 3)):
        items = [draw(RAW["Node"]), draw(RAW["Service"]), *items]
    document: Any = {"apiVersion": "v1", "kind": "List", "items": items}
    if draw(st.integers(0, 4)) == 0:
        document = draw(json_values)
    text = draw(
        st.sampled_from(
            [json.dumps(document), json.dumps(document, indent=1), yaml.safe_dump(document)]
        )
    )
    form = draw(st.sampled_from(["whole"] * 3 + ["truncated", "garbage"]))
    if form == "truncated":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if form == "garbage":
        return draw(st.text(max_size=60))
    return text


def test_the_snapshot_loader_loads_or_fails_in_one_line(chaos_scale: str) -> None:
    seen: Counter[str] = Counter()

    @fuzz_settings(chaos_scale, examples=150)
    @given(text=snapshot_texts())
    def check(text: str) -> None:
        try:
            snapshot = parse_cluster_snapshot(text, "fuzz.json")
        except SnapshotFileError as exc:
            assert_one_line(str(exc))
            assert str(exc).startswith("cluster snapshot fuzz.json: ")
            seen["refused"] += 1
            return
        assert isinstance(snapshot, ClusterSnapshot)
        assert snapshot.gaps, "a dump can never prove it is complete"
        # What `lbhc plan --cluster-snapshot` does next: it plans, and never removes.
        the_plan = plan(snapshot, CloudSnapshot(), CONFIG)
        assert not {c.action for c in the_plan.changes} & {Action.DETACH, Action.DELETE}
        seen["loaded"] += 1

    check()
    record(SECTION, "snapshot-loader", examples=sum(seen.values()), crashes=0, **seen)
    assert seen["loaded"] and seen["refused"], seen
