"""Loading plugins, calling their hooks, configuration, the registry, ``compose_host``."""
