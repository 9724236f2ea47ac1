"""lbhc: shared kube-proxy health check for GCE target pools."""

# The one place the version is written: packaging (pyproject.toml), `lbhc version` and
# CHANGELOG.md's newest entry are checked against it.
__version__ = "0.2.0"
