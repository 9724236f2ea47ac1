"""Prometheus metrics, on a registry of our own so tests can run several controllers in one
process without clashing."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

NAMESPACE = "lbhc"


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = Counter(
            "reconciles_total",
            "Reconcile passes by result",
            ["result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "reconcile_duration_seconds",
            "Duration of one reconcile pass",
            namespace=NAMESPACE,
            registry=r,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
        )
        self.gce_calls = Counter(
            "gce_calls_total",
            "GCE API calls by call and result",
            ["call", "result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.pool_changes = Counter(
            "pool_changes_total",
            "Attaches and detaches carried out",
            ["action", "result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.pools = Gauge(
            "target_pools",
            "Target pools by state after the last pass",
            ["state"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.pool_coverage = Gauge(
            "pool_coverage",
            "LoadBalancer Services by what their load balancer's check does (lbhc, "
            "cloud-provider, equivalent, none, other-check, local, backend-service, "
            "probe-blocked, no-pool) and by kind of load balancer (target-pool, "
            "backend-service, none)",
            ["coverage", "load_balancer"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.out_of_scope = Gauge(
            "out_of_scope_services",
            "LoadBalancer Services with an ingress IP when none of their load balancers is in "
            "the configured project and region (a wrong --project or --region); 0 otherwise",
            namespace=NAMESPACE,
            registry=r,
        )
        self.fallback = Gauge(
            "fallback_active",
            "1 while version-skew fallback withdraws the check",
            namespace=NAMESPACE,
            registry=r,
        )
        self.leader = Gauge(
            "leader", "1 while this replica may write to GCE", namespace=NAMESPACE, registry=r
        )
        self.cache_objects = Gauge(
            "cache_objects",
            "Objects in the watch cache",
            ["resource"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.watch_restarts = Counter(
            "watch_restarts_total",
            "Watch restarts and relists",
            ["resource"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.view_gaps = Gauge(
            "view_gaps",
            "Parts of the cluster view that are not current (unsynced, relisting, watch down, "
            "undecodable objects); while above 0, removals are withheld",
            namespace=NAMESPACE,
            registry=r,
        )
        self.gc_blocked = Gauge(
            "gc_blocked",
            "1 while the shared check's deletion is refused as in use by something outside "
            "lbhc's view (another region's or cluster's pool)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.pools_failing_open = Gauge(
            "pools_failing_open",
            "Load balancers (target pools and backend services) in a class whose every sampled "
            "serving node GCE's getHealth calls UNHEALTHY, longer than the check's drain bound, "
            "while kube-proxy is healthy",
            namespace=NAMESPACE,
            registry=r,
        )
        self.pool_classes = Gauge(
            "pool_classes",
            "Classes of load balancers probed alike (same kind, same check, same probe reach) by "
            "what GCE's getHealth says of them (healthy, degraded, failing-open, unverified, "
            "not-sampled)",
            ["health"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.lb_health_reads = Counter(
            "lb_health_reads_total",
            "GCE health reads made within the read budget, by purpose (marked: a node marked "
            "for deletion; sample: serving nodes of a class; membership: a pool's instance "
            "list after a refusal) and result",
            ["purpose", "result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.lb_health_reads_deferred = Counter(
            "lb_health_reads_deferred_total",
            "Health reads wanted but put off because the read budget was spent",
            namespace=NAMESPACE,
            registry=r,
        )
        self.lb_health_read_budget = Gauge(
            "lb_health_read_budget_per_minute",
            "The read budget verification shares (controller.lb_health_reads_per_minute)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.cut_before_drained = Counter(
            "nodes_cut_before_drained_total",
            "Marked nodes GCE shows taken out of a class of target pools before the check's "
            "drain bound elapsed and before GCE called them UNHEALTHY there (the service "
            "controller's node sync; target pools have no connection draining)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.firewall_change_needed = Gauge(
            "firewall_change_needed",
            "1 while lbhc may not write its firewall rule (403: a Shared VPC host project); "
            "the FirewallChangeNeeded Event carries the gcloud command a network admin runs",
            namespace=NAMESPACE,
            registry=r,
        )
        self.conflicts = Gauge(
            "conflicts",
            "Conflicts found by the last pass (each also a Conflict Event on lbhc's Lease): a "
            "check or firewall of lbhc's name that lbhc does not own, or its firewall on "
            "another network; lbhc leaves them alone and attaches nothing new meanwhile",
            namespace=NAMESPACE,
            registry=r,
        )
        self.node_tags_unmatched = Gauge(
            "node_tags_unmatched",
            "1 when none of the first nodes' VMs read at start carries a tag of gce.node_tags "
            "(the NodeTagsMatchNoNode Event names what they carry): lbhc's firewall rule "
            "would admit Google's probes to no node",
            namespace=NAMESPACE,
            registry=r,
        )
        self.withheld = Gauge(
            "withheld_changes",
            "Removals withheld on an incomplete view",
            namespace=NAMESPACE,
            registry=r,
        )
        self.events_dropped = Counter(
            "events_dropped_total",
            "Events not sent, by reason",
            ["reason"],
            namespace=NAMESPACE,
            registry=r,
        )

        self.probes = Counter(
            "kube_proxy_probes_total",
            "Requests to nodes' kube-proxy health port by result (answered, refused, timeout)",
            ["result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.fallback_nodes = Gauge(
            "fallback_nodes",
            "Nodes whose kube-proxy cannot serve /healthz (the cause of fallback, if enabled)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.node_drain = Gauge(
            "node_drain_state",
            "Nodes by drain state (serving, draining, partially-draining, not-draining, "
            "not-applicable, excluded, unknown)",
            ["state"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.node_drain_unknown_replaced = Gauge(
            "node_drain_unknown_replaced",
            "Nodes whose drain state is unknown only because kube-proxy is replaced by something "
            "whose behaviour on the health port is not published (GKE Dataplane V2's anetd)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.kube_proxy_replacement = Gauge(
            "kube_proxy_replacement",
            "1 for the DaemonSet replacing kube-proxy (cilium, anetd) when no kube-proxy Pod is "
            "found",
            ["name"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.deleted_before_drained = Counter(
            "nodes_deleted_before_drained_total",
            "Nodes gone before their load balancers' drain bound elapsed since they were marked "
            "for deletion (cluster-autoscaler's --node-delete-delay-after-taint is too short)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.drain_window = Histogram(
            "node_drain_window_seconds",
            "From a node's mark for deletion (taint or deletionTimestamp) until it was gone",
            namespace=NAMESPACE,
            registry=r,
            buckets=(1, 5, 10, 15, 20, 25, 30, 45, 60, 120, 300, 600),
        )
        self.kube_proxy_pods = Gauge(
            "kube_proxy_pods",
            "kube-proxy Pods by context-aware state (ready, expected-unready, unready, missing)",
            ["state"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.kube_proxy_condition = Gauge(
            "kube_proxy_health_condition",
            "1 for the current status (True, False, Unknown) of the kube-proxy health condition",
            ["status"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.readiness_findings = Gauge(
            "kube_proxy_readiness_findings",
            "kube-proxy DaemonSet probe findings by kind",
            ["kind"],
            namespace=NAMESPACE,
            registry=r,
        )
        # hold.deletion (lbhc/controller/deletion_holder.py)
        self.holds = Gauge(
            "deletion_holds",
            "Nodes carrying lbhc's delay-deletion annotation",
            namespace=NAMESPACE,
            registry=r,
        )
        self.holds_marked = Gauge(
            "deletion_holds_marked",
            "Nodes marked for deletion that lbhc still holds, waiting for their load balancers",
            namespace=NAMESPACE,
            registry=r,
        )
        self.hold_longest = Gauge(
            "deletion_hold_longest_seconds",
            "Seconds since the mark of the longest-held node marked for deletion (0: none)",
            namespace=NAMESPACE,
            registry=r,
        )
        self.hold_timeout = Gauge(
            "deletion_hold_timeout_seconds",
            "hold.autoscaler_timeout_sec: cluster-autoscaler's --node-deletion-delay-timeout",
            namespace=NAMESPACE,
            registry=r,
        )
        self.hold_releases = Counter(
            "deletion_hold_releases_total",
            "Holds of marked nodes ended, by reason (node-deleted: gone while still held)",
            ["reason"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.hold_duration = Histogram(
            "deletion_hold_duration_seconds",
            "From a held node's mark for deletion to the end of its hold",
            namespace=NAMESPACE,
            registry=r,
            buckets=(5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300),
        )
        self.hold_writes = Counter(
            "deletion_hold_writes_total",
            "Node patches of lbhc's delay-deletion annotation, by action and result",
            ["action", "result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.readiness_patches = Counter(
            "kube_proxy_readiness_patches_total",
            "Readiness-probe patches sent in enforce mode, by result",
            ["result"],
            namespace=NAMESPACE,
            registry=r,
        )

    def observe_gce_call(self, call: str, result: str) -> None:
        self.gce_calls.labels(call, result).inc()
