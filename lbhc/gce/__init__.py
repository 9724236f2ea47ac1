"""The Compute adapter: every GCE call lbhc makes lives in lbhc.gce.client."""
