"""`python -m bufferlint`."""

import sys

from bufferlint.cli import main

sys.exit(main())
