"""Scaling out (docs/scale-out.md): the Dask executor, ``--shard K/N`` with ``adprof report``, the machine of a
series, and the generic JSON loader. The CLI runs as a user runs it (a subprocess); a LocalCluster is
started here and passed by address, as a team's cluster would be."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import os
import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from extras import require, requires
from fault_helpers import (
    REPO,
    TAG_VAR,
    assert_clean,
    describe,
    kill_tagged,
    leftovers,
    run_adprof,
    start_adprof,
    tagged_pids,
)
from rich.console import Console

from adprof import model
from adprof.analysis.classify import loaded_machine
from adprof.cli.run import shard_specs
from adprof.constants import LOADED_PER_CORE
from adprof.measure import SeriesSpec
from adprof.model import Fit, Machine, Point, Report, Result, Series, Shard, Verdict
from adprof.plain import PlainError, from_plain, to_plain
from adprof.render import render_html, render_report
from adprof.render.jsonout import SCHEMA, SchemaError, load_report, report_to_json
from adprof.report import MergeError, build_report, merge_reports

HAS_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = requires("distributed")

#: Two chains of probes/chains.py at explicit depths with room to spare (cap, budget): nothing time decides
#: where the series stop, so two runs measure the same points and their counters must agree exactly.
SMALL = ["probes/chains.py::mul", "probes/chains.py::linear", "--profile", "v08"]
FIXED = ["--depths", "1,2,3,4,5,6,7", "--cap", "30", "--budget", "300"]


def check(tmp_path: Path, name: str, *args: str, timeout: float = 240) -> dict[str, Any]:
    """``adprof check ... --json``: the report, after asserting a clean run (nothing left behind)."""
    out = tmp_path / f"{name}.json"
    run = run_adprof(["check", *args, "--json", str(out)], cwd=REPO, timeout=timeout)
    assert_clean(run)
    assert run.code in (0, 1), run.summary()
    return json.loads(out.read_text())


def check_side_by_side(tmp_path: Path, runs: dict[str, list[str]], timeout: float = 240) -> list[dict[str, Any]]:
    """Several ``adprof check ... --json`` at once (as CI jobs would run them); their reports."""
    started = {}
    for name, args in runs.items():
        started[name] = start_adprof(["check", *args, "--json", str(tmp_path / f"{name}.json")], REPO, None)
    for name, (proc, tag) in started.items():
        try:
            _, err = proc.communicate(timeout=timeout)
        finally:
            left = describe(leftovers(tag))
            kill_tagged(tag)
        assert proc.returncode in (0, 1) and "Traceback" not in err, err[-2000:]
        assert not left, f"{name}: processes left behind: {left}"
    return [json.loads((tmp_path / f"{name}.json").read_text()) for name in runs]


def _counts(counters: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Engine counters without the seconds the engine also keeps among them (``transform_seconds``)."""
    return {ph: {k: v for k, v in c.items() if not k.endswith("_seconds")} for ph, c in counters.items()}


