"""One launched server's life (``inferx run``): its launch plan and argv check, the start,
its points and search, its evaluations, the stop (``lifecycle``), and the run over configs."""
