"""A2A on the wire: Data Parts and protobuf values, task states, request envelopes, card signing."""
