"""The worker that loads the targets measures the first lane (one worker start-up less per command), and a chain
file is imported once per worker: listing its chains and measuring them read the same module."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from extras import run_cli

from adprof.chain import import_chain_file
from adprof.measure.client import Worker, hand_over, handing_over, list_chains, take_handed
from adprof.measure.plan import load_targets
from adprof.measure.pool import LanePool

#: A chain file that appends one line to IMPORTS (an environment variable) each time it is imported.
COUNTING = textwrap.dedent(
    """
    import os

    import adprof

    with open(os.environ["IMPORTS"], "a") as f:
        f.write(f"{os.getpid()}\\n")


    @adprof.chain(input_shape=(3,), depths=(1, 2, 3), adaptive=False)
    def affine(xp, x, depth):
        y = x
        for _ in range(depth):
            y = y * 0.5 + 1.0
        return xp.sum(y)


    @adprof.chain(name="renamed", input_shape=(3,), sweep={"k": [1, 2]}, depths=(1, 2), adaptive=False)
    def swept(xp, x, depth, k):
        y = x
        for _ in range(depth):
            y = y * k
        return xp.sum(y)


    def plain(xp, x, depth):
        return xp.sum(x * depth)
    """
)


@pytest.fixture
def counting_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    chains, imports = tmp_path / "counting.py", tmp_path / "imports.txt"
    chains.write_text(COUNTING)
    monkeypatch.setenv("IMPORTS", str(imports))
    return chains, imports


def import_pids(imports: Path) -> list[int]:
    return [int(line) for line in imports.read_text().split()] if imports.exists() else []


def test_a_chain_file_names_each_variant_and_plain_function(counting_file):
    chains, imports = counting_file
    loaded = import_chain_file(chains)
    assert [c.name for c in loaded.select()] == ["affine", "renamed"]
    assert loaded.variant("renamed[k=2]").params == {"k": 2}
    assert loaded.variant("renamed[k = 1]").params == {"k": 1}  # as the command line may spell it
    assert [c.name for c in loaded.select(["renamed"])] == ["renamed"]  # FILE::renamed: by its chain name
    assert loaded.variant("plain").name == "plain"  # an undecorated function, wrapped
    assert loaded.variant("affine").source == str(chains.resolve())
    assert len(import_pids(imports)) == 1


def test_a_worker_lists_and_measures_from_one_import(counting_file):
    chains, imports = counting_file
    worker = Worker()
    try:
        names = [m["name"] for m in list_chains(str(chains), None, worker)]
        assert names == ["affine", "renamed[k=1]", "renamed[k=2]"]
        ans = worker.request(
            {"op": "point", "file": str(chains), "chain": "renamed[k=2]", "backend": "engine", "profile": "fixed"}
            | {"mode": "traced", "depth": 2, "calls": 1, "counter_budget": 10**6},
            60,
        )
        assert ans["ok"], ans
        assert import_pids(imports) == [worker.proc.pid]  # listed and measured in one module
    finally:
        worker.close()


def test_the_loading_worker_becomes_the_first_lane_and_is_closed_with_the_pool(counting_file):
    chains, _ = counting_file
    with handing_over():
        load_targets([str(chains)], 60)
        pool = LanePool(2)
        first = pool.workers[0]
        assert first.alive  # started: it loaded the targets
        assert not pool.workers[1].alive  # started lazily, as before
        pool.close()
        assert not first.alive


def test_a_worker_no_pool_takes_is_closed_when_the_block_ends(counting_file):
    chains, _ = counting_file
    with handing_over():
        load_targets([str(chains)], 60)
        kept = take_handed()
        assert kept is not None and kept.alive
        hand_over(kept)  # back, and never taken
        second = Worker()
        second.start()
        hand_over(second)  # one kept at most: this one is closed at once
        assert not second.alive
    assert not kept.alive


def test_outside_the_block_the_loading_worker_is_closed(counting_file):
    chains, _ = counting_file
    load_targets([str(chains)], 60)
    assert take_handed() is None
    pool = LanePool(1)
    assert not pool.workers[0].alive
    pool.close()


def test_a_check_on_one_lane_imports_the_chain_file_once(counting_file, tmp_path):
    """Before, the file was imported twice: by the worker that listed it and by the lane's."""
    chains, imports = counting_file
    run = run_cli(
        "check",
        f"{chains}::affine",
        "--profile",
        "fixed",
        "--mode",
        "traced,eager",
        "--jobs",
        "1",
        "--no-structure",
        "--json",
        "-",
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    assert [r["error"] for r in report["results"]] == [None, None]
    pids = import_pids(imports)
    assert len(pids) == 1, pids
    assert pids[0] != os.getpid()
