"""First-party skillrack plugins.

They ship inside the ``skillrack`` distribution and register through the same
hooks as vendor plugins; an operator enables them by configuration (they are
not entry points, so ``SKILLRACK_LOAD_PLUGINS`` never switches them off by
accident).  Authentication, authorization, store and audit plugins land here.
"""
