"""How it is sent.

HTTP connections, the streamed reply, SSE parsing, chunk classification and the
usage check.
"""
