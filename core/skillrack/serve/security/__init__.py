"""Who is calling, what they may do, and whether a person said yes: before every dispatch."""
