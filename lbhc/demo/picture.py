"""The picture of a scale-down: one self-contained HTML file with a panel per run, each showing
every node's health per load balancer as bands over time, every client connection as a tick
where it ended (coloured by how it ended; a long connection also as a line over its life),
and the run's events as vertical lines. The panels share one time axis, so zooming one zooms
all and runs compare at a glance.

Drawn with plotly, its JavaScript written into the file: the page opens in a browser with no
network (no script, style sheet, font or image is fetched). plotly is in the sandbox extra
only (`pip install 'lbhc[sandbox]'`), never in the controller image, and is imported only
when a picture is written.

`panels()` lays the picture out without plotly (what is drawn where), so its structure is
plain data to test; `write_timeline()` draws that layout."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbhc.demo.trace import (
    HEALTH_STATES,
    HEALTHY,
    KINDS,
    OUT,
    OUTCOMES,
    UNHEALTHY,
    ConnectionPoint,
    Mark,
    RunTrace,
)

SUFFIX = ".html"
INSTALL = "pip install 'lbhc[sandbox]'"
# The page's element id: fixed (plotly makes up a random one otherwise) so the same runs
# always give the same file.
DIV_ID = "lbhc-timeline"

STATE_COLOURS = {HEALTHY: "#2e7d32", UNHEALTHY: "#c62828", OUT: "#9e9e9e"}
# Colour and marker per outcome: the shapes tell them apart without colour too.
OUTCOME_STYLES = {
    "completed": ("#43a047", "line-ns-open"),
    "failed": ("#d50000", "x"),
    "reset": ("#ff6d00", "triangle-up"),
    "refused": ("#6a1b9a", "square"),
    "timed-out": ("sienna", "diamond"),
    "cut": ("black", "star"),
}

ROW_PIXELS = 26  # per band or connection row
PANEL_PIXELS = 110  # per panel: its title, its time axis, the space between panels
MARGINS = {"t": 140, "b": 60, "l": 40, "r": 30}
# The legend's order: the health states, then the outcomes, as the trace module lists them.
LEGEND = [f"node {state}" for state in HEALTH_STATES] + [f"connection {o}" for o in OUTCOMES]


@dataclass(frozen=True)
class Band:
    """`state` on one row (a node in one load balancer) from `start` to `end`."""

    row: str
    state: str
    start: float
    end: float


@dataclass(frozen=True)
class Tick:
    """A connection on its kind's row."""

    row: str
    connection: ConnectionPoint


@dataclass(frozen=True)
class Panel:
    """One run as drawn: its rows top to bottom (load balancer and node, then each kind of
    connection), the bands on them, the connection ticks, the marks, and where its last
    bands end."""

    name: str
    title: str
    rows: tuple[str, ...]
    bands: tuple[Band, ...]
    ticks: tuple[Tick, ...]
    marks: tuple[Mark, ...]
    end: float


def health_row(load_balancer: str, node: str) -> str:
    return f"{load_balancer} · {node}"


def connection_row(kind: str) -> str:
    return f"{kind} connections"


def panels(runs: Sequence[RunTrace]) -> tuple[Panel, ...]:
    """The layout of the picture of `runs`, in their order (ValueError for none, or for two
    runs of one name: the panels would not tell them apart)."""
    if not runs:
        raise ValueError("no runs to draw")
    names = [run.name for run in runs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"run names must differ: {', '.join(twice)} more than once")
    longest = max(run.last_t for run in runs)
    # A run's last states are drawn a little past its last record, so a state first seen
    # at the very end still shows; beyond that nothing was recorded.
    tail = max(0.01 * longest, 0.1)
    return tuple(_panel(run, run.last_t + tail) for run in runs)


