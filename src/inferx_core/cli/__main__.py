import sys

from inferx_core.cli import main

sys.exit(main())
