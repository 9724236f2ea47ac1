"""The demo's picture (lbhc/demo/picture.py): from a table of small runs, the layout it draws
(rows, bands, ticks, marks) and the page it writes, which must open with no network: every
script inline, nothing fetched. Pure: no sockets, subprocesses or clocks."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from lbhc.demo.picture import (
    DIV_ID,
    LEGEND,
    OUTCOME_STYLES,
    STATE_COLOURS,
    Band,
    panels,
    write_timeline,
)
from lbhc.demo.trace import (
    HEALTH_STATES,
    HEALTHY,
    OUT,
    OUTCOMES,
    UNHEALTHY,
    ConnectionPoint,
    HealthPoint,
    Mark,
    RunTrace,
)


def health(lb: str, node: str, *states: tuple[float, str]) -> tuple[HealthPoint, ...]:
    return tuple(HealthPoint(t, node, lb, state) for t, state in states)


def short(t: float, outcome: str, node: str | None = "node-a") -> ConnectionPoint:
    return ConnectionPoint(t, t + 0.25, outcome, node, "short")


HEALTH_ONLY = RunTrace(
    "upstream/long-delay",
    health("web-0", "node-a", (0, HEALTHY), (5, HEALTHY), (10, HEALTHY)),
    (),
    (),
)
DRAINED = RunTrace(
    "with-lbhc/5s",
    health("web-1", "node-b", (0, HEALTHY), (2, HEALTHY), (4, UNHEALTHY), (6, UNHEALTHY))
    + health("web-0", "node-b", (0, HEALTHY), (4.5, UNHEALTHY), (7, OUT))
    + health("web-0", "node-a", (0, HEALTHY), (7, HEALTHY)),
    (
        short(1.0, "completed"),
        short(5.0, "completed", "node-a"),
        ConnectionPoint(0.5, 7.0, "cut", "node-b", "long"),
        ConnectionPoint(0.5, 9.0, "completed", "node-a", "long"),
    ),
    (Mark(7.0, "deleted"), Mark(3.0, "tainted"), Mark(4.2, "cut from pool")),
)
EVERY_OUTCOME = RunTrace(
    "without-check/5s",
    health("web-0", "node-c", (0, HEALTHY), (9, OUT)),
    tuple(short(float(i), outcome, None if outcome == "refused" else "node-c")
          for i, outcome in enumerate(OUTCOMES)),
    (Mark(3.0, "tainted"), Mark(8.0, "deleted")),
)  # fmt: skip
CONNECTIONS_ONLY = RunTrace("no-health", (), (short(2.0, "timed-out", None),), ())
EMPTY = RunTrace("nothing-recorded", (), (), ())

TABLE = [
    pytest.param([HEALTH_ONLY], id="health only"),
    pytest.param([DRAINED], id="drained"),
    pytest.param([EVERY_OUTCOME], id="every outcome"),
    pytest.param([CONNECTIONS_ONLY, EMPTY], id="connections only and empty"),
    pytest.param([EVERY_OUTCOME, HEALTH_ONLY, DRAINED], id="three runs"),
]


# ---- the layout ------------------------------------------------------------------------


def test_every_state_and_outcome_has_its_own_style_and_legend_place() -> None:
    assert set(STATE_COLOURS) == set(HEALTH_STATES) and set(OUTCOME_STYLES) == set(OUTCOMES)
    assert len(set(OUTCOME_STYLES.values())) == len(OUTCOMES)
    assert len(set(LEGEND)) == len(HEALTH_STATES) + len(OUTCOMES)


def test_the_layout_merges_repeated_states_into_bands_per_load_balancer_and_node() -> None:
    (panel,) = panels([DRAINED])
    assert panel.name == "with-lbhc/5s"
    assert panel.title == "with-lbhc/5s: 4 connections (3 completed, 1 cut)"
    assert panel.rows == (
        "web-0 · node-a",
        "web-0 · node-b",
        "web-1 · node-b",
        "short connections",
        "long connections",
    )
    end = 9.0 + 0.1  # the last record, and a little more so a last state shows
    assert panel.end == pytest.approx(end)
    assert panel.bands == (
        Band("web-0 · node-a", HEALTHY, 0, end),
        Band("web-0 · node-b", HEALTHY, 0, 4.5),
        Band("web-0 · node-b", UNHEALTHY, 4.5, 7),
        Band("web-0 · node-b", OUT, 7, end),
        Band("web-1 · node-b", HEALTHY, 0, 4),
        Band("web-1 · node-b", UNHEALTHY, 4, end),
    )
    assert [(t.row, t.connection.ended, t.connection.outcome) for t in panel.ticks] == [
        ("short connections", 1.25, "completed"),
        ("short connections", 5.25, "completed"),
        ("long connections", 7.0, "cut"),
        ("long connections", 9.0, "completed"),
    ]
    assert [m.text for m in panel.marks] == ["tainted", "cut from pool", "deleted"]


def test_runs_share_one_time_scale_and_each_ends_at_its_own_last_record() -> None:
    short_run, long_run = panels([HEALTH_ONLY, DRAINED])
    tail = 0.1  # 1% of the longest run (9 s), at least 0.1 s
    assert short_run.end == pytest.approx(10 + tail) and long_run.end == pytest.approx(9 + tail)
    assert short_run.title == "upstream/long-delay: no connections recorded"


def test_health_points_out_of_order_are_drawn_in_time_order() -> None:
    run = RunTrace("shuffled", health("lb", "n", (6, OUT), (0, HEALTHY), (3, UNHEALTHY)), (), ())
    (panel,) = panels([run])
    assert [(b.state, b.start, b.end) for b in panel.bands] == [
        (HEALTHY, 0, 3),
        (UNHEALTHY, 3, 6),
        (OUT, 6, pytest.approx(6.1)),
    ]


@pytest.mark.parametrize(
    ("runs", "message"),
    [([], "no runs"), ([EMPTY, EMPTY], "nothing-recorded more than once")],
    ids=["none", "same name twice"],
)
def test_runs_the_panels_could_not_tell_apart_are_refused(
    tmp_path: Path, runs: list[RunTrace], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        write_timeline(runs, tmp_path / "t.html")
    assert not (tmp_path / "t.html").exists()


@pytest.mark.parametrize(
    "make",
    [
        lambda: HealthPoint(0, "n", "lb", "healthy"),
        lambda: HealthPoint(float("nan"), "n", "lb", HEALTHY),
        lambda: HealthPoint(0, "", "lb", HEALTHY),
        lambda: ConnectionPoint(2, 1, "completed", None, "short"),
        lambda: ConnectionPoint(0, 1, "dropped", None, "short"),
        lambda: ConnectionPoint(0, 1, "completed", None, "medium"),
        lambda: Mark(float("inf"), "deleted"),
        lambda: Mark(1, ""),
        lambda: RunTrace("", (), (), ()),
    ],
)
def test_a_record_the_picture_could_not_place_is_refused_where_it_is_made(make: Any) -> None:
    with pytest.raises(ValueError):
        make()


# ---- the page --------------------------------------------------------------------------


class Page(HTMLParser):
    """What an HTML page would make a browser load, and its scripts' text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else ""
        if tag == "script":
            self.scripts.append("")
        if tag == "style":
            self.styles.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data
        else:
            self.text.append(data)


