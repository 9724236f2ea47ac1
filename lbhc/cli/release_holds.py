"""`lbhc release-holds`: the cluster's part of an uninstall when hold.deletion was on. It takes
lbhc's delay-deletion annotation (HOLD_ANNOTATION) off every Node that carries it, with the
merge patch the controller uses, which names that one annotation and nothing else: other
annotations, other controllers' delay-deletion ones included, stay. Kubernetes settings only
(`lbhc teardown` is the GCE part). Run it after scaling lbhc to 0, or a running replica adds
the annotation again, and before `kubectl delete -k` removes lbhc's RBAC for patching nodes.
Safe to run again; `--dry-run` lists the nodes and changes nothing.

The patches go one at a time, as `kubectl annotate` sends them: the API server's priority and
fairness pace them, and a failure stops the run at the node it names."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from lbhc.cli.parser import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK

if TYPE_CHECKING:
    from lbhc.kube.client import KubeApi, KubeTarget
    from lbhc.kube.decode import Undecodable
    from lbhc.model.cluster import Node

# A progress line on stderr every this many nodes, or this often, whichever comes first.
PROGRESS_EVERY_NODES = 100
PROGRESS_EVERY_SEC = 5.0
# Nodes named in a text line; JSON lists them all.
_NAME_AT_MOST = 10
NOT_FOUND, FORBIDDEN = 404, 403
_ADMIN = "or with an admin kubeconfig (--kubeconfig / --context)"


@dataclass(frozen=True)
class Released:
    dry_run: bool
    held: tuple[str, ...]  # carried lbhc's annotation when listed
    released: tuple[str, ...]  # patched: carry it no more (dry run: none)
    gone: tuple[str, ...]  # deleted between the list and their patch
    others: tuple[tuple[str, tuple[str, ...]], ...]  # node, its other delay-deletion keys
    unread: tuple[Undecodable, ...]  # Nodes that could not be decoded: not looked at

    def summary(self) -> str:
        if not self.held:
            head = "No node carries lbhc's hold"
        elif self.dry_run:
            head = f"Would remove lbhc's hold from {len(self.held)} node(s)"
        else:
            gone = f" ({len(self.gone)} more deleted meanwhile)" if self.gone else ""
            head = f"Removed lbhc's hold from {len(self.released)} node(s){gone}"
        if self.others:
            verb = "carries" if len(self.others) == 1 else "carry"
            listed = _first([f"{node} ({', '.join(keys)})" for node, keys in self.others])
            head += (
                f"; {len(self.others)} still {verb} other delay-deletion annotations "
                f"(not lbhc's): {listed}"
            )
        return head + ("." if not self.dry_run else ". Nothing was changed (--dry-run).")

    def to_json(self) -> dict[str, Any]:
        from lbhc.planner.hold import HOLD_ANNOTATION

        return {
            "annotation": HOLD_ANNOTATION,
            "dryRun": self.dry_run,
            "held": list(self.held),
            "released": list(self.released),
            "gone": list(self.gone),
            "otherHolds": [{"node": n, "annotations": list(keys)} for n, keys in self.others],
            "unread": [{"node": u.key, "problem": u.problem} for u in self.unread],
            "message": self.summary(),
        }


def release_holds(args: argparse.Namespace) -> int:
    from lbhc.kube.client import KubeApi, connect
    from lbhc.planner.hold import HOLD_ANNOTATION, is_held, others_holding
    from lbhc.settings import KubeOnlySettings, load_settings

    settings = load_settings(
        args.config, base=KubeOnlySettings, kubeconfig=args.kubeconfig, context=args.context
    )
    kube_config = settings.kube_config()
    api_client, target = connect(kube_config)
    try:
        api = KubeApi(api_client, kube_config, target=target)
        nodes, unread = _list_nodes(api, target)
        held = tuple(n.name for n in nodes if is_held(n))
        others = tuple((n.name, keys) for n in nodes if (keys := others_holding(n)))
        if args.dry_run:
            released: tuple[str, ...] = ()
            gone: tuple[str, ...] = ()
        else:
            progress = _Progress(len(held), sys.stderr)
            try:
                released, gone = _release(api, target, held, progress)
            except KeyboardInterrupt:
                print(
                    f"lbhc: error: interrupted: {progress.account()}; run it again to finish "
                    "(safe to repeat)",
                    file=sys.stderr,
                )
                return EXIT_INTERRUPTED
        result = Released(args.dry_run, held, released, gone, others, unread)
    finally:
        api_client.close()
    if args.output == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        if args.dry_run and held:
            print(f"Would remove {HOLD_ANNOTATION} from:")
            print("\n".join(f"  {name}" for name in held))
        print(result.summary())
    if unread:
        return _unread(unread)
    return EXIT_OK


def _list_nodes(
    api: KubeApi, target: KubeTarget | None
) -> tuple[list[Node], tuple[Undecodable, ...]]:
    from lbhc.kube.client import KubeReadError, explain, list_all, status_of, where
    from lbhc.kube.decode import NodeList
    from lbhc.kube.resources import Resource

    try:
        listing = list_all(api, Resource.NODES, NodeList)
    except Exception as exc:
        why, fix = explain(exc, target, "list nodes", api.config)
        if status_of(exc) == FORBIDDEN:
            fix = (
                "lbhc's RBAC for listing nodes (ClusterRole lbhc, deploy/base) is gone, or the "
                "kubeconfig's identity lacks it: run `lbhc release-holds` before "
                f"`kubectl delete -k`, {_ADMIN}"
            )
        raise KubeReadError(f"cannot list nodes from {where(target)}: {why}; {fix}") from exc
    nodes = sorted(listing.items, key=lambda n: n.name)
    return nodes, listing.undecodable


def _release(
    api: KubeApi, target: KubeTarget | None, held: Sequence[str], progress: _Progress
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(released, gone): a Node deleted since the list (404) carries nothing any more."""
    from lbhc.errors import RunFailure
    from lbhc.kube.client import explain, status_of, where
    from lbhc.planner.hold import HOLD_ANNOTATION

    released: list[str] = []
    gone: list[str] = []
    for name in held:
        try:
            api.patch_node_annotation(name, HOLD_ANNOTATION, None)
            released.append(name)
        except Exception as exc:
            if status_of(exc) != NOT_FOUND:
                why, fix = explain(exc, target, "patch nodes", api.config)
                if status_of(exc) == FORBIDDEN:
                    fix = (
                        "lbhc's RBAC for patching nodes (ClusterRole lbhc-hold-deletion, from "
                        "deploy/components/hold-deletion) is gone or missing, or the "
                        "kubeconfig's identity lacks it: run `lbhc release-holds` before "
                        f"`kubectl delete -k`, {_ADMIN}"
                    )
                raise RunFailure(
                    f"cannot remove {HOLD_ANNOTATION} from Node {name} at {where(target)}: "
                    f"{why}; {fix} ({progress.account()}; running it again is safe)"
                ) from exc
            gone.append(name)
        progress.advance()
    return tuple(released), tuple(gone)


