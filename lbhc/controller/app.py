"""Wiring for `lbhc run`: the caches, elector, recorder, HTTP server and loop, started and
stopped together. Usable from a thread, so tests can run several replicas in one process."""

from __future__ import annotations

import functools
import logging
import os
import secrets
import socket
import threading
from dataclasses import dataclass
from typing import Any

from lbhc.controller.backoff import Backoff
from lbhc.controller.cached_read import CachedRead
from lbhc.controller.controller import Controller, ControllerOptions
from lbhc.controller.deletion_holder import DeletionHolder, HolderOptions
from lbhc.controller.events import EventRecorder, ObjectRef
from lbhc.controller.http import health_server
from lbhc.controller.leader import LeaseConfig, LeaseElector
from lbhc.controller.metrics import Metrics
from lbhc.controller.readiness_enforcer import ReadinessEnforcer
from lbhc.controller.reflector import Reflector
from lbhc.controller.trigger import Trigger
from lbhc.gce.client import GceClient
from lbhc.httpserver import BindError, LoopbackServer
from lbhc.kube.cache import ClusterCache
from lbhc.kube.client import (
    KubeApi,
    connect,
    describe_kube_error,
    read_cloud_provider_uid,
    read_kube_proxy_replacement,
    read_kube_system_uid,
    where,
)
from lbhc.kube.resources import Resource
from lbhc.planner.config import ReadinessPolicy
from lbhc.planner.replacement import KNOWN_REPLACEMENT_NAMES, REPLACEMENT_NAMESPACE
from lbhc.probe.prober import NodeProber
from lbhc.settings import Settings
from lbhc.settings.groups import ControllerSettings, HttpSettings, LeaderElectionSettings

log = logging.getLogger(__name__)


