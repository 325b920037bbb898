"""The fork server: the parent's half (client.py, node_servers.py; no torch), the child's half (zygote.py, the server's
own process, which imports torch once and forks a child per config) and the messages between them (protocol.py)."""