class _Progress:
    """A line on `err` every PROGRESS_EVERY_NODES nodes or PROGRESS_EVERY_SEC seconds while
    nodes remain; what was done, for a run cut short."""

    def __init__(
        self, total: int, err: TextIO, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._total, self._err, self._clock = total, err, clock
        self._started = self._said_at = clock()
        self.done = 0

    def advance(self) -> None:
        self.done += 1
        now = self._clock()
        due = self.done % PROGRESS_EVERY_NODES == 0 or now - self._said_at >= PROGRESS_EVERY_SEC
        if due and self.done < self._total:
            rate = self.done / max(now - self._started, 1e-9)
            self._err.write(
                f"lbhc: released {self.done} of {self._total} node(s), {rate:.1f}/s, "
                f"~{(self._total - self.done) / rate:.0f} s left\n"
            )
            self._err.flush()
            self._said_at = now

    def account(self) -> str:
        return f"{self.done} of the {self._total} node(s) that carried lbhc's hold are done"


def _unread(unread: Sequence[Undecodable]) -> int:
    from lbhc.planner.hold import HOLD_ANNOTATION

    first = unread[0]
    more = f" and {len(unread) - 1} more" if len(unread) > 1 else ""
    print(
        f"lbhc: error: {len(unread)} Node(s) could not be decoded, so lbhc cannot tell whether "
        f"they carry its hold and left them as they are ({first.key}: {first.problem}{more}): "
        f"look with `kubectl get node {first.key} -o yaml` and, if the annotation is there, "
        f"remove it: `kubectl annotate node {first.key} {HOLD_ANNOTATION}-`",
        file=sys.stderr,
    )
    return EXIT_ERROR


def _first(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAME_AT_MOST])
    return shown + (f" and {len(names) - _NAME_AT_MOST} more" if len(names) > _NAME_AT_MOST else "")
