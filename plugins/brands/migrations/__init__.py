"""Schema migrations of the brands plugin (namespace ``brands``)."""
