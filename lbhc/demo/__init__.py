"""`lbhc demo`: the real controller against a fresh sandbox, walking scale-down, version skew
and clean-up, each step verified against the fakes' state."""
