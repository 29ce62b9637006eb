"""`python -m service.cli`: the `dialscore` command without installing it."""
import sys

from service.cli import main

sys.exit(main())
