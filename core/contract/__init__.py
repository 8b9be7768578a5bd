"""What a plugin implements and receives: hook specs, the plugin manager, registries, chains, coins, views."""
