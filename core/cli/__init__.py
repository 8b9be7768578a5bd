"""The operator's orbchain commands: the core's commands, ops commands, the plugin list and scaffolding."""
