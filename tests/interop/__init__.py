"""Node interop clients (see test_node_clients.py)."""
