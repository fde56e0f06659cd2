"""What an operator sees of the agent at work: metrics, traces and the log format.

The bottom room of ``serve/`` but for ``scope`` and ``process``: every other
room records into it, and it imports none of them.
"""