def default_identity() -> str:
    """POD_NAME in a cluster (the Deployment sets it); else hostname plus a random suffix, so
    two processes on one host never share an identity."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{secrets.token_hex(3)}"


# Defaults as the settings groups write them (`lbhc run` passes its settings; tests override
# a few).
_LOOP, _ELECTION, _HTTP = ControllerSettings(), LeaderElectionSettings(), HttpSettings()


@dataclass(frozen=True)
class RunOptions:
    dry_run: bool = _LOOP.dry_run
    leader_elect: bool = _ELECTION.enabled
    lease_duration: float = _ELECTION.lease_duration
    renew_deadline: float = _ELECTION.renew_deadline
    retry_period: float = _ELECTION.retry_period
    lease_namespace: str = "lbhc-system"
    lease_name: str = _ELECTION.resource_name
    resync_period: float = _LOOP.resync_period
    http_address: str = _HTTP.address
    identity: str = ""
    kube_host: str | None = None  # a plain URL instead of kubeconfig (tests, the sandbox)
    watch_timeout_sec: int = 300
    # enforce mode: how long a readiness path must stay right before it is patched
    readiness_settle_sec: float = 30.0

    @classmethod
    def of(cls, settings: Settings) -> RunOptions:
        loop, election = settings.controller, settings.leader_election
        return cls(
            dry_run=loop.dry_run,
            leader_elect=election.enabled,
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
            lease_namespace=election.resource_namespace,
            lease_name=election.resource_name,
            resync_period=loop.resync_period,
            http_address=settings.http.address,
        )


class ControllerApp:
    def __init__(self, settings: Settings, options: RunOptions) -> None:
        self.settings = settings
        self.options = options
        self.identity = options.identity or default_identity()
        self.metrics = Metrics()
        self.stop_event = threading.Event()
        kube_config = settings.kube_config(host=options.kube_host)
        api_client, target = connect(kube_config)
        self.api = KubeApi(
            api_client,
            kube_config,
            settings.kube_proxy.namespace,
            settings.kube_proxy.selector,
            settings.readiness.selector,
            target,
        )
        self.trigger = Trigger()
        self.elector: LeaseElector | None = None
        if options.leader_elect and not options.dry_run:
            self.elector = LeaseElector(
                self.api,
                LeaseConfig(
                    options.lease_namespace,
                    options.lease_name,
                    self.identity,
                    options.lease_duration,
                    options.renew_deadline,
                    options.retry_period,
                ),
                on_change=self._leadership_changed,
            )
        self.gce = GceClient(
            settings.gce_client_config(
                read_only=options.dry_run, client_id=self.identity, controller=True
            ),
            write_guard=self.elector.may_write if self.elector else None,
            observer=self.metrics.observe_gce_call,
        )
        self.recorder = EventRecorder(
            self.api,
            self.identity,
            on_dropped=lambda reason: self.metrics.events_dropped.labels(reason).inc(),
        )
        self.cache: ClusterCache | None = None
        self.controller: Controller | None = None
        self.reflectors: list[Reflector] = []
        self.http: LoopbackServer | None = None
        self.prober: NodeProber | None = None
        if settings.probe.enabled:
            self.prober = NodeProber(
                settings.health_check.port,
                settings.probe.interval_sec,
                settings.probe.timeout_sec,
                self.trigger.fire,
                refusal_window=settings.probe.refusal_window_sec,
                observe=lambda result: self.metrics.probes.labels(result).inc(),
            )

        # Last, once nothing else here can fail: a port that is taken ends `lbhc run` with
        # one line before it announces that it is starting.
        self.http = self._bind_http()

    def _bind_http(self) -> LoopbackServer:
        try:
            return health_server(
                self.options.http_address, self.metrics, self.ready, self._last_plan
            ).bind()
        except BindError as exc:
            raise exc.with_flag("--http-address") from exc

    def _leadership_changed(self, leader: bool) -> None:
        self.metrics.leader.set(1 if leader else 0)
        if leader:
            self.trigger.fire("became leader")
        elif self.controller is not None:
            self.controller.leadership_lost()

    def _enforcer(self) -> ReadinessEnforcer:
        return ReadinessEnforcer(
            self.api,
            self.metrics,
            self.recorder.record,
            self.elector.may_write if self.elector else lambda: True,
            self.trigger.fire,
            settle_sec=self.options.readiness_settle_sec,
        )

    def _holder(self) -> DeletionHolder | None:
        hold = self.settings.hold
        if hold.deletion != "on":
            return None
        return DeletionHolder(
            self.api,
            self.metrics,
            self.recorder.record,
            self.elector.may_write if self.elector else lambda: True,
            self.trigger.fire,
            HolderOptions(
                self.settings.hold_config(),
                writes_per_sec=hold.writes_per_sec,
                autoscaler_timeout_sec=hold.autoscaler_timeout_sec,
                dry_run=self.options.dry_run,
            ),
        ).start()

    def ready(self) -> tuple[bool, str]:
        if self.cache is None or not self.cache.synced():
            return False, "caches not synced"
        if self.controller is None:
            return False, "starting"
        if self.controller.gce_ok is False:
            return False, "GCE not reachable"
        if self.controller.gce_ok is None and self._reads_gce():
            # Ready means "has planned": a leader is not ready before its first GCE read.
            return False, "first GCE read pending"
        return True, "ok"

    def _reads_gce(self) -> bool:
        """Followers never read GCE; their readiness is their caches'."""
        return self.options.dry_run or self.elector is None or self.elector.may_write()

    def _last_plan(self) -> dict[str, Any] | None:
        last = self.controller.last_pass if self.controller else None
        if last is None:
            return None
        body = last.to_json()
        holder = self.controller.holder if self.controller else None
        if holder is not None and holder.last is not None:
            body["holds"] = holder.last.to_json()  # each node's deletion hold, as decided
        return body

    def run(self) -> None:
        """Blocks until stop(). Order matters on the way out: stop writing first."""
        self.http = (self.http or self._bind_http()).start()
        log.info("serving /healthz, /readyz and /metrics on %s", self.http.url)
        # Which cluster and endpoint, once: the failures logged later name what failed.
        log.info(
            "reading %s and the Compute API at %s", where(self.api.target), self.gce.config.endpoint
        )
        try:
            uid = None if self.settings.health_check.cluster_id else self._kube_system_uid()
            self._detect_kube_proxy()
            if self.stop_event.is_set():
                return
            self.cache = ClusterCache(uid, self._watched())
            cache = self.cache
            self.metrics.view_gaps.set_function(lambda: len(cache.gaps()))  # read at scrape
            enforce = self.settings.readiness.policy is ReadinessPolicy.ENFORCE
            self.controller = Controller(
                self.settings.planner_config(),
                self.cache,
                self.gce,
                self.trigger,
                self.metrics,
                self.recorder,
                ObjectRef(
                    "Lease",
                    self.options.lease_name,
                    self.options.lease_namespace,
                    "coordination.k8s.io/v1",
                ),
                ControllerOptions(
                    dry_run=self.options.dry_run,
                    resync_period=self.options.resync_period,
                    max_concurrency=self.settings.gce.max_concurrent_pool_calls,
                    lb_health_sample_sec=self.settings.controller.lb_health_sample_sec,
                    lb_health_reads_per_minute=self.settings.controller.lb_health_reads_per_minute,
                ),
                may_write=self.elector.may_write if self.elector else lambda: True,
                enforcer=self._enforcer() if enforce else None,
                holder=self._holder(),
                prober=self.prober,
                cloud_provider_uid=CachedRead(
                    functools.partial(read_cloud_provider_uid, self.api),
                    "ConfigMap kube-system/ingress-uid",
                    refresh_sec=self.options.resync_period,
                ).get,
                kube_proxy_replacement=CachedRead(
                    functools.partial(read_kube_proxy_replacement, self.api),
                    f"DaemonSets {', '.join(KNOWN_REPLACEMENT_NAMES)} in {REPLACEMENT_NAMESPACE}",
                    refresh_sec=self.options.resync_period,
                ).get,
            )
            self.reflectors = [
                Reflector(
                    self.api,
                    resource,
                    self.cache,
                    self.trigger.fire,
                    watch_timeout_sec=self.options.watch_timeout_sec,
                    on_restart=self._watch_restarted,
                )
                for resource in self._watched()
            ]
            self.recorder.start()
            if self.prober is not None:
                self.prober.start()
            threading.Thread(
                target=self.controller.verifier.run,
                args=(self.stop_event,),
                name="lb-verifier",
                daemon=True,
            ).start()
            for reflector in self.reflectors:
                reflector.start()
            if self.elector is not None:
                self.elector.start()
            else:
                self.metrics.leader.set(0 if self.options.dry_run else 1)
            self.controller.run(self.stop_event)
        finally:
            self._shutdown()

    def _watched(self) -> tuple[Resource, ...]:
        """DaemonSets only when the readiness policy looks at them (their RBAC is optional)."""
        if self.settings.readiness.policy is ReadinessPolicy.OFF:
            return tuple(r for r in Resource if r is not Resource.KUBE_PROXY_DAEMONSETS)
        return tuple(Resource)

    def stop(self) -> None:
        self.stop_event.set()
        self.trigger.close()

    def _watch_restarted(self, resource: Resource, why: str) -> None:
        self.metrics.watch_restarts.labels(resource.value).inc()
        self.trigger.fire(f"{resource} {why}")

    def _detect_kube_proxy(self) -> None:
        """Which of the selector's alternatives labels this cluster's kube-proxy (kubeadm,
        kube-up/GKE static Pods, Gardener): the Pod reflector watches that one."""
        backoff = Backoff(initial=1.0, maximum=30.0)
        daemonsets = self.settings.readiness.policy is not ReadinessPolicy.OFF
        while not self.stop_event.is_set():
            try:
                found = self.api.detect_selectors(daemonsets=daemonsets)
            except Exception as exc:
                log.warning(
                    "cannot list kube-proxy Pods from %s (%s); retrying",
                    where(self.api.target),
                    describe_kube_error(exc),
                )
                self.stop_event.wait(backoff.next())
                continue
            if found:
                log.info("kube-proxy Pods: selected by %s", self.api.kube_proxy_selector)
            else:
                log.warning(
                    "no kube-proxy Pods found with any of %s in %s; watching %s (set "
                    "kube_proxy.selector to how yours are labelled)",
                    self.settings.kube_proxy.selector,
                    self.settings.kube_proxy.namespace,
                    self.api.kube_proxy_selector,
                )
            return

    def _kube_system_uid(self) -> str | None:
        backoff = Backoff(initial=1.0, maximum=30.0)
        while not self.stop_event.is_set():
            try:
                return read_kube_system_uid(self.api)
            except Exception as exc:
                log.warning("%s; retrying", exc)  # KubeReadError names the cause and the fix
                self.stop_event.wait(backoff.next())
        return None

    def _shutdown(self) -> None:
        # Writes stop first: the holder's queue, then the lease (a new leader decides anew).
        if self.controller is not None and self.controller.holder is not None:
            self.controller.holder.close()
        if self.elector is not None:
            self.elector.stop(release=True)
        for reflector in self.reflectors:
            reflector.stop()
        if self.prober is not None:
            self.prober.stop()
        self.recorder.stop()
        if self.http is not None:
            self.http.stop()