def deterministic(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each result with its times masked: what deterministic counters decide, series by series."""
    out = []
    for r in report["results"]:
        fit = r.get("fit") or {}
        exact = [p for p in r["points"] if not p["extra"].get("censored")]
        by_time = fit.get("source") == "time"
        out.append(
            {
                "series": (r["file"], r["chain"], r["backend"], r["profile"], r["mode"], json.dumps(r["params"])),
                "verdict": r["verdict"],
                "decided by": fit.get("source"),
                "model": None if by_time else (fit.get("model"), fit.get("depths"), fit.get("values"), r["base"]),
                "counters": {p["depth"]: _counts(p["counters"]) for p in exact},
                "ops": {p["depth"]: p["ops"] for p in exact},
                "error": r["error"],
            }
        )
    return out


def assert_same_counters(a: dict[str, Any], b: dict[str, Any], same_depths: bool) -> None:
    """Series by series: the same verdict and deciding source, and the same counters at every depth both measured."""
    da, db = deterministic(a), deterministic(b)
    assert [x["series"] for x in da] == [x["series"] for x in db]
    for x, y in zip(da, db, strict=True):
        where = x["series"]
        assert (x["verdict"], x["decided by"], x["error"]) == (y["verdict"], y["decided by"], y["error"]), where
        common = sorted(set(x["counters"]) & set(y["counters"]))
        assert common or x["error"], f"{where}: no depth measured by both runs"
        for d in common:
            assert x["counters"][d] == y["counters"][d], f"{where} depth {d}: counters differ"
            assert x["ops"][d] == y["ops"][d], f"{where} depth {d}: ops differ"
        if same_depths:
            assert x == y, where


@pytest.fixture(scope="module")
def local_small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return check(tmp_path_factory.mktemp("local"), "local", *SMALL, *FIXED)


# ----------------------------------------------------------------------------------- --shard + adprof report


def _specs(n: int, seed: int) -> list[SeriesSpec]:
    rng = random.Random(seed)
    return [
        SeriesSpec(
            file=rng.choice(["probes/chains.py", "my/chain.py"]),
            chain=f"c{rng.randrange(10**6)}",
            backend=rng.choice(["engine", "jax"]),
            profile=rng.choice(["v08", None]),
            mode=rng.choice(["traced", "eager"]),
            max_depth=8,
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_cover_every_series_once_whatever_the_order(count: int) -> None:
    specs = _specs(60, seed=count)
    shuffled = random.Random(0).sample(specs, len(specs))
    parts = [shard_specs(specs, k, count) for k in range(1, count + 1)]
    taken = [id(s) for part, _ in parts for s in part]
    assert sorted(taken) == sorted(map(id, specs))  # every series exactly once
    for k, (part, shard) in enumerate(parts, 1):
        assert [specs[i] for i in shard.positions] == part and shard.planned == len(specs)
        again, _ = shard_specs(shuffled, k, count)  # a hash of the name, not the place in the list
        assert {id(s) for s in again} == {id(s) for s in part}
    if count > 1:
        assert all(part for part, _ in parts[:2])  # 60 series: no shard of the first two is empty


def test_shard_reports_merge_back_in_plan_order() -> None:
    def rep(k: int, positions: list[int], plan: str = "p") -> Report:
        results = [Result(Series(f"c{i}", "engine", "v08", "traced"), Verdict(model.LINEAR)) for i in positions]
        return Report(results=results, notes=[f"shard {k}", "same"], shard=Shard(k, 2, 5, positions, plan))

    merged = merge_reports([rep(2, [1, 4]), rep(1, [0, 2, 3])])
    assert [r.series.chain for r in merged.results] == ["c0", "c1", "c2", "c3", "c4"]
    assert merged.notes == ["shard 2", "same", "shard 1"] and merged.shard is None
    with pytest.raises(MergeError, match="2/2 missing"):  # a missing shard fails, unless allowed
        merge_reports([rep(1, [0, 2, 3])])
    alone = merge_reports([rep(1, [0, 2, 3])], allow_missing=True)
    assert any("1 of 2 shards" in n and "2/2 missing" in n for n in alone.notes)
    with pytest.raises(MergeError, match="given twice"):
        merge_reports([rep(1, [0]), rep(1, [0])])
    with pytest.raises(MergeError, match="different runs"):
        merge_reports([rep(1, [0, 2, 3]), rep(2, [1, 4], plan="other")])
    with pytest.raises(MergeError, match="whole reports"):
        merge_reports([rep(1, [0]), Report()])


def test_sharded_run_merges_into_the_unsharded_report(tmp_path: Path, local_small: dict[str, Any]) -> None:
    """``--shard 1/2`` and ``--shard 2/2`` together measure every series once; ``adprof report`` merges them
    into the unsharded report (times masked), and renders it."""
    one, two = check_side_by_side(tmp_path, {f"s{k}": [*SMALL, *FIXED, "--shard", f"{k}/2"] for k in (1, 2)})
    assert one["results"] and two["results"]
    assert sorted(one["shard"]["positions"] + two["shard"]["positions"]) == list(range(len(local_small["results"])))
    merged_json, html = tmp_path / "merged.json", tmp_path / "merged.html"
    run = run_adprof(
        [
            "report",
            str(tmp_path / "s2.json"),
            str(tmp_path / "s1.json"),
            "--json",
            str(merged_json),
            "--html",
            str(html),
        ],
        cwd=REPO,
        timeout=60,
    )
    assert_clean(run)
    merged = json.loads(merged_json.read_text())
    assert deterministic(merged) == deterministic(local_small)
    assert merged["sweeps"] == local_small["sweeps"]
    assert run.code == (1 if any(r["verdict"] in model.PATHOLOGIES for r in merged["results"]) else 0)
    assert "adprof summary" in run.out and html.read_text().count('class="verdict ') >= len(merged["results"])


# ----------------------------------------------------------------------------------------- adprof report


def _sample_report() -> Report:
    pts = [
        Point(depth=d, times={"transform": 1e-4 * 2**d}, counters={"transform": {"key_comparisons": 2**d}})
        for d in range(1, 9)
    ]
    series = Series(
        "mul", "engine", "v08", "traced", points=pts, file="probes/chains.py", machine=Machine("h", "cpu", 2)
    )
    return build_report([series], {}, notes=["n"], environment={"argv": ["adprof"]})


def test_report_re_renders_a_saved_run_and_refuses_another_schema(tmp_path: Path) -> None:
    report = _sample_report()
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(report_to_json(report)))
    run = run_adprof(["report", str(saved)], cwd=REPO, timeout=60)
    assert_clean(run)
    assert run.code == 1 and "exponential-transform" in run.out  # the saved verdict, not measured again

    data = report_to_json(report)
    data["schema"] = SCHEMA + 1
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    for path, pattern in ((other, f"schema {SCHEMA + 1}"), (tmp_path / "missing.json", "cannot read")):
        run = run_adprof(["report", str(path)], cwd=REPO, timeout=60)
        assert_clean(run)
        lines = [ln for ln in run.err.splitlines() if ln.strip()]
        assert run.code == 2 and len(lines) == 1 and pattern in lines[0], run.summary()
    with pytest.raises(SchemaError, match="does not fit"):
        load_report({**report_to_json(report), "results": [{"chain": "x"}]})


def test_loader_reads_fields_it_was_not_written_for() -> None:
    """The loader walks the dataclasses' type hints: a field added later (here: a subclass with a nested
    dataclass, an optional list of them and a dict of them) loads without a line of loader code."""

    @dataclasses.dataclass
    class Later(Series):
        probe: Machine | None = None
        history: list[Machine] | None = None
        fits: dict[str, Fit] = dataclasses.field(default_factory=dict)

    s = Later("c", "engine", None, "eager", points=[Point(3, counters={"backward": {"key_comparisons": 7}})])
    s.probe, s.history, s.fits = Machine("a", cpus=4), [Machine("b"), Machine("c")], {"t": Fit("m", "linear")}
    back = from_plain(Later, json.loads(json.dumps(to_plain(s))))
    assert back == s and isinstance(back.history[1], Machine) and isinstance(back.fits["t"], Fit)
    with pytest.raises(PlainError, match=r"points\[0\]\.depth"):
        from_plain(Series, {"chain": "c", "backend": "b", "profile": None, "mode": "m", "points": [{"depth": "x"}]})
    report = _sample_report()
    assert load_report(json.loads(json.dumps(report_to_json(report)))) == report


# ------------------------------------------------------------------------------------ machine and load flag


def _timed(load: float) -> Series:
    """A series only time can decide (no counters), measured on a 2-CPU machine at ``load``."""
    pts = [Point(depth=d, times={"transform": 1e-3 * d, "drop": 1e-4 * d}) for d in (8, 16, 32, 64, 128)]
    m = Machine("node-7", "cpu", 2, load_average=load, load_peak=load)
    return Series("sin", "torch", None, "traced", points=pts, machine=m)


def test_time_decided_series_on_a_loaded_machine_are_flagged() -> None:
    counted = _sample_report().results[0].series
    counted.machine = Machine("node-8", "cpu", 2, load_average=6.0, load_peak=6.0)
    report = build_report([_timed(6.0), counted], {})
    flags = [(r.verdict.fit.source if r.verdict.fit else None, r.verdict.loaded_machine) for r in report.results]
    assert flags == [("time", True), ("counters", False)]  # the same load: only time is at its mercy
    assert not loaded_machine(_timed(LOADED_PER_CORE * 2 - 0.01), report.results[0].verdict)  # 2 CPUs
    assert loaded_machine(_timed(LOADED_PER_CORE * 2 + 0.01), report.results[0].verdict)
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=220, color_system=None), verbose=True)
    text = buf.getvalue()
    assert "time (loaded)" in text and text.count("(loaded)") == 1  # one flagged row
    assert "machine" in text and "node-8" in text  # two hosts: the summary says which measured what
    assert "load average 6.00 (peak 6.00), 3.00 per CPU" in text
    page = render_html(report)
    assert page.count('<span class="loaded"') == 1 and "node-7" in page


# -------------------------------------------------------------------------------------------------- Dask


@pytest.fixture(scope="module")
def cluster() -> Any:
    """A LocalCluster of 2 workers x 1 thread, started here (as a team's cluster) and passed by address.
    Its processes carry a tag, so what its workers start can be found (and must be gone after a run)."""
    require("distributed")
    from distributed import Client, LocalCluster

    tag = uuid.uuid4().hex
    old = os.environ.get(TAG_VAR)
    os.environ[TAG_VAR] = tag  # inherited by the worker processes, and the adprof workers they start
    try:
        lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50)
    finally:
        if old is None:
            os.environ.pop(TAG_VAR, None)
        else:
            os.environ[TAG_VAR] = old
    client = Client(lc, set_as_default=False)
    yield lc, client, tag
    client.close()
    lc.close()


def _measuring_workers(tag: str) -> list[str]:
    """adprof worker subprocesses started by the cluster's workers and still alive."""
    end = time.monotonic() + 5
    while True:
        left = [d for d in describe(tagged_pids(tag)) if "adprof.measure.worker" in d]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


@needs_dask
def test_a_cluster_by_address_gives_the_local_verdicts_and_counters(
    tmp_path: Path, local_small: dict[str, Any], cluster: Any
) -> None:
    lc, _, tag = cluster
    dask = check(tmp_path, "dask", *SMALL, *FIXED, "--scheduler", lc.scheduler_address)
    assert_same_counters(local_small, dask, same_depths=True)
    assert all(r["machine"]["worker"].startswith("tcp://") for r in dask["results"] if r["points"])
    assert dask["environment"]["executor"].startswith(f"dask: {lc.scheduler_address}, 2 workers")
    assert not _measuring_workers(tag)  # the run's adprof subprocesses on the workers are closed with it


SLOW_CHAIN = """
import os
import time

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8), modes=("traced",))
def slow(xp, x, depth):
    # marks the Dask worker measuring it: the parent of the adprof worker that runs this
    open(os.path.join(os.environ["ADPROF_FAULT_DIR"], str(os.getppid())), "a").close()
    time.sleep(0.2)
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
"""


@needs_dask
@pytest.mark.slow  # the default run's representative: test_a_task_whose_workers_all_died_is_a_lost_series
def test_a_lost_worker_loses_only_its_series(tmp_path: Path) -> None:
    """``--scheduler local:2``, and one of its Dask workers killed (SIGKILL) while it measures a series: that
    series is rerun elsewhere or reported as `error` (worker lost); the other series is measured, and
    nothing is left running (the embedded cluster goes with adprof)."""
    chains, marks, out = tmp_path / "slow.py", tmp_path / "marks", tmp_path / "lost.json"
    chains.write_text(SLOW_CHAIN)
    marks.mkdir()
    args = ["check", str(chains), "--no-structure", "--scheduler", "local:2", "--budget", "200", "--cap", "30"]
    proc, tag = start_adprof([*args, "--json", str(out)], cwd=REPO, mark_dir=marks)
    killed = None
    end = time.monotonic() + 120
    while killed is None and time.monotonic() < end and proc.poll() is None:
        seen = [int(m.name) for m in marks.iterdir()]
        if seen:
            time.sleep(0.6)  # a few points in
            killed = seen[0]
            assert killed in tagged_pids(tag) and killed != proc.pid  # a worker process of this run
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    try:
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        left = describe(leftovers(tag))
        kill_tagged(tag)
    assert killed is not None, "no series was seen running"
    assert proc.returncode in (0, 1), stderr[-2000:]
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-2000:]
    assert not left, f"processes left behind: {left}"
    results = json.loads(out.read_text())["results"]
    assert sorted((r["profile"], r["mode"]) for r in results) == [("fixed", "traced"), ("v08", "traced")]
    lost = [r for r in results if r["error"]]
    assert all(r["error"].startswith("worker lost") for r in lost), [r["error"] for r in lost]
    assert len(lost) <= 1 and all(len(r["points"]) == 8 for r in results if not r["error"])  # nothing else lost
    rerun = {r["machine"]["worker"] for r in results if not r["error"]}
    assert rerun and all(w.startswith("tcp://") for w in rerun)


