"""The long-running controller: watch caches, a coalescing trigger, leader election, Events,
metrics and the loop that runs the same read-plan-execute pass as `lbhc apply`."""
