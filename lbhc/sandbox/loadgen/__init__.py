"""A bounded client load generator for the sandbox's emulated load-balancer data path.

It opens short connections at a steady rate and holds long-lived ones against each
forwarding rule's listener on 127.0.0.1, speaks the backends' line protocol (send a line,
read back the answering node's name), and records what every connection saw: completed,
reset, closed, refused, timed out (report.py says what each means). The report shows what
clients of a load balancer would have seen while nodes were drained, deleted or re-hashed.

Bounded by construction: loopback targets only (targets.py), a LoadSpec whose every field is
range-checked (spec.py), an open-loop rate it never exceeds, a cap on open connections, a
timeout on every step, and a run that ends by itself (generator.py).
"""

from lbhc.sandbox.loadgen.generator import LoadGenerator
from lbhc.sandbox.loadgen.report import Attempt, Kind, LoadReport, Outcome
from lbhc.sandbox.loadgen.spec import LoadSpec

__all__ = ["Attempt", "Kind", "LoadGenerator", "LoadReport", "LoadSpec", "Outcome"]
