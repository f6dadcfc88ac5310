import sys

from fhpa.cli import main

sys.exit(main())
