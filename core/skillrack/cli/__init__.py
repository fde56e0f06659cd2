"""The ``skillrack`` command line, one module per command group."""
