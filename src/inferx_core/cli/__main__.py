import sys

from inferx_core.cli.main import main

sys.exit(main())
