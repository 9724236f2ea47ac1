"""How GceClient makes one Compute API call: paced, guarded, bounded in time, retried, and
explained in one line when it fails. GceClient says what to call; this module says how.

Every call has a deadline, `call_timeout_sec` after its first request is sent (the pacing
before it is lbhc's own queue, not the endpoint's time): no attempt starts after it and none
runs past it. Each attempt gets urllib3's Timeout(connect, read, total=what remains), so even
an attempt whose connection came late ends by the deadline. Between attempts, a jittered
exponential backoff ("full jitter"); a retry that would have less than a second once its
backoff is over is not made. Retried: 429, 5xx, 403 rateLimitExceeded, a reset connection, a
timeout; not retried: a connection that cannot be made to an endpoint that has never
answered (a wrong --gce-endpoint stays wrong). Each retry is one INFO line: `lbhc run` logs
it, a one-shot command (WARNING and above) keeps the terminal for its one error line.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from google.api_core import exceptions as core
from google.auth import exceptions as auth
from urllib3.util import Timeout

from lbhc.errors import connect_failure, first_line, timeout_kind
from lbhc.gce.config import GceClientConfig
from lbhc.gce.errors import (
    GceAccessDenied,
    GceNotCompute,
    GceScopeError,
    GceTimeout,
    GceUnreachable,
    NotLeader,
    ReadOnlyViolation,
    describe_gce_error,
    has_reason,
    is_forbidden,
    is_retryable,
    missing_project,
    missing_region,
    not_compute_answer,
    reasons_of,
    result_label,
    status_of,
)
from lbhc.gce.permissions import PERMISSIONS_BY_CALL
from lbhc.gce.ratelimit import TokenBucket

log = logging.getLogger(__name__)
T = TypeVar("T")
# The shortest attempt worth making: a retry with less time than this left is not made.
MIN_ATTEMPT_SEC = 1.0
FLAG = "check --gce-endpoint / LBHC_GCE_ENDPOINT"
NETWORK_PATH = "the network path to it (a proxy, an egress firewall or NetworkPolicy)"


@dataclass(frozen=True)
class AttemptTimeout:
    """What one attempt may take: `connect` to connect, `read` for each read of the answer,
    and `total` for both together (what remains of the call's deadline)."""

    connect: float
    read: float
    total: float

    @classmethod
    def within(cls, connect: float, read: float, remaining: float) -> AttemptTimeout:
        return cls(min(connect, remaining), min(read, remaining), remaining)

    def for_requests(self) -> Timeout:
        """As requests takes it (AuthorizedSession passes it on, to a token refresh too)."""
        return Timeout(connect=self.connect, read=self.read, total=self.total)

    def for_gapic(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """As google-api-core takes it: a number would be used for connect and read alike,
        so a timeout object, which api-core applies as a decorator of the transport call."""
        timeout = self.for_requests()

        def decorate(call: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(call)
            def with_timeout(*args: Any, **kwargs: Any) -> Any:
                kwargs["timeout"] = timeout
                return call(*args, **kwargs)

            return with_timeout

        return decorate


@dataclass(frozen=True)
class Spent:
    """What a call that failed used: for the line that says so."""

    attempts: int
    seconds: float
    read_timeout: float


def poll_budget_sec(config: GceClientConfig) -> float:
    """An operation poll's deadline: the API may hold `wait` for about two minutes before it
    answers, done or not, so a poll gets operation_poll_timeout_sec for that on top of a
    call's time (and never more than the operation has left: lbhc.gce.client)."""
    return config.call_timeout_sec + config.operation_poll_timeout_sec


def call_bound_sec(config: GceClientConfig, *, poll: bool = False) -> float:
    """The longest one call can take from its first request to its failure: its deadline,
    or less when max_attempts attempts and the longest backoffs between them end sooner.
    `poll`: an operation poll's (operation_poll_timeout_sec per attempt)."""
    read = config.operation_poll_timeout_sec if poll else config.request_timeout_sec
    budget = poll_budget_sec(config) if poll else config.call_timeout_sec
    attempts = config.max_attempts * (config.connect_timeout_sec + read)
    backoffs = sum(
        min(config.backoff_max_sec, config.backoff_initial_sec * 2.0**n)
        for n in range(config.max_attempts - 1)
    )
    return min(budget, attempts + backoffs)


class Caller:
    """Makes GceClient's calls, from any of its threads. `write_guard` is asked before every
    mutation attempt (leader election: a replica that may no longer write must not, even
    mid-retry); `observer(call, result)` sees every attempt's outcome (metrics)."""

    def __init__(
        self,
        config: GceClientConfig,
        credentials: Any,
        *,
        write_guard: Callable[[], bool] | None = None,
        observer: Callable[[str, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self._credentials = credentials
        self._write_guard = write_guard
        self._observe = observer or (lambda call, result: None)
        self._clock = clock
        self._sleep = sleep
        self._mutation_bucket = TokenBucket(config.mutations_per_second)
        self._read_bucket = TokenBucket(config.reads_per_second)
        # Whether the endpoint has ever answered (any HTTP status), and whether the API has
        # ever accepted lbhc's credentials (any answer but 401 or 403, a 404 included): until
        # then a failure says more about the settings than about the moment.
        self._answered = False
        self._authorized = False

    def call(
        self,
        what: str,
        fn: Callable[[AttemptTimeout], T],
        *,
        mutating: bool,
        read_timeout: float | None = None,
        budget: float | None = None,
    ) -> T:
        """`fn(timeout)` until it returns, is not worth retrying, or the call's time is up.
        `read_timeout` and `budget` replace request_timeout_sec and call_timeout_sec (an
        operation poll, which the API may hold for two minutes)."""
        if mutating and self.config.read_only:
            raise ReadOnlyViolation(f"{what}: this GCE client is read-only (plan mode)")
        bucket = self._mutation_bucket if mutating else self._read_bucket
        read = self.config.request_timeout_sec if read_timeout is None else read_timeout
        total = self.config.call_timeout_sec if budget is None else budget
        shortest = min(MIN_ATTEMPT_SEC, read)
        start = 0.0
        attempts = 0
        last: Exception | None = None
        while True:
            bucket.acquire()  # may sleep: the leadership check and the deadline come after it
            now = self._clock()
            start = start if attempts else now
            remaining = start + total - now
            if last is not None and remaining < shortest:
                break  # the pacing took what was left
            if mutating and self._write_guard is not None and not self._write_guard():
                raise NotLeader(f"{what}: this replica may not write to GCE (not the leader)")
            attempts += 1
            try:
                result = fn(AttemptTimeout.within(self.config.connect_timeout_sec, read, remaining))
            except Exception as exc:
                last = exc
                self._observe(what, result_label(exc))
                if isinstance(exc, core.GoogleAPICallError):
                    self._answered = True
                    self._authorized = self._authorized or status_of(exc) not in (401, 403)
                delay = self._backoff(exc, attempts)
                left = start + total - self._clock()
                if delay is None or left - delay < shortest:
                    break
                log.info(
                    "GCE %s failed (%s); retry %d of up to %d in %.1f s (%.0f s of the call's "
                    "%.0f s left)",
                    what,
                    describe_gce_error(exc),
                    attempts,
                    self.config.max_attempts - 1,
                    delay,
                    left,
                    total,
                )
                self._sleep(delay)
                continue
            self._answered = self._authorized = True
            self._observe(what, "ok")
            return result
        assert last is not None  # the loop ends only after a failed attempt
        spent = Spent(attempts, self._clock() - start, read)
        raise self._failed(what, last, mutating, spent)

    def _failed(self, what: str, exc: Exception, mutating: bool, spent: Spent) -> Exception:
        """What to raise when a call gives up: the one line that explains `exc` (caused by
        it), or `exc` itself, its traceback kept."""
        explained = self.explain(what, exc, mutating=mutating, spent=spent)
        if explained is None:
            return exc
        explained.__cause__ = exc
        return explained

    def _backoff(self, exc: BaseException, attempts: int) -> float | None:
        """Seconds to wait before the next attempt, or None when there is to be none."""
        if attempts >= self.config.max_attempts or not self._retryable(exc):
            return None
        ceiling = self.config.backoff_initial_sec * 2.0 ** (attempts - 1)
        return random.uniform(0, min(self.config.backoff_max_sec, ceiling))

    def _retryable(self, exc: BaseException) -> bool:
        """As is_retryable, except a connection that cannot even be made to an endpoint that
        has never answered: that is a wrong --gce-endpoint or a network path that is not
        there, and retrying it only hides that (`lbhc plan` would sit silent). Once the
        endpoint has answered, a refused connection is a blip and is retried."""
        if not self._answered and connect_failure(exc) is not None:
            return False
        return is_retryable(exc)

    def explain(
        self, what: str, exc: Exception, *, mutating: bool, spent: Spent
    ) -> Exception | None:
        """The failures whose fix is not in lbhc's hands, as one line naming it; None keeps
        the original (callers tell a missing resource, a forbidden Shared VPC firewall or an
        in-use check apart by it)."""
        endpoint, project = self.config.endpoint, self.config.project
        kind = timeout_kind(exc)
        if kind is not None:
            return GceTimeout(self._timed_out(kind, spent))
        why = connect_failure(exc) if not self._answered else None
        if why is not None:
            return GceUnreachable(
                f"cannot reach the Compute API at {endpoint}: {why}; {FLAG}, or {NETWORK_PATH}"
            )
        renew = (
            "renew them (`gcloud auth application-default login`, a new key for "
            "GOOGLE_APPLICATION_CREDENTIALS, or the Workload Identity binding)"
        )
        if isinstance(exc, auth.RefreshError | auth.InvalidOperation):
            # google-auth refreshes credentials on a 401 and retries once; this is that
            # refresh failing (anonymous credentials cannot be refreshed at all).
            return GceAccessDenied(
                f"the Compute API refused the credentials of {identity_of(self._credentials)}: "
                f"401, and refreshing them failed ({first_line(exc)}); {renew}",
                401,
                (),
            )
        if not isinstance(exc, core.GoogleAPICallError):
            return None
        answer = not_compute_answer(exc.response)
        if answer is not None:
            return GceNotCompute(f"{endpoint} is not the Compute API: {what} {answer}; {FLAG}")
        if (missing := missing_project(exc)) is not None:
            if missing == self.config.network_project and missing != project:
                return GceScopeError(
                    f"network project {missing} not found (check --network-project / "
                    "LBHC_GCE_NETWORK_PROJECT)"
                )
            return GceScopeError(
                f"project {missing} not found (check --project / LBHC_GCE_PROJECT)"
            )
        if (region := missing_region(exc)) is not None:
            return GceScopeError(
                f"region {region} not found in project {project} (check --region / LBHC_GCE_REGION)"
            )
        status = status_of(exc)
        if status == 401:
            return GceAccessDenied(
                f"the Compute API refused the credentials of {identity_of(self._credentials)} "
                f"({said(exc)}): {renew}",
                status,
                reasons_of(exc),
            )
        if is_forbidden(exc) and not mutating and not self._authorized:
            # Refused before anything was allowed: the identity, not one resource, is wrong.
            if has_reason(exc, "accessNotConfigured"):
                fix = f"enable the Compute Engine API in project {project}"
            else:
                needed = ", ".join(PERMISSIONS_BY_CALL.get(what, ()))
                fix = (
                    f"grant it lbhc's GCE permissions ({needed} among them; README: GCE "
                    "permissions), or run as an identity that has them"
                )
            return GceAccessDenied(
                f"the Compute API refused {identity_of(self._credentials)} in project {project} "
                f"({said(exc)}): {fix}",
                status,
                reasons_of(exc),
            )
        return None

    def _timed_out(self, kind: str, spent: Spent) -> str:
        """One line: which endpoint, which timeout, how many attempts in how long, the fix."""
        endpoint = self.config.endpoint
        tries = f"{spent.attempts} attempt{'s' if spent.attempts != 1 else ''}"
        in_total = f"{tries}, {seconds(spent.seconds)} in total"
        if kind == "connect":
            limit = seconds(self.config.connect_timeout_sec)
            head = f"no connection to the Compute API at {endpoint} within {limit}"
            setting = "gce.connect_timeout_sec"
        else:
            limit = seconds(spent.read_timeout)
            head = f"the Compute API at {endpoint} did not answer within {limit}"
            setting = "gce.request_timeout_sec"
        return (
            f"{head} ({kind} timeout, {in_total}): {FLAG} and {NETWORK_PATH}; "
            f"{setting} and gce.call_timeout_sec set how long lbhc waits"
        )


def seconds(value: float) -> str:
    """A duration for an error line: whole seconds from 10 s, tenths below."""
    if value >= 10:
        return f"{value:.0f} s"
    return f"{value:.1f}".rstrip("0").rstrip(".") + " s"


def fit_pool(client_or_session: Any, size: int) -> bool:
    """Lets a requests session (an AuthorizedSession, or the one a google-cloud-compute
    client's REST transport keeps in `_session`) keep `size` connections per host instead
    of requests' 10: with more threads calling at once, urllib3 opens a connection for each
    extra one and throws it away after ("Connection pool is full, discarding connection").
    False when there is no such session (a transport that is not REST)."""
    import requests
    from requests.adapters import DEFAULT_POOLSIZE, HTTPAdapter

    session = client_or_session
    if not isinstance(session, requests.Session):
        transport = getattr(client_or_session, "transport", None)
        session = getattr(transport, "_session", None)
    if not isinstance(session, requests.Session):
        return False
    for adapter in session.adapters.values():
        if isinstance(adapter, HTTPAdapter):
            # Re-initialised, not replaced: an mTLS adapter (GOOGLE_API_USE_CLIENT_CERTIFICATE)
            # puts its TLS context back in its own init_poolmanager.
            hosts = getattr(adapter, "_pool_connections", DEFAULT_POOLSIZE)
            adapter.init_poolmanager(hosts, size)
    return True


def identity_of(credentials: Any) -> str:
    """Who the Compute API saw, for an error line: an email or a kind, never a token."""
    from google.auth.credentials import AnonymousCredentials

    if isinstance(credentials, AnonymousCredentials):
        return "anonymous credentials (an http:// --gce-endpoint sends none)"
    email = getattr(credentials, "service_account_email", None)
    if isinstance(email, str) and email and email != "default":
        return f"service account {email}"
    if email == "default":
        return "the metadata server's service account (the node's, or Workload Identity's)"
    account = getattr(credentials, "account", None)
    if isinstance(account, str) and account:
        return f"account {account}"
    return "the application-default credentials"


def said(exc: BaseException) -> str:
    """What the API said, on one bounded line, without the "METHOD URL: " google-api-core
    puts first (the line names the endpoint and project already)."""
    text = " ".join(describe_gce_error(exc).split())
    text = re.sub(r": [A-Z]+ https?://\S+: ", ": ", text, count=1)
    return text if len(text) <= 300 else text[:297] + "..."
