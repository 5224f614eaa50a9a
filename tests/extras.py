"""Skipping a test that needs an optional extra, saying which extra installs it (the README's test command
installs only ``dev``: every such test must skip cleanly there).

``requires("jax", "torch")`` is a ``skipif`` marker; ``require(...)`` skips from inside a test or at module level.
``run_cli(...)`` runs the command line as a user types it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The module a test needs -> the extra of pyproject.toml that installs it.
EXTRA_OF = {
    "jax": "jax",
    "jaxlib": "jax",
    "torch": "torch",
    "autograd": "autograd",
    "tinygrad": "tinygrad",
    "array_api_compat": "torch",
    "dask": "dask",
    "distributed": "dask",
    "matplotlib": "plot",
    "cloudpickle": "notebook",
    "IPython": "notebook",
    "nbclient": "dev",
    "nbformat": "dev",
    "ipykernel": "dev",
    "junitparser": "dev",
    "markdown_it": "dev",
}


def missing_reason(*modules: str) -> str | None:
    """Why the modules cannot be used (the first missing one and its extra), or None when all are installed."""
    for m in modules:
        if importlib.util.find_spec(m) is None:
            extra = EXTRA_OF.get(m)
            how = f"pip install -e '.[{extra}]'" if extra else f"pip install {m}"
            return f"needs {m}" + (f" (the '{extra}' extra: {how})" if extra else f" ({how})")
    return None


def requires(*modules: str) -> pytest.MarkDecorator:
    """Skip the test unless every module is installed, naming the extra that installs the missing one."""
    reason = missing_reason(*modules)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def require(*modules: str) -> None:
    """Skip now (a test, or a module at import) unless every module is installed."""
    reason = missing_reason(*modules)
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)


def run_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m adprof ARGS`` as a user runs it (this checkout's code, a wide terminal), its output captured."""
    repo = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "200"},
    )
