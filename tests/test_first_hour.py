"""The first hour of a new user (issue 38, section 2): the docs' notebook cells, piped tables that cut nothing,
one install extra per engine, messages that point the right way, and the smaller things seen on the way."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import adprof
from tests.extras import requires

ROOT = Path(adprof.__file__).resolve().parents[1]  # the checkout under test (its docs and config)


# --------------------------------------------------------------------------- 1. the notebook example


@requires("IPython")
def test_notebook_load_ext_binds_adprof_for_the_docs_cells():
    """``%load_ext adprof`` binds ``adprof`` in the user's namespace (the docs' ``%%adprof`` cell uses
    ``@adprof.chain`` without an import); a name ``adprof`` the notebook already has is kept."""
    from IPython.core.interactiveshell import InteractiveShell

    import adprof
    from adprof.notebook import load_ipython_extension

    shell = InteractiveShell.instance()
    try:
        shell.user_ns.pop("adprof", None)
        load_ipython_extension(shell)
        assert shell.user_ns["adprof"] is adprof
        shell.run_cell("@adprof.chain(max_depth=3)\ndef f(xp, x, depth):\n    return xp.sum(x)\n")
        assert adprof.chain is not None and "f" in shell.user_ns
        shell.user_ns["adprof"] = "mine"
        load_ipython_extension(shell)
        assert shell.user_ns["adprof"] == "mine"
    finally:
        InteractiveShell.clear_instance()


# --------------------------------------------------------------------------- 3. one extra per engine


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_extras_one_per_engine_with_ranges_and_peers_is_all_of_them():
    extras = _extras()
    for engine, packages in (
        ("jax", {"jax", "jaxlib"}),
        ("torch", {"torch", "array-api-compat"}),
        ("autograd", {"autograd"}),
        ("tinygrad", {"tinygrad"}),
    ):
        reqs = extras[engine]
        names = {re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0] for r in reqs}
        assert names == packages, (engine, reqs)
        assert all("==" not in r for r in reqs), f"{engine}: a range, not a pin (pins live in .ci/constraints.txt)"
        assert all(">=" in r for r in reqs), reqs
    torch = next(r for r in extras["torch"] if r.startswith("torch"))
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(torch[len("torch") :])
    assert "2.13.0" in spec and "2.4.0" in spec and "3.0" not in spec  # the CPU build on disk, not any future torch
    assert extras["peers"] == ["adprof[jax,torch,autograd,tinygrad]"]


def test_extras_ci_installs_through_its_constraints_and_the_readme_shows_each_install_line():
    constraints = (ROOT / ".ci" / "constraints.txt").read_text().split()
    assert "torch==2.13.0" in constraints
    run = (ROOT / ".ci" / "run").read_text()
    installs = [line for line in run.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("constraints" in line for line in installs), installs
    assert "-c .ci/constraints.txt" in run
    readme = (ROOT / "README.md").read_text()
    for engine in ("jax", "torch", "autograd", "tinygrad"):
        assert f"pip install -e '.[{engine}]'" in readme, engine


def test_extras_a_missing_engine_names_its_own_extra(monkeypatch):
    import sys

    from adprof import backends

    monkeypatch.setitem(sys.modules, "tinygrad", None)
    with pytest.raises(backends.BackendNotInstalledError, match=r"pip install 'adprof\[tinygrad\]'"):
        backends.check_backend("tinygrad")
