"""The figures pipeline behind docs/reliability.md: record -> JSON lines -> markdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos import report
from tests.chaos.record import record


def test_records_go_to_the_report_file_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHAOS_REPORT_FILE", raising=False)
    record("kill-9", "ignored", trials=1)  # no file named: nothing written anywhere
    out = tmp_path / "chaos.jsonl"
    monkeypatch.setenv("CHAOS_REPORT_FILE", str(out))
    record("kill-9", "apply", trials=50, leaked=0, converge_s=[1.5, 2.0])
    record("kill-9", "apply-3-replicas", trials=10, leaked=0)
    sections = report.load(out)
    assert [r["case"] for r in sections["kill-9"]] == ["apply", "apply-3-replicas"]
    table = report.markdown(sections)
    assert "| apply | [1.5, 2.0] | 0 | 50 |" in table
    assert "| apply-3-replicas |  | 0 | 10 |" in table


def test_a_bad_line_names_the_file_and_line(tmp_path: Path) -> None:
    out = tmp_path / "chaos.jsonl"
    out.write_text('{"section": "a", "case": "b"}\nnot json\n')
    with pytest.raises(SystemExit, match=r"chaos.jsonl:2: not a JSON line"):
        report.load(out)


def test_fault_classes_roll_up_with_their_worst_case(tmp_path: Path) -> None:
    rows = [
        {"case": "a", "fault_class": "429", "faults_injected": 5, "converge_s": 1.0},
        {"case": "b", "fault_class": "429", "faults_injected": 7, "converge_s": 9.0},
        {"case": "c", "fault_class": "429", "faults_injected": 1, "converge_s": 2.0},
        {"case": "d", "fault_class": "stall", "faults_injected": 2, "converge_s": None},
        {"case": "e", "faults_injected": 100},  # no class: left out of the rollup
    ]
    classes = {r["case"]: r for r in report.rollup(rows)}
    assert set(classes) == {"429", "stall"}
    assert classes["429"]["runs"] == 3 and classes["429"]["faults_injected"] == 13
    assert (classes["429"]["converge_s_median"], classes["429"]["converge_s_max"]) == (2.0, 9.0)
    assert classes["stall"]["converge_s_max"] is None
    assert "compute: per fault class" in report.with_rollups({"compute": rows})
    assert report.with_rollups({"kill-9": [{"case": "x"}]}) == {"kill-9": [{"case": "x"}]}
