"""The vendor release pipeline: ``skillrack plugin check|bundle|verify``."""
