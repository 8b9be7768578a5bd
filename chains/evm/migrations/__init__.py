"""Schema of the EVM plugin (namespace ``evm``)."""
