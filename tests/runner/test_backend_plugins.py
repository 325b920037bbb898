"""A dynamo backend installed as a `torch_dynamo_backends` entry point (a user's plugin) is seen by the sweep even
after the probe's answer was cached without it: the cache key holds the installed backend plugins, PYTHONPATH and the
interpreter (runner/capabilities.py). Before, the stale answer refused the plugin as "unknown; no close match"."""

import os

import pytest

from helpers import install_plugin, run_runner

from benchmarks.config import backend_registry
from benchmarks.plumbing import user_cache
from benchmarks.runner import capabilities


@pytest.mark.integration
def test_a_backend_plugin_installed_after_the_probe_was_cached_is_found(tmp_path):
    cache, plugins = tmp_path / "cache", tmp_path / "plugins"
    plugins.mkdir()
    env = dict(os.environ, **{user_cache.CACHE_ENV: str(cache)})
    common = ("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--test=eval", "--dry-run",
              f"--output-dirname={tmp_path / 'out'}")
    first = run_runner(*common, "--dynamo=aot_eager", env=env)  # the probe's answer cached, without the plugin
    assert first.returncode == 0, first.stderr
    assert list(cache.glob("*.json"))
    install_plugin(plugins)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugins), env.get("PYTHONPATH")]))
    second = run_runner(*common, "--dynamo=tiny_plugin", env=env)
    assert second.returncode == 0, second.stderr
    assert "tiny_plugin" in second.stdout


def test_the_cache_key_names_installed_backend_plugins_and_pythonpath(tmp_path, monkeypatch):
    argv = ["python", "-m", "benchmarks.runner.probe", "--dynamo"]
    base = {"PATH": "/usr/bin"}
    key = capabilities.cache_key(argv, base)
    assert key != capabilities.cache_key(argv, dict(base, PYTHONPATH=str(tmp_path)))
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # importlib.metadata reads sys.path, as the probe child will
    assert ["tiny_plugin", "tiny_backend_plugin:tiny_plugin_backend", "tiny-backend-plugin", "1.0"] in \
        backend_registry.plugins()
    assert key != capabilities.cache_key(argv, base)


def test_the_cache_key_names_the_interpreter(monkeypatch):
    """Another Python at the same path (a virtual environment rebuilt on a newer one) is asked again."""
    argv = ["python", "-m", "benchmarks.runner.probe", "--dynamo"]
    key = capabilities.cache_key(argv, {})
    monkeypatch.setattr(capabilities.sys, "version", "3.99.0 (a rebuilt interpreter)")
    assert key != capabilities.cache_key(argv, {})
    monkeypatch.undo()
    monkeypatch.setattr(capabilities.sys, "executable", "/elsewhere/bin/python")
    assert key != capabilities.cache_key(argv, {})
