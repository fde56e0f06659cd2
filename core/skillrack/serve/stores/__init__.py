"""Where tasks live: memory, a SQLite file, or PostgreSQL shared by replicas."""
