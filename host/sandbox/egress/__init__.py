"""Network by allow list: the host's egress proxy and what it enforces (issue 28).

* :mod:`.policy`: the ``[network]`` allow list (names, ``*.`` wildcards, ports), pinned
  names (``[network.resolve]``) and the address rules (no private or loopback target unless
  pinned); standard library only.
* :mod:`.credentials`: ``[secrets]``: placeholders inside the sandbox, the real values put into
  requests to their own hosts only, over TLS the proxy terminates with a per-run CA.
* :mod:`.proxy`: the proxy itself (HTTP CONNECT, plain HTTP, SOCKS5; parsing by h11) on one
  Unix socket per sandbox, and what a sandbox gets bound in.
* :mod:`.scope`: whose command a sandbox runs (:class:`~.scope.EgressScope`, set by a
  call around its commands); standard library only, so a tool that sets one does not
  import the proxy.
* :mod:`.relay`: the small standard-library relay run inside a sandbox, from its
  ``127.0.0.1:3128`` to the proxy's socket (it needs no trust: the proxy checks everything).

This package's opening imports nothing, so reading the configuration stays light.
"""
