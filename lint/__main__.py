import sys

from dynalint.cli import main

sys.exit(main())
