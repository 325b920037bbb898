"""One config in one process: backends and sync, the measured loop, precise timing, the diagnostics, and --verify's
and --golden's checks (accuracy/). With the fork server's zygote (fork_server/zygote.py), the only part that imports
torch and torch_xla (docs/architecture.md)."""
