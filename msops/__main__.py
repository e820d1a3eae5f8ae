"""`python -m msops -n 4 script.py [args]`: the same launcher as `msrun` (see msops.cli)."""
import sys

from msops.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m msops"))
