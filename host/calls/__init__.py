"""One call, from preflight to result: the pipeline (:mod:`.pipeline`), the executor
running a handler under its timeout (:mod:`.executor`), the per-file mutation queue
(:mod:`.mutation`) and the approval policy (:mod:`.approval`).

Imports from below only: :mod:`toolwire.host.tools`, :mod:`toolwire.host.sandbox`,
:mod:`toolwire.host.schema`. Nothing is imported here (a worker process imports the
executor and nothing else of this package).
"""
