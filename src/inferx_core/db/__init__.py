"""The results database: DuckDB (embedded, the default) or PostgreSQL behind one interface."""
