import sys

from lbhc.cli import main

sys.exit(main())
