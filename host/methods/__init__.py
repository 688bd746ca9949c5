"""What the host answers, in both protocol eras: one kernel, two faces over it.

* :mod:`.kernel` (:class:`~.kernel.HostKernel`): the tool methods both eras share —
  ``tools/list``, ``tools/call`` (with the early start of a call read on the
  connection), ``tools/callBatch`` — the host's identity (``serverInfo``,
  ``instructions``) and asking for approval. It does not know the era: its caller passes
  the call's channel (:mod:`toolwire.host.tools.channel`), which is the era's one choice.
* :mod:`.server` (:class:`~.server.HostServer`): the 2025-11-25 face (and LSP lifecycle) of
  one session — ``initialize``, ``ping``, ``logging/setLevel``, ``shutdown``/``exit``,
  list change notifications, and which era serves each request read.
* :mod:`.modern` (:class:`~.modern.ModernServer`): the 2026-07-28 face — envelope checks,
  ``server/discover``, ``subscriptions/listen``, result shapes and input rounds.
* :mod:`.batch`: one ``tools/callBatch`` run (preflight in order, concurrent execution,
  results in order), for the kernel.

Arrows point down only: each face calls the kernel, the 2025-11-25 face also hands the
2026-07-28 requests to the face it built, and neither the kernel nor the batch refers
to a face (tests/host/methods/test_methods_kernel.py).

Imports from below only: :mod:`toolwire.host.calls`, :mod:`toolwire.host.tools`,
:mod:`toolwire.host.sandbox`, :mod:`toolwire.host.schema`. Nothing is imported here.
"""
