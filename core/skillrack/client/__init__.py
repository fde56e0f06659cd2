"""Calling a schema-governed skill of any conforming agent: the draft's client procedure."""
