"""The fork server's messages, one JSON object a line over its Unix socket: the names both ends use
(fork_server/client.py asks, fork_server/zygote.py answers). A request comes with two descriptors (the child's
output and its record pipe); the answers are the forked child's pid, then its exit status, or one refusal."""

ARGS = "args"  # the child's argv after the entry point
ENV = "env"  # environment variables changed from the server's (None: unset)
CORES = "cores"  # the CPU affinity to take, or None
CUDA = "cuda"  # true for a config that uses CUDA: refused by a server whose forks can't (fork_server/zygote.py)
PID = "pid"  # answer 1: the child is forked
RETURNCODE = "returncode"  # answer 2: it ended (as subprocess.Popen.returncode)
REFUSED = "refused"  # the only answer instead: why the server did not fork this child (the requester spawns it)
