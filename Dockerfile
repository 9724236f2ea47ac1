# syntax=docker/dockerfile:1
# lbhc's controller image: `lbhc run`, as a non-root numeric user, with dependencies from the
# pinned requirements.lock. Build:
#   docker build --build-arg COMMIT=$(git rev-parse --short=12 HEAD) -t REGISTRY/lbhc:VERSION .

# Exact version, and the same in both stages, so the venv's interpreter matches at run time.
# Pinned by digest (the multi-platform index), the tag beside it for people: a tag can be
# re-pushed, a digest cannot. To move to a newer base, take the index digest of the new tag
# from `docker buildx imagetools inspect python:TAG` (the "Digest:" line) and put tag and digest
# in BOTH FROM lines (tests/test_container.py checks they agree).
FROM python:3.11.7-slim-bookworm@sha256:d11b9bd5e49ea7401753d78f4d3b56f3aec952b85b49bcae88981f0452818e0b AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements.lock ./
RUN python -m venv /opt/lbhc && /opt/lbhc/bin/pip install -r requirements.lock
COPY pyproject.toml README.md ./
# The controller only: .dockerignore keeps lbhc/sandbox and lbhc/demo (fakes, emulators, the
# demo) out of the build context (tests/test_container.py runs `lbhc run` from such a copy).
COPY lbhc ./lbhc
# --no-deps: everything it needs came from the lock above, nothing floats.
RUN /opt/lbhc/bin/pip install --no-deps . && /opt/lbhc/bin/lbhc --help > /dev/null
# The commit `lbhc version` reports: the image has no git checkout to ask. It lives in the
# environment lbhc is installed in (sys.prefix), where lbhc/cli/version.py looks.
ARG COMMIT=""
RUN printf '%s\n' "$COMMIT" > /opt/lbhc/lbhc-commit

FROM python:3.11.7-slim-bookworm@sha256:d11b9bd5e49ea7401753d78f4d3b56f3aec952b85b49bcae88981f0452818e0b
COPY --from=build /opt/lbhc /opt/lbhc
ENV PATH=/opt/lbhc/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Numeric, so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
EXPOSE 10258
ENTRYPOINT ["lbhc", "run"]
