"""`python -m awf` is the `awf` command."""

from .cli.entry import main

main()
