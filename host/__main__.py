"""``python -m toolwire.host``: the same as ``toolwire serve``."""

from .serve import main

if __name__ == "__main__":
    main()
