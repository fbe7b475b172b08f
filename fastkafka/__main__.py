"""`python -m fastkafka ...` is the `fastkafka` command."""
import sys

from fastkafka.cli.main import main

sys.exit(main())
