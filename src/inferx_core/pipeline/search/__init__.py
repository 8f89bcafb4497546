"""The capacity search driver: probes are normal load points (``driver``); ``running``
searches a running server, ``launched`` the engine ``inferx run`` launched."""
