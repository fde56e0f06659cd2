"""``python -m skillrack``: the same as the ``skillrack`` command."""

import sys

from skillrack.cli.launch import main

sys.exit(main())
