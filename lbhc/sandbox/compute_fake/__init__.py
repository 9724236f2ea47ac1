"""A faithful, stateful, in-memory fake of the GCE Compute REST API v1 subset lbhc uses (plus
the instance metadata its e2e suite switches).

Serve it over real sockets with `ComputeFakeServer` (google-cloud-compute clients and a google-auth
AuthorizedSession talk to it via `api_endpoint`), or in-process with
`responses_mount.mount_responses`. That one is imported from its own module, not from here: it
needs `responses`, a test dependency, and the sandbox and the demo run without it.
"""

from .errors import ComputeError
from .fake import ComputeFake
from .faults import Faults
from .journal import JournalEntry
from .prober import HealthProber
from .routes import COMPUTE_ROUTES, Route
from .server import ComputeFakeServer

__all__ = [
    "COMPUTE_ROUTES",
    "ComputeError",
    "ComputeFake",
    "ComputeFakeServer",
    "Faults",
    "HealthProber",
    "JournalEntry",
    "Route",
]
