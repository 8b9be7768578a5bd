"""Schema of the devnet plugin (namespace ``devnet``): the simulated chain's state."""
