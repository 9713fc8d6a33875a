"""``python -m kcodec``: the command line."""

import sys

from kcodec.cli import main

sys.exit(main())
