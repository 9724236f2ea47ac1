"""A faithful, stateful, in-memory fake of the GCE Compute REST API v1 subset lbhc uses (plus
the instance metadata its e2e suite switches).

Serve it over real sockets with `ComputeFakeServer` (google-cloud-compute clients and a google-auth
AuthorizedSession talk to it via `api_endpoint`), or in-process with `mount_responses`.
"""

from .errors import ComputeError
from .fake import ComputeFake
from .faults import Faults
from .journal import JournalEntry
from .prober import HealthProber
from .responses_mount import mount_responses
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
    "mount_responses",
]
