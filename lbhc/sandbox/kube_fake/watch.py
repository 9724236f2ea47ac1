"""Watch streams, as the apiserver's watch cache serves them.

One JSON event per line: {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}},
objects with kind and apiVersion. resourceVersion "" or "0" starts with a synthetic ADDED
per current object, then follows; any other starts after it. sendInitialEvents=true (with
resourceVersionMatch=NotOlderThan and bookmarks) sends the current objects, then a BOOKMARK
annotated "k8s.io/initial-events-end", as for client-go's WatchList. A version older than the kept
history gets HTTP 200 and one ERROR event (410 Expired), as the watch cache answers.

Selectors apply to each change's new and old object, with the cacher's rules: an object that
starts matching is ADDED, one that stops matching is DELETED (its old content at the change's
resourceVersion), one that matches before and after is MODIFIED.

The generator yields b"" while idle (the loopback server's tick to notice a stop or a client
that went away) and raises WatchDropped to cut the connection abruptly.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .events import present
from .faults import Faults
from .resources import Resource
from .selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from .status import ApiError, FieldError, bad_request, invalid
from .store import Change, Object, Store, TooNew, TooOld

TICK_SEC = 0.1  # the longest a stream goes without yielding, so it notices a stop promptly
DEFAULT_TIMEOUT_SEC = 1800.0  # the apiserver's --min-request-timeout


TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})  # Go's strconv.ParseBool


class WatchDropped(Exception):
    """Raised inside a stream to cut its connection abruptly (faults.drop_watches)."""


@dataclass(frozen=True)
class WatchRequest:
    resource: Resource
    namespace: str | None
    resource_version: str
    bookmarks: bool
    send_initial_events: bool  # the WatchList protocol (client-go's streaming lists)
    timeout: float
    labels: LabelSelector
    fields: FieldSelector

    def matches(self, obj: Object | None) -> bool:
        return obj is not None and self.labels.matches(obj) and self.fields.matches(obj)


def parse_watch(
    resource: Resource, namespace: str | None, query: Mapping[str, str]
) -> WatchRequest:
    """Checks everything that is a plain HTTP error before the stream starts."""
    rv = query.get("resourceVersion", "")
    if rv not in ("", "0") and not rv.isdigit():
        raise bad_request(f'invalid resource version "{rv}"')
    timeout_text = query.get("timeoutSeconds", "")
    try:
        # 0 means the default, as in the apiserver.
        timeout = float(int(timeout_text or 0)) or DEFAULT_TIMEOUT_SEC
    except ValueError:
        raise bad_request(f'timeoutSeconds: invalid value "{timeout_text}"') from None
    bookmarks = query.get("allowWatchBookmarks", "") in TRUE
    send_initial = query.get("sendInitialEvents", "") in TRUE
    if send_initial and (not bookmarks or query.get("resourceVersionMatch") != "NotOlderThan"):
        raise invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            [
                FieldError(
                    "Forbidden",
                    "sendInitialEvents",
                    "sendInitialEvents requires allowWatchBookmarks=true and "
                    "resourceVersionMatch=NotOlderThan",
                )
            ],
        )
    return WatchRequest(
        resource,
        namespace,
        rv,
        bookmarks,
        send_initial,
        timeout,
        parse_label_selector(query.get("labelSelector", "")),
        parse_field_selector(query.get("fieldSelector", ""), resource),
    )


def stream(
    store: Store,
    faults: Faults,
    request: WatchRequest,
    bookmark_interval: Callable[[], float],
    stop: threading.Event | None = None,
    path: str = "",
    server: str = "",
) -> Iterator[bytes]:
    """The watch's body, one chunk per event. `path` and `server` are what faults match.
    Which drop_watches() ends it is settled now, as the request is taken and before the
    response headers go out: a drop after the client has its response ends this stream even
    if its body has not begun."""
    epoch = faults.watch_epoch
    return _ending_cleanly(
        _stream(store, faults, request, bookmark_interval, stop, path, server, epoch)
    )


def _ending_cleanly(body: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from body
    except _EndCleanly:
        return


def _stream(
    store: Store,
    faults: Faults,
    request: WatchRequest,
    bookmark_interval: Callable[[], float],
    stop: threading.Event | None,
    path: str,
    server: str,
    epoch: int,
) -> Iterator[bytes]:
    deadline = time.monotonic() + request.timeout
    yield from _stall(faults, path, server, stop, epoch)
    initial: list[Object] = []
    error: Object | None = None
    with store.lock:  # never yield while holding it: a slow client would stall every write
        current = store.resource_version
        if request.resource_version in ("", "0") or request.send_initial_events:
            # sendInitialEvents reads "not older than" the version: now is never older.
            position = current
            initial = [obj for key, obj in store.read(request.resource.kind) if _in(request, key)]
        else:
            position = int(request.resource_version)
            try:
                store.changes_since(position)
            except (TooOld, TooNew):
                error = _start_error(position, current, store.compacted)
    if error is not None:
        yield _line("ERROR", error)
        return
    for obj in initial:
        shown = present(request.resource, obj)
        if request.matches(shown):
            yield from _send(faults, path, _line("ADDED", shown))
    if request.send_initial_events:  # the initial state is complete
        end = _bookmark(request.resource, position)
        end["metadata"]["annotations"] = {"k8s.io/initial-events-end": "true"}
        yield _line("BOOKMARK", end)
    next_bookmark = time.monotonic() + bookmark_interval()
    while True:
        changes, position, error = _next_changes(store, position, deadline)
        # After reading: changes that came in as a stall began are held back with the rest.
        yield from _stall(faults, path, server, stop, epoch)
        if error is not None:  # compacted past a watcher that fell behind: it must relist
            yield _line("ERROR", error)
            return
        if faults.watch_epoch != epoch or faults.outage(path, server):
            raise WatchDropped
        if stop is not None and stop.is_set():
            return
        sent = False
        for change in changes:
            if event := _event(request, change):
                yield from _send(faults, path, _line(*event))
                sent = True
        now = time.monotonic()
        if now >= deadline:
            if request.bookmarks:
                yield _line("BOOKMARK", _bookmark(request.resource, position))
            return
        if request.bookmarks and now >= next_bookmark:
            yield _line("BOOKMARK", _bookmark(request.resource, position))
            next_bookmark = now + bookmark_interval()
        elif not sent:
            yield b""


class _EndCleanly(Exception):
    """Ends a stream as if complete, right after a cut event (faults.cut_watch_events)."""


def _send(faults: Faults, path: str, line: bytes) -> Iterator[bytes]:
    """One object event, or the first half of it and the end of the stream."""
    cut = faults.take_cut(path)
    if cut is None:
        yield line
        return
    yield line[: len(line) // 2]
    if cut.clean_end:
        raise _EndCleanly
    raise WatchDropped


def _stall(
    faults: Faults, path: str, server: str, stop: threading.Event | None, epoch: int
) -> Iterator[bytes]:
    """Nothing at all while a stall lasts (ticks only, which send no bytes); a stalled
    stream can still be dropped, or cut by an outage."""
    pause = stop or threading.Event()
    while faults.stalled(path):
        if pause.is_set():
            return
        if faults.watch_epoch != epoch or faults.outage(path, server):
            raise WatchDropped
        pause.wait(TICK_SEC)
        yield b""


def _next_changes(
    store: Store, position: int, deadline: float
) -> tuple[list[Change], int, Object | None]:
    """The changes after `position`, waiting up to a tick for one; the new position."""
    with store.lock:
        try:
            changes = store.changes_since(position)
            if not changes:
                store.changed.wait(min(TICK_SEC, max(deadline - time.monotonic(), 0.0)))
                changes = store.changes_since(position)
        except TooOld:
            message = f"too old resource version: {position} ({store.compacted})"
            return [], position, ApiError(410, message).body()
        return changes, store.resource_version, None


def _in(request: WatchRequest, key: str) -> bool:
    return request.namespace is None or key.startswith(f"{request.namespace}/")


def _event(request: WatchRequest, change: Change) -> tuple[str, Object] | None:
    if change.kind != request.resource.kind or not _in(request, change.key):
        return None
    new = present(request.resource, change.obj) if change.obj is not None else None
    old = present(request.resource, change.prev) if change.prev is not None else None
    now_matches, before_matched = request.matches(new), request.matches(old)
    if now_matches and new is not None:
        return ("MODIFIED" if before_matched else "ADDED"), new
    if before_matched and old is not None:
        gone = copy.deepcopy(old)
        gone["metadata"]["resourceVersion"] = str(change.rv)
        return "DELETED", gone
    return None


def _start_error(position: int, current: int, compacted: int) -> dict[str, Any]:
    if position > current:
        return ApiError(
            504,
            f"Too large resource version: {position}, current: {current}",
            details={
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ]
            },
            retry_after=1,
        ).body()
    return ApiError(410, f"too old resource version: {position} ({compacted})").body()


def _bookmark(resource: Resource, rv: int) -> Object:
    return {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(rv)},
    }


def _line(event_type: str, obj: Object) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"
