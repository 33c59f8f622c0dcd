"""`python -m workbench ...` is the same as the `workbench` command."""
import sys

from .cli import main

sys.exit(main())
