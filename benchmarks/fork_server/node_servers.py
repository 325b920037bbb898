"""--launch=fork under --executor=ray: each node keeps its own fork servers (benchmarks/fork_server/__init__.py).

A Ray task can't keep a fork server: its worker may be killed (a cancelled task) or reused for anything, and two
tasks on one node run in two workers. So the driver starts, on each node, one small actor that owns the node's
servers for this sweep (`NodeForkServers`: a `client.ForkServers`, so the servers are its children and die
with it). The actor is pinned to its node, holds no CPU, is named after the sweep and the node, and is owned by
the driver: when the driver ends (or is killed) Ray ends the actor, its servers end with it and their children
with them. A task looks up its node's actor by name, asks it for the socket of the server its config needs
(started there on first use) and asks that server to fork the child itself, as a local sweep does. A node
without an actor (it joined after the sweep started: the driver starts one when its first task comes back), or
whose actor is gone, spawns its children: each record says which way its child started.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

from benchmarks.fork_server import client
from benchmarks.plumbing import scratch_dirs

log = logging.getLogger("benchmarks.fork_server.node_servers")

SERVERS_DIR = "fork-servers-"  # + a node id's first 8 digits: a node's servers' directory in the sweep's scratch
CLOSE_SECONDS = 30.0  # how long the driver waits for a node to stop its servers and send their logs home


def node_scratch(sweep_id: str) -> str:
    """The sweep's scratch directory on a node (tasks' output directories, the servers' logs)."""
    return scratch_dirs.sweep_dir("ray", sweep_id)


def actor_name(sweep_id: str, node_id: str) -> str:
    return f"ptbench-fork-servers-{sweep_id}-{node_id}"


class NodeForkServers:
    """The body of the per-node actor: this node's fork servers for one sweep."""

    def __init__(self, sweep_id: str, node_id: str, preloads: tuple):
        # The node's own directory in the sweep's: nodes may share a machine (and so a /tmp).
        self.scratch = os.path.join(node_scratch(sweep_id), f"{SERVERS_DIR}{node_id[:8]}")
        os.makedirs(self.scratch, exist_ok=True)
        self.servers = client.ForkServers(self.scratch, preloads)

    def address(self, spec: client.ServerSpec, replacing: Optional[str] = None) -> str:
        """The socket of the server for `spec` (started now if there is none, or if it is the one at `replacing`,
        which a task saw die)."""
        lost = client.ServerClient(spec, replacing) if replacing else None
        return self.servers.server(spec, lost).path

    def close(self) -> dict:
        """Stop the servers; how many were started, and {log file name: its bytes} for the driver to keep."""
        self.servers.close()
        logs = {}
        for name in sorted(os.listdir(self.scratch)):
            if name.startswith("fork-server-") and name.endswith(".log"):
                path = os.path.join(self.scratch, name)
                with open(path, "rb") as handle:
                    logs[name] = handle.read()
                os.remove(path)
        for directory in (self.scratch, os.path.dirname(self.scratch)):
            try:
                os.rmdir(directory)  # the sweep's is empty once every task and node has cleaned up after itself
            except OSError:
                pass
        return {"started": self.servers.started, "logs": logs}


def start(ray, sweep_id: str, node_id: str, preloads: tuple):
    """The actor for `node_id` (pinned there, no CPU held, owned by this driver); None when Ray refuses."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        return ray.remote(NodeForkServers).options(
            name=actor_name(sweep_id, node_id), num_cpus=0, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
        ).remote(sweep_id, node_id, tuple(preloads))
    except Exception as exc:  # a name taken, a node gone: that node's children are spawned
        log.warning("no fork servers on node %s (%s): its children are spawned", node_id, exc)
        return None


def lookup(ray, sweep_id: str, node_id: str):
    """This node's actor, as a task finds it; None when it has none."""
    try:
        return ray.get_actor(actor_name(sweep_id, node_id))
    except ValueError:
        return None
