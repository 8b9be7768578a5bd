"""Schema of the tron plugin (namespace ``tron``): signed transactions and sweeps."""
