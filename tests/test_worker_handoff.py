"""The worker that loads the targets measures the first lane (one worker start-up less per command), as a fresh
worker would: it imports the chain file again for the measuring, so what the file does at import (seeding a
generator, patching numpy) is in place in every lane."""

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


def _loaded(chains: Path) -> Worker:
    """Within :func:`handing_over`: load ``chains`` and take the worker that loaded them (alive)."""
    load_targets([str(chains)], 60)
    worker = take_handed()
    assert worker is not None and worker.alive
    return worker


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


def test_a_worker_imports_the_file_again_to_measure_and_once_for_all_its_points(counting_file):
    chains, imports = counting_file
    worker = Worker()
    try:
        names = [m["name"] for m in list_chains(str(chains), None, worker)]
        assert names == ["affine", "renamed[k=1]", "renamed[k=2]"]
        for name in ("renamed[k=2]", "affine"):
            for depth in (1, 2):
                ans = worker.request(
                    {"op": "point", "file": str(chains), "chain": name, "backend": "engine", "profile": "fixed"}
                    | {"mode": "traced", "depth": depth, "calls": 1, "counter_budget": 10**6},
                    60,
                )
                assert ans["ok"], ans
        assert import_pids(imports) == [worker.proc.pid] * 2  # the listing's import, then the measuring's
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
        kept = _loaded(chains)
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


def _checked(target: str, mode: str, jobs: int, cwd: Path) -> None:
    """``adprof check TARGET`` on the fixed engine without the structure probe: two series, neither an error."""
    run = run_cli(
        "check",
        target,
        "--profile",
        "fixed",
        "--mode",
        mode,
        "--jobs",
        str(jobs),
        "--no-structure",
        "--json",
        "-",
        cwd=cwd,
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stderr
    assert [r["error"] for r in json.loads(run.stdout)["results"]] == [None, None]


PATCHING = textwrap.dedent(
    """
    import os

    import numpy as np

    import adprof

    _sum = np.sum


    def patched(*args, **kwargs):
        return _sum(*args, **kwargs)


    np.sum = patched  # at import: a patch of numpy, and a seed
    np.random.seed(0)


    def draw():
        x = np.random.rand(3) + 0.5
        with open(os.environ["SEEN"], "a") as f:
            f.write(f"{os.getpid()} {np.sum is patched} {x[0]:.6f}\\n")
        return x


    @adprof.chain(input=draw, depths=(1, 2), adaptive=False)
    def first(xp, x, depth):
        return xp.sum(x * depth)


    @adprof.chain(input=draw, depths=(1, 2), adaptive=False)
    def second(xp, x, depth):
        return xp.sum(x * depth)
    """
)


def test_every_lane_measures_what_the_file_set_up_at_import(tmp_path, monkeypatch):
    """Two chains on two lanes, the first lane's worker the one that listed them (and drew their inputs then): each
    lane's first input is drawn with numpy patched and from the file's seed, as in a fresh worker."""
    chains, seen = tmp_path / "patching.py", tmp_path / "seen.txt"
    chains.write_text(PATCHING)
    monkeypatch.setenv("SEEN", str(seen))
    _checked(str(chains), "traced", 2, tmp_path)
    lines = [line.split() for line in seen.read_text().splitlines()]
    listed = lines[:2]  # the listing drew both chains' inputs, in one worker
    assert len({pid for pid, _, _ in listed}) == 1
    firsts: dict[str, list[str]] = {}
    for pid, patched, x in lines[2:]:
        firsts.setdefault(pid, [patched, x])
    assert listed[0][0] in firsts  # the worker that listed the chains measured too
    assert len(firsts) == 2 and all(first == ["True", listed[0][2]] for first in firsts.values()), lines


def test_a_check_on_one_lane_starts_one_worker_for_listing_and_measuring(counting_file, tmp_path):
    """Before, a worker listed the file and another measured it."""
    chains, imports = counting_file
    _checked(f"{chains}::affine", "traced,eager", 1, tmp_path)
    pids = import_pids(imports)
    assert len(pids) == 2 and len(set(pids)) == 1, pids  # listed, then measured, in one worker
    assert pids[0] != os.getpid()


class _Cluster:
    """An executor that is not a lane pool (as a Dask cluster is): it measures nothing here."""

    lanes = 1
    interrupted = None

    def run(self, tasks, on_done=None, poll=None, status=None):
        return [None for _ in tasks]

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_cluster_run_closes_the_loading_worker_at_once(counting_file):
    """With ``--scheduler``, the loading worker (the chain file's imports in it) does not idle through the run."""
    from adprof.measure import MeasureConfig
    from adprof.measure.pool import measure_all

    chains, _ = counting_file
    with handing_over():
        kept = _loaded(chains)
        hand_over(kept)
        measure_all([], MeasureConfig(structure=False), executor=_Cluster())
        assert not kept.alive
        assert take_handed() is None


def test_a_worker_taken_but_never_closed_is_closed_with_the_block(counting_file):
    """An interrupt between the hand-over and the pool's own clean-up leaves no worker behind."""
    chains, _ = counting_file
    with handing_over():
        taken = _loaded(chains)
    assert not taken.alive


def test_a_chain_is_found_by_its_chain_name_before_a_function_of_that_name(tmp_path):
    """What the listing calls ``a`` is what ``FILE::a`` measures: the chain named ``a``, not the function."""
    chains = tmp_path / "swapped.py"
    chains.write_text(
        textwrap.dedent(
            """
            import adprof


            @adprof.chain(name="b")
            def a(xp, x, depth):
                return xp.sum(x)


            @adprof.chain(name="a")
            def b(xp, x, depth):
                return xp.sum(x * depth)
            """
        )
    )
    loaded = import_chain_file(chains)
    assert [c.fn.__name__ for c in loaded.select(["a", "b"])] == ["b", "a"]
    assert loaded.variant("a").fn.__name__ == "b"
