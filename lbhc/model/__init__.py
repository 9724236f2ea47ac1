"""Data lbhc reasons about: cluster and cloud snapshots in, a plan out."""
