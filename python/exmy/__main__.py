"""``python -m exmy ARGS``: the bundled exmy command line (python/exmy/_cli.py)."""

from exmy._cli import main

main()
