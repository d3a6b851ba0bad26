import sys

from daliaug.cli import main

sys.exit(main())
