"""Typed records between the load's stages.

What happened to one request.
"""