@needs_dask
@pytest.mark.slow
def test_probes_on_an_embedded_cluster_match_the_local_run(tmp_path: Path) -> None:
    """The acceptance run: ``adprof check probes/chains.py --scheduler local:2`` vs the local lanes, series by
    series (a budget the run does not reach, so neither is cut short by it)."""
    local = check(tmp_path, "local", "probes/chains.py", "--budget", "900", timeout=1200)
    dask = check(tmp_path, "dask", "probes/chains.py", "--budget", "900", "--scheduler", "local:2", timeout=1200)
    assert_same_counters(local, dask, same_depths=False)
    assert {r["machine"]["worker"][:6] for r in local["results"] if r["points"]} == {"lane 0", "lane 1"}


@needs_dask
@pytest.mark.slow
def test_embedded_cluster_one_chain(tmp_path: Path, local_small: dict[str, Any]) -> None:
    """``--scheduler local:2`` on two chains (the default run covers local:2 in the lost-worker test)."""
    dask = check(tmp_path, "dask", *SMALL, *FIXED, "--scheduler", "local:2")
    assert_same_counters(local_small, dask, same_depths=True)
    assert "embedded LocalCluster, 2 workers" in dask["environment"]["executor"]


@needs_dask
@pytest.mark.slow
def test_an_interrupt_stops_the_cluster_run_with_a_partial_report(tmp_path: Path) -> None:
    """SIGINT during ``--scheduler local:2``: exit 130, the series in progress end interrupted, the rest are
    not measured, the partial JSON is written, and no process of the run (cluster included) is left."""
    out = tmp_path / "partial.json"
    proc, tag = start_adprof(["check", "probes/chains.py", "--scheduler", "local:2", "--json", str(out)], REPO, None)
    try:
        time.sleep(15)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        left = describe(leftovers(tag))
        kill_tagged(tag)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert not left, f"processes left behind: {left}"
    results = json.loads(out.read_text())["results"]
    assert any(r["stopped"] == "not measured: interrupted by SIGINT" for r in results)
    assert any(r["points"] and not r["error"] for r in results)


