"""Who is calling, what they may do, and whether the call is approved: before a handler runs."""
