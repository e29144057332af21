import sys

from sparkpipes.cli import main

sys.exit(main())
