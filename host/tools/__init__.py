"""What a tool is and what its handler gets and returns: the ``@tool`` decorator
(:mod:`.decorator`), the registered :class:`~.definition.Tool`, argument checking
(:mod:`.arguments`), the context a handler receives (:mod:`.context`) and the channel
behind it (:mod:`.channel`, with the input rounds of :mod:`.rounds`), results
(:mod:`.results`), hooks (:mod:`.hooks`), the registry and loading tool modules.

Imports from below only: :mod:`toolwire.host.schema` (and, for type checking only,
:mod:`toolwire.host.sandbox`). Nothing is imported here: a worker process imports
only the modules it uses.
"""
