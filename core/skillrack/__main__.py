"""``python -m skillrack``: the same as the ``skillrack`` command."""

import sys

from .launch import main

sys.exit(main())
