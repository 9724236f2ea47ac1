"""The pure middle: cluster snapshot + cloud snapshot + config -> Plan. Imports no client."""
