"""The fork server: the parent's half (client.py, node_servers.py; no torch), the child's half (zygote.py, the server's
own process, which imports torch once and forks a child per config) and the messages between them (protocol.py).

Launch: spawn or fork (the design).

A spawned child is a fresh interpreter (`launcher.spawn`): it pays the interpreter start and `import torch` (plus
torch_xla's) before any work. By default (`--launch=fork`; `--launch=spawn` opts out) `LocalExecutor` launches its
children through `runner/forked_launch.py` on `fork_server.client.ForkServers`: one fork server per sweep and
environment (one for torch-only configs, one per XLA device kind for XLA configs), started when the sweep offers its
first config of that kind. A server
(`fork_server/zygote.py`) imports torch (and torch_xla) and what every config's child imports anyway: the entry
point, the single-config run, every suite, numpy.random (`fork_server.client.PRELOAD`: module names the server
imports, so the parent imports nothing under `child/`). For a sweep with CPU Inductor configs it also runs
Inductor's probe of the CPU's vector instruction sets (`module:function` preloads; child/cpu_vec_isa.py), which its
children inherit instead of paying in their compile times. It starts nothing of its own: no thread pool, no device,
no PJRT client, no config ever runs in it (the one extra thread it has is numpy's OpenBLAS pool, which torch's
import loads and which OpenBLAS itself shuts down around a fork). Per config it forks a child, which takes its own
session, sends its output to the config's log, takes the config's after-fork variables, its cores and the thread
counts they imply (OpenMP and Inductor read theirs once, at the server's import: `zygote.apply_runtime_settings`
sets them again as a fresh interpreter would have), then runs the project's entry point with the config's flags, as
`python experiment_runner.py ...` would. What a forked child costs is not imports (an eager config imports about 20
of the project's small modules after the fork; the server holds the rest) but the interpreter's teardown at exit,
which writes to nearly every page the child shares with the server (about 40k copy-on-write page faults, 0.9 s of
CPU for an eager config of dummy/mlp). So the server freezes its objects out of the garbage collector's reach
(`gc.freeze`) before it serves, and a child ends with `zygote.exit_now`: its non-daemon threads joined, its atexit
functions run, its open files flushed, then `os._exit` (about 10k page faults, 0.1 s of CPU). An Inductor config
would still import about 1600 modules after the fork (dynamo, Inductor, sympy), a train config imports dynamo (its
optimizer does), and every config's roofline count imports dynamo and the FLOP counter (FakeTensorMode imports
dynamo: about 850 modules, 1.8 s of an eager dummy/mlp child's 2.4 s here). So a server also preloads what its
sweep's configs need (`fork_server.client.preloads_for`, from the plan: dynamo and the FLOP counter unless
--no-roofline or when any config trains or compiles, Inductor when any compiles with it). The launcher watches it as
it watches a spawned child (`Forked` has `Spawned`'s interface): the same pipe hand-back, log, timeout, memory limit
and group kill; the server is its parent, so the server reports its pid and exit status over the request's Unix socket.

Our own small server rather than `multiprocessing.forkserver`: that one pickles the function and arguments it runs,
starts its children as multiprocessing `Process`es (its own bootstrap, no session of their own, no file descriptors
handed over as a launched child's stdout and record pipe) and is the parent of every child with no way to report a
signal's exit status as `subprocess` does. Ours speaks JSON lines over a Unix socket in a directory only this user
may open, takes the child's output and record pipe as passed descriptors (SCM_RIGHTS), runs only the entry point it
was started with, and has no thread (a forked child would inherit a lock it could never take). A server checks its
parent once a second and exits with it; its children die with it (PR_SET_PDEATHSIG in `die_with_parent`).

A server is one interpreter: its C allocator is what it was started under (glibc reads its thresholds, the loader
`LD_PRELOAD`, only at a process's start). The allocator policy is part of the environment `server_spec` keys servers
by, so configs of different policies get different servers, each started under its own
(`logs/fork-server-torch-allocator-<name>.log`), and a forked child's `/proc/self/environ` is its server's.

CUDA in a forked child: torch marks every fork of a process bad for CUDA ("Cannot re-initialize CUDA in forked
subprocess") once that process has asked the CUDA runtime anything, even only how many devices it has, and even on a
machine without a GPU. Inductor's import asks (`torch.cuda.is_available()`, for its benchmarker), so a server that
preloaded it once made every CUDA config of a compiling sweep fail. The server now imports its preloads with
`PYTORCH_NVML_BASED_CUDA_CHECK=1`, so torch asks NVML instead, which leaves forks clean; where NVIDIA's driver
libraries are absent (torch would fall back to the runtime's call) no device is visible during the imports, whose
answer is then the same (none). Both variables are put back before the first fork: a forked child's environment
stays its spawned twin's, and what the imports cached is the true answer. Then the server checks what it promised:
it forks one probe child that reports `torch._C._cuda_isInBadFork()` (`zygote.cuda_fork_trouble`). A server whose
forks are bad (a preload that asked the runtime itself, a torch without that flag) refuses each CUDA config's
request (`fork_server.protocol.CUDA` in the request, `REFUSED` with its reason in the answer;
`ChildRequest.uses_cuda`), and the launcher spawns that config instead: its record says `launch: spawn` and
`launch_reason`. Ray's per-node servers are the same code. `tests/fork_server/test_fork_server.py` forks a child
after every preload combination the sweeps use (eager, train, Inductor; torch and XLA servers) and checks the flag.

Which configs fork: a config whose environment differs from its server's only in `fork_server.client.AFTER_FORK`
variables (threads, visible GPUs, the launcher's pid). Any other difference can only take effect before `import
torch` (torch_xla reads and extends `XLA_FLAGS` at import; `--dump-hlo` and `--save-ir-format` set per-config XLA
variables), so such a config is spawned and its record says `spawn`. Ray's own variables (`RAY_*`: a node's workers
differ in `RAY_JOB_ID`) are after-fork variables too. A server that dies (killed, or lost) is started again and the
config it was running is run once more on the new one; a second loss is a `crash` record (`ExecutorLost`). A
requester that hangs up before its child ends (a killed launcher, a cancelled Ray task's worker) leaves a child
nobody watches: the server kills its process group (`zygote.abandoned`), as a spawned child would have died with its
launcher. A server whose parent died without stopping it removes its socket and directory before it exits. `make
bench-overhead` measures both launches side by side.

Under `--executor=ray` each node keeps its own servers (`fork_server.node_servers`). A Ray task can't keep one: its
worker may be killed (a cancelled task) or reused, and two tasks on one node run in two workers. So when the driver
submits its first forkable config it starts one small actor per node (`NodeForkServers`: pinned to its node by node
affinity, no CPU held, named after the sweep and the node, owned by the driver), which owns that node's
`ForkServers`. A task looks its node's actor up by name, asks it for the socket of the server its config's
environment needs (started there on first use, under the environment the task would have spawned the child with) and
asks that server to fork the child, then watches it as a local launcher does (pinning, timeout, memory limit, group
kill, record pipe). When the driver ends, or is killed, Ray ends the actors; their servers end with them (each
checks its parent) and the children with their servers. A node that joins mid-sweep gets its actor when its first
task comes back; until then, and on a node whose actor could not start (the driver warns once per node, e.g. a
driver in Ray's token mode on a cluster without token authentication), children are spawned, and each record says
which way its child started. At the end the driver stops every node's servers and brings their logs home
(`logs/fork-server-<kind>-node-<id>.log`). Ctrl-C: `stop_all` kills every running child's process group (Ray:
cancels the tasks); a killed parent takes its children with it (`child/single_config.die_with_parent`:
PR_SET_PDEATHSIG and a watchdog).
"""