def _panel(run: RunTrace, end: float) -> Panel:
    series: dict[str, list[tuple[float, str]]] = {}
    for point in run.health:
        row = health_row(point.load_balancer, point.node)
        series.setdefault(row, []).append((point.t, point.state))
    rows = sorted(series, key=lambda row: tuple(row.split(" · ", 1)))
    bands = []
    for row in rows:
        points = sorted(series[row], key=lambda point: point[0])  # stable: ties keep order
        for i, (start, state) in enumerate(points):
            if i and points[i - 1][1] == state:
                continue  # the same state again: the band goes on
            following = [t for t, other in points[i + 1 :] if other != state]
            bands.append(Band(row, state, start, following[0] if following else end))
    kinds = [kind for kind in KINDS if any(c.kind == kind for c in run.connections)]
    ticks = tuple(
        Tick(connection_row(c.kind), c)
        for c in sorted(run.connections, key=lambda c: (c.ended, c.started))
    )
    marks = tuple(sorted(run.marks, key=lambda mark: mark.t))
    return Panel(
        name=run.name,
        title=_title(run),
        rows=(*rows, *(connection_row(kind) for kind in kinds)),
        bands=tuple(bands),
        ticks=ticks,
        marks=marks,
        end=end,
    )


def _title(run: RunTrace) -> str:
    total = len(run.connections)
    if not total:
        return f"{run.name}: no connections recorded"
    counts = [
        f"{n} {outcome}"
        for outcome in OUTCOMES
        if (n := sum(1 for c in run.connections if c.outcome == outcome))
    ]
    return f"{run.name}: {total} connection{'s' if total != 1 else ''} ({', '.join(counts)})"


def require_plotly() -> None:
    """A SetupError (one line, exit 2 from the CLI) when plotly cannot be imported: lbhc was
    installed without its sandbox extra. Called before a long demo run, so that run is not
    wasted on a picture that cannot be drawn."""
    import importlib.util

    from lbhc.errors import SetupError

    try:
        found = importlib.util.find_spec("plotly") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise SetupError(
            f"drawing the demo's timeline needs plotly, which lbhc's sandbox extra installs: "
            f"{INSTALL} (from a checkout: pip install -e '.[sandbox]')"
        )


def write_timeline(runs: Sequence[RunTrace], path: Path) -> None:
    """Write the picture of `runs` to `path` (an .html file): one page, every script inline,
    that opens in a browser without network access. Same runs, same bytes."""
    if path.suffix.lower() != SUFFIX:
        raise ValueError(f"{path}: the timeline is an HTML page, its name must end in {SUFFIX}")
    layout = panels(runs)
    require_plotly()
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as exc:  # found but broken (a dependency of its own missing)
        from lbhc.errors import SetupError

        raise SetupError(f"plotly does not import ({exc}): {INSTALL}") from exc
    figure = _figure(layout, go, make_subplots)
    page = figure.to_html(
        include_plotlyjs=True,  # inline: nothing to fetch
        include_mathjax=False,
        full_html=True,
        div_id=DIV_ID,
        config={"displaylogo": False, "responsive": True, "scrollZoom": False},
    )
    title = "lbhc demo timeline: " + ", ".join(panel.name for panel in layout)
    page = page.replace("<head>", f"<head>\n    <title>{html.escape(title)}</title>", 1)
    path.write_text(page, encoding="utf-8")