def test_a_chain_file_sent_to_a_worker_without_it_is_copied_and_reported_as_given(tmp_path: Path) -> None:
    """A worker without the file (or with other bytes at its path) loads a copy of the sent bytes; the series
    still names the file as the user gave it, in its error messages too."""
    import hashlib

    from adprof.measure import MeasureConfig, Worker
    from adprof.measure.dask_executor import _materialize, _RunOnWorker
    from adprof.measure.executor import TaskContext
    from adprof.measure.pool import series_task

    source = (
        b"import adprof\n\n\n@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3), modes=('traced',))\n"
        b"def where(xp, x, depth):\n    if depth == 3:\n        raise RuntimeError('failed in ' + __file__)\n"
        b"    return xp.sum(xp.sin(x))\n"
    )
    digest = hashlib.sha256(source).hexdigest()
    here = tmp_path / "mine.py"
    here.write_bytes(source)
    run = _RunOnWorker()
    assert _materialize(run, "r1", str(here), (str(here), digest, source)) == str(here)  # a shared filesystem
    here.write_bytes(b"# another version\n")
    copy = _materialize(run, "r1", "elsewhere/mine.py", (str(here), digest, source))
    assert copy != str(here) and Path(copy).read_bytes() == source and Path(copy).name == "mine.py"

    spec = SeriesSpec("elsewhere/mine.py", "where", "engine", "fixed", "traced", max_depth=3)
    worker = Worker()
    try:
        ctx = TaskContext(worker, allowance=60.0, paths={spec.file: copy}, where="lane 0")
        series = series_task(ctx, spec, MeasureConfig(budget=60), {}, None)
    finally:
        worker.close()
    assert [p.depth for p in series.points] == [1, 2] and series.file == "elsewhere/mine.py"
    assert series.error and "failed in elsewhere/mine.py" in series.error and copy not in series.error
    assert series.machine is not None and series.machine.worker == "lane 0" and series.machine.cpus


