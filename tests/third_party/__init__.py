"""Sources of throwaway third-party packages that tests install through the entry-point group."""