def _figure(layout: tuple[Panel, ...], go: Any, make_subplots: Any) -> Any:
    sizes = [max(len(panel.rows), 1) for panel in layout]
    height = ROW_PIXELS * sum(sizes) + PANEL_PIXELS * len(layout) + MARGINS["t"] + MARGINS["b"]
    figure = make_subplots(
        rows=len(layout),
        cols=1,
        shared_xaxes=True,
        row_heights=[size / sum(sizes) for size in sizes],
        vertical_spacing=min(80 / height, 0.9 / max(len(layout) - 1, 1)),
        subplot_titles=[_escaped(panel.title) for panel in layout],
    )
    legend: set[str] = set()  # one legend entry per state and outcome, whatever the panel

    def first(group: str) -> bool:
        shown = group not in legend
        legend.add(group)
        return shown

    end = max(panel.end for panel in layout)
    for number, panel in enumerate(layout, start=1):
        at = {"row": number, "col": 1}
        for state in HEALTH_STATES:
            bands = [band for band in panel.bands if band.state == state]
            if not bands:
                continue
            group = f"node {state}"
            figure.add_trace(
                go.Bar(
                    orientation="h",
                    y=[_escaped(band.row) for band in bands],
                    base=[band.start for band in bands],
                    x=[band.end - band.start for band in bands],
                    marker={"color": STATE_COLOURS[state], "line": {"width": 0}},
                    width=0.7,
                    name=group,
                    legendgroup=group,
                    legendrank=_legend_rank(group),
                    showlegend=first(group),
                    hovertext=[_band_text(band) for band in bands],
                    hoverinfo="text",
                ),
                **at,
            )
        for outcome in OUTCOMES:
            ticks = [tick for tick in panel.ticks if tick.connection.outcome == outcome]
            if not ticks:
                continue
            colour, symbol = OUTCOME_STYLES[outcome]
            group = f"connection {outcome}"
            lives = [tick for tick in ticks if tick.connection.kind == "long"]
            if lives:  # a long connection's life, as a thin line up to its tick
                spans = [(tick.connection.started, tick.connection.ended) for tick in lives]
                figure.add_trace(
                    go.Scatter(
                        mode="lines",
                        x=[t for span in spans for t in (*span, None)],  # None: a gap
                        y=[_escaped(tick.row) for tick in lives for _ in range(3)],
                        line={"color": colour, "width": 1},
                        opacity=0.45,
                        legendgroup=group,
                        showlegend=False,
                        hoverinfo="skip",
                    ),
                    **at,
                )
            figure.add_trace(
                go.Scatter(
                    mode="markers",
                    x=[tick.connection.ended for tick in ticks],
                    y=[_escaped(tick.row) for tick in ticks],
                    marker={
                        "color": colour,
                        "symbol": symbol,
                        "size": 11,
                        "line": {"color": colour, "width": 2},
                    },
                    name=group,
                    legendgroup=group,
                    legendrank=_legend_rank(group),
                    showlegend=first(group),
                    hovertext=[_tick_text(tick.connection) for tick in ticks],
                    hoverinfo="text",
                ),
                **at,
            )
        for mark in panel.marks:
            figure.add_vline(
                x=mark.t,
                line={"color": "#1a237e", "width": 1, "dash": "dot"},
                annotation={
                    "text": _escaped(mark.text),
                    "textangle": -90,
                    "font": {"size": 11, "color": "#1a237e"},
                    "bgcolor": "rgba(255,255,255,0.8)",
                    "hovertext": _escaped(f"{mark.text} at {mark.t:.2f} s"),
                },
                annotation_position="top right",
                **at,
            )
        figure.update_yaxes(
            categoryorder="array",
            categoryarray=[_escaped(row) for row in panel.rows],
            range=[len(panel.rows) - 0.5, -0.5],  # the first row at the top
            automargin=True,
            **at,
        )
        if not panel.rows:
            figure.update_yaxes(visible=False, **at)
    figure.update_xaxes(range=[0, end], showticklabels=True, ticksuffix=" s", zeroline=False)
    figure.update_xaxes(title_text="seconds since the run started", row=len(layout), col=1)
    figure.update_layout(
        title={
            "text": "Node health per load balancer and client connections, by run",
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": 24},
        },
        template="plotly_white",
        barmode="overlay",
        height=height,
        hovermode="closest",
        # Above the first panel's title, below the page's.
        legend={
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1 + 45 / (height - MARGINS["t"] - MARGINS["b"]),
            "x": 0,
            "xanchor": "left",
        },
        margin=MARGINS,
    )
    return figure


def _legend_rank(group: str) -> int:
    return 1000 + LEGEND.index(group)  # plotly's default rank is 1000


def _band_text(band: Band) -> str:
    return f"{_escaped(band.row)}: {band.state}<br>{band.start:.2f} s to {band.end:.2f} s"


def _tick_text(connection: ConnectionPoint) -> str:
    node = _escaped(connection.node) if connection.node else "no node"
    lasted = connection.ended - connection.started
    return (
        f"{connection.kind} connection {connection.outcome} ({node})<br>"
        f"{connection.started:.2f} s to {connection.ended:.2f} s ({lasted:.2f} s)"
    )


def _escaped(text: str) -> str:
    """plotly renders a subset of HTML in its texts: a name with < or & shows as typed. A
    text between $ signs would be LaTeX, drawn by MathJax, which the page does not carry."""
    text = html.escape(text, quote=False)
    return text.replace("$", "&#36;")
