"""The ``[plugin.tips]`` block: the same keys as ``[plugin.links]`` (``mint_per_minute``, ``unpaid_retention_days``)."""

PLUGIN_NAME = "tips"
