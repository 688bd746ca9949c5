"""``python -m toolwire.host``: the same as ``toolwire serve``."""

import sys

from .sandbox.importpath import scrub_at_entry

if __name__ == "__main__":
    # Before anything else is imported: the root must not be on the import path.
    scrub_at_entry(sys.argv[1:])
    from .serve.process import main

    main()