@needs_dask
def test_a_task_whose_workers_all_died_is_a_lost_series() -> None:
    """Past Dask's retries (``allowed-failures``) the series is an `error` naming the lost worker; the run goes on."""
    from distributed.scheduler import KilledWorker

    from adprof.measure.dask_executor import _outcome
    from adprof.measure.executor import WorkerLost
    from adprof.measure.pool import _final_series

    class Died:
        address = "tcp://10.0.0.7:40001"

    class Future:
        def result(self, timeout: float) -> Any:
            raise KilledWorker("adprof-series_task-x", Died(), 3)

    lost = _outcome(Future(), 3)
    assert isinstance(lost, WorkerLost)
    spec = SeriesSpec("probes/chains.py", "mul", "engine", "v08", "traced", max_depth=8)
    series = _final_series(spec, lost, None)
    assert series.error == "worker lost: the Dask worker running it died, 4 times (the last: tcp://10.0.0.7:40001)"
    assert not series.points and series.chain == "mul"


def test_bad_scheduler_is_one_line(tmp_path: Path) -> None:
    for value, pattern in (("local:0", "local:N"), ("nonsense", "scheduler address")):
        run = run_adprof(["check", "probes/chains.py::mul", "--scheduler", value], cwd=REPO, timeout=60)
        assert_clean(run)
        assert run.code == 2 and pattern in run.err and len(run.err.strip().splitlines()) == 1, run.summary()
