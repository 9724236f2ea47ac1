"""Per-collection request handlers of the Compute fake."""
