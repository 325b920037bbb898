import sys

from benchmarks.runner.cli import main

sys.exit(main())
