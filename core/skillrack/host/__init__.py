"""Loading plugins, calling their hooks, configuration, the registry, ``build_host``."""
