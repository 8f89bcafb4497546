"""Token counting.

The local tokenizer, the server's /tokenize, and the counter that picks between
them.
"""
