import sys

from guardian.cli import main

sys.exit(main())
