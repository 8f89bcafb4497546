"""When it is sent.

Arrival times, stages, dispatch units, the scheduler, and the client's own load.
"""
