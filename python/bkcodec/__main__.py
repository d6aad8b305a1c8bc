"""`python -m bkcodec`: the command line."""

import sys

from bkcodec.cli import main

sys.exit(main())
