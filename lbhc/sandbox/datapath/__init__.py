"""An emulated load-balancer data path for the sandbox, on loopback only: a listener per
forwarding rule of the Compute fake that places each new connection on a member of its load
balancer as GCE's passthrough network load balancer does, and relays it to that member's
node, where the Service's NodePort answers with the node's name.

- loopback: every socket, bound to 127.0.0.1 only; resets.
- choice: which member a new connection goes to (a pure function).
- rehash: what becomes of an established flow when its load balancer changes (pure too).
- frontends: the forwarding rules, members and health, read from the Compute fake.
- backends: NodeBackends, one Service's NodePort on every node.
- relay: one connection's life.
- records: FlowRecord, what the data path saw of each connection.
- datapath: DataPath, the listeners following the fake.
- cluster: SandboxDataPath, all of it kept in line with the Kubernetes fake.
"""

from lbhc.sandbox.datapath.backends import NodeBackends
from lbhc.sandbox.datapath.choice import Flow, choose_instance
from lbhc.sandbox.datapath.cluster import SandboxDataPath
from lbhc.sandbox.datapath.datapath import DataPath
from lbhc.sandbox.datapath.frontends import Frontend
from lbhc.sandbox.datapath.records import FlowRecord

__all__ = [
    "DataPath",
    "Flow",
    "FlowRecord",
    "Frontend",
    "NodeBackends",
    "SandboxDataPath",
    "choose_instance",
]
