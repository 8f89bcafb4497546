import sys

from inferx_core.cli.app import main

sys.exit(main())
