import sys

from dynalint.adapters.cli import main

sys.exit(main())
