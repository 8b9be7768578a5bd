"""The ``[plugin.tips]`` block: the same keys as ``[plugin.links]`` (``mint_per_minute``)."""

PLUGIN_NAME = "tips"
