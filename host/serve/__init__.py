"""The host as a process and as one connection: ``toolwire serve``'s process
(:mod:`.process`), one connection served by :func:`~.connection.run_host`, the
Streamable HTTP transport and the fleet of replicas (the subpackage :mod:`.http`), the
options and the configuration file (:mod:`.options`, :mod:`.config`), the stderr pump and the inputs a
host reads (:mod:`.inputs_collect`).

The top of the host: it may import every other host package. Nothing is imported here,
so ``python -m toolwire.host`` starts its probe before the heavy imports.
"""