def read_page(path: Path) -> tuple[str, Page]:
    source = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(source)
    page.close()
    return source, page


# Every attribute by which HTML or SVG makes a browser fetch something.
FETCHING = {"src", "href", "xlink:href", "srcset", "data", "poster", "action", "background"}
REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


def assert_self_contained(page: Page, names_with_addresses: bool = False) -> None:
    for tag, attrs in page.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed", "base"), (tag, attrs)
        if tag == "script":
            assert "src" not in attrs, f"a script loaded from {attrs['src']}"
        for name, value in attrs.items():
            if name in FETCHING:
                assert not REMOTE.match(value or ""), f"<{tag} {name}={value!r}>"
    for style in page.styles:
        assert "@import" not in style and "url(" not in style, style
    # Outside the scripts (plotly.js mentions addresses in its own code), no address at all,
    # unless a run's name, shown as text in the page's title, has one.
    if not names_with_addresses:
        assert not re.search(r"https?://", "".join(page.text))
    # plotly.js itself is inline: the one large script.
    assert max(len(script) for script in page.scripts) > 1_000_000
    assert any("plotly.js v" in script[:300] for script in page.scripts)


def figure(page: Page) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces and layout the page hands plotly.js."""
    (script,) = [s for s in page.scripts if "Plotly.newPlot(" in s]
    rest = script[script.index("Plotly.newPlot(") + len("Plotly.newPlot(") :].lstrip()
    decoder = json.JSONDecoder()
    div, at = decoder.raw_decode(rest)
    assert div == DIV_ID
    rest = rest[at:].lstrip().removeprefix(",").lstrip()
    data, at = decoder.raw_decode(rest)
    layout, _ = decoder.raw_decode(rest[at:].lstrip().removeprefix(",").lstrip())
    return data, layout


@pytest.mark.parametrize("runs", TABLE)
def test_the_page_is_self_contained_and_shows_every_run_and_outcome(
    tmp_path: Path, runs: list[RunTrace]
) -> None:
    path = tmp_path / "timeline.html"
    write_timeline(runs, path)
    source, page = read_page(path)
    assert_self_contained(page)

    data, layout = figure(page)
    titles = [a["text"] for a in layout["annotations"] if a.get("yref") == "paper"]
    for run in runs:
        assert run.name in source
        assert any(title.startswith(f"{run.name}:") for title in titles), titles
    # One legend entry per health state and per outcome that any run has, named as recorded.
    legend = sorted(trace["name"] for trace in data if trace.get("showlegend"))
    states = {p.state for run in runs for p in run.health}
    outcomes = {c.outcome for run in runs for c in run.connections}
    assert legend == sorted(
        [f"node {state}" for state in states] + [f"connection {o}" for o in outcomes]
    )
    for outcome in outcomes:
        assert f"connection {outcome}" in source
    # A panel per run: its own y axis, rows in the layout's order, top to bottom.
    for number, panel in enumerate(panels(runs), start=1):
        axis = layout["yaxis" if number == 1 else f"yaxis{number}"]
        if panel.rows:
            assert axis["categoryarray"] == list(panel.rows)
            assert axis["range"] == [len(panel.rows) - 0.5, -0.5]
        marks = [s for s in layout.get("shapes", []) if s["xref"] == axis["anchor"]]
        assert sorted(s["x0"] for s in marks) == [m.t for m in panel.marks]


@pytest.mark.parametrize("runs", TABLE)
def test_the_same_runs_give_the_same_bytes(tmp_path: Path, runs: list[RunTrace]) -> None:
    write_timeline(runs, tmp_path / "a.html")
    write_timeline(runs, tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_markup_in_a_name_is_shown_as_text_never_run(tmp_path: Path) -> None:
    name = '</script><script src="https://example.invalid/x.js"></script>$x$'
    run = RunTrace(
        name,
        health("<b>lb</b>", "n&1", (0, HEALTHY)),
        (short(0, "completed", "<i>n</i>"),),
        (Mark(0.1, "<img src=x>"),),
    )
    path = tmp_path / "timeline.html"
    write_timeline([run], path)
    source, page = read_page(path)
    assert_self_contained(page, names_with_addresses=True)
    assert "<script src" not in source and "<img src" not in source
    _, layout = figure(page)
    (title,) = [a["text"] for a in layout["annotations"] if a.get("yref") == "paper"]
    # plotly.js draws &lt; as <, and $ as itself rather than handing it to MathJax.
    assert title.startswith("&lt;/script&gt;&lt;script src=") and "&#36;x&#36;" in title


def test_only_an_html_file_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"must end in \.html"):
        write_timeline([DRAINED], tmp_path / "timeline.svg")
    assert not list(tmp_path.iterdir())
