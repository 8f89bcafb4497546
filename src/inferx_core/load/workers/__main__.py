"""``python -m inferx_core.load.workers PLAN``: run one worker's share of a load."""

from __future__ import annotations

import sys

from inferx_core.load.workers.worker import main

if __name__ == "__main__":
    sys.exit(main())
