"""`python -m service.bulk`."""
import sys

from service.bulk.cli import main

sys.exit(main())
