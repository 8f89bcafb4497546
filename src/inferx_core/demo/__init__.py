"""Self-contained demo assets (a tiny locally built model) for offline smoke runs."""
