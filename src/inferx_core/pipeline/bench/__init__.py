"""``inferx bench`` against a running server (``points``) and the public API over it (``api``)."""
