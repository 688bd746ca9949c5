"""``python -m toolwire.host``: the same as ``toolwire serve``."""

from .launch import main

if __name__ == "__main__":
    main()
