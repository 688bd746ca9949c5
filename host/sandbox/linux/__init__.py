"""The Linux kernel mechanisms the sandbox is built from, each in a module that imports
nothing else of toolwire: the seccomp filter (:mod:`.seccomp`, classic BPF built here),
memory cgroups (:mod:`.memcg`), the namespaces a worker forked from a template makes for
itself (:mod:`.nsfork`, the child's side), and what a container's profile allows
(:mod:`.container`). :mod:`toolwire.host.sandbox` puts them together (bubblewrap, the
probe, the settings). Nothing is imported here: a forked worker imports only
:mod:`.nsfork`.
"""
