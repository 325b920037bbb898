"""The fork server's messages, one JSON object a line over its Unix socket: the names both ends use
(runner/fork_server.py asks, child/zygote.py answers). A request comes with two descriptors (the child's
output and its record pipe); the answers are the forked child's pid, then its exit status."""

ARGS = "args"  # the child's argv after the entry point
ENV = "env"  # environment variables changed from the server's (None: unset)
CORES = "cores"  # the CPU affinity to take, or None
PID = "pid"  # answer 1: the child is forked
RETURNCODE = "returncode"  # answer 2: it ended (as subprocess.Popen.returncode)
