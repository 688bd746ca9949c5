"""What the host answers, in both protocol eras: the 2025-11-25 methods on one session
(:mod:`.server`), the stateless 2026-07-28 requests (:mod:`.modern`) and
``tools/callBatch`` (:mod:`.batch`).

Imports from below only: :mod:`toolwire.host.calls`, :mod:`toolwire.host.tools`,
:mod:`toolwire.host.sandbox`, :mod:`toolwire.host.schema`. Nothing is imported here.
"""
