"""Issue 39, hostile round 4, the file classes: every input path goes through one reader (a regular file, a size
cap, a schema), every output path is checked against every path that any argument names, and text leaves
adprof encodable. Each test is named after the item it covers; the ``unlisted`` ones are cases nobody listed."""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compare_helpers import report as make_report
from compare_helpers import result

import adprof
from adprof import model
from adprof.cli import main, parse_command
from adprof.cli.common import UsageError
from adprof.cli.run import shard_specs
from adprof.hunt.model import Finding, HuntReport
from adprof.hunt.run import Hunt, HuntConfig
from adprof.measure.cmd_points import CommandSettings
from adprof.measure.series import SeriesSpec
from adprof.model import Report, Shard
from adprof.render.jsonout import report_text
from adprof.util import files

ROOT = Path(adprof.__file__).resolve().parents[1]  # the checkout under test (its adprof, its docs)
SURROGATE = "bad\udcff"  # a chain name from undecodable bytes (argv, a program's JSON)


def _saved(path: Path, report: Report) -> Path:
    path.write_text(report_text(report), encoding="utf-8")
    return path


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A saved report of one linear series."""
    return _saved(tmp_path / "a.json", make_report(result("ok")))


def _adprof(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``python -m adprof ARGS`` in a child limited to 1 GiB of memory (fc6d0bb read /dev/zero until MemoryError)
    and ``timeout`` seconds (it blocked on a FIFO)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "adprof", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"adprof {' '.join(args)} still running after {timeout} s")


def _one_error_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("adprof: error:"), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


# --------------------------------------------------------------------------- 1. one reader: regular files, a cap


def test_item01_report_and_compare_refuse_dev_zero_and_a_fifo(tmp_path: Path, saved: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for args in (["report", "/dev/zero"], ["compare", str(saved), "/dev/zero"], ["report", str(fifo)]):
        done = _adprof(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert "not a regular file" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = _adprof("compare", str(fifo), str(saved), cwd=tmp_path)
    assert done.returncode == 2 and "FIFO" in done.stderr


def test_item01_a_report_past_the_size_cap_is_one_line(
    tmp_path: Path, saved: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = saved.stat().st_size + 100
    monkeypatch.setattr(files, "MAX_INPUT_BYTES", cap)
    big = _saved(tmp_path / "big.json", make_report(*(result(f"c{i}") for i in range(5))))
    assert big.stat().st_size > cap
    assert main(["report", str(big)]) == 2
    _one_error_line(capsys, "big.json", f"more than the {cap} bytes adprof reads")
    assert main(["report", str(saved)]) == 0  # a small one still reads


def test_unlisted_every_reader_of_user_files_refuses_what_is_not_a_regular_file(
    tmp_path: Path, saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cases nobody listed: a directory, a socket and /dev/null as a report, a baseline or a compared report, and a
    FIFO named like a chain file (fc6d0bb waited for the load timeout): one line each, exit 2, nothing measured."""
    sock_path = tmp_path / "s.json"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    fifo = tmp_path / "chain.py"
    os.mkfifo(fifo)
    try:
        cases = [
            (["report", str(tmp_path)], "a directory"),
            (["report", str(sock_path)], "a socket"),
            (["compare", "/dev/null", str(saved)], "a device"),
            (["guard", str(fifo), "--baseline", "/dev/null"], "a device"),
            (["check", str(fifo), "--budget", "60"], "FIFO"),
        ]
        for args, why in cases:
            assert main(args) == 2, args
            _one_error_line(capsys, why)
    finally:
        sock.close()


def test_unlisted_the_reader_reads_json_by_its_schema(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for data, why in ((b"\xff\xfe", "not UTF-8"), (b"[" * 100000, "not a JSON report"), (b'{"x": 1}', "no 'results'")):
        bad.write_bytes(data)
        with pytest.raises(files.InputFileError, match=why):
            files.read_json(bad, _schema)


def test_unlisted_a_report_with_a_byte_order_mark_reads(tmp_path: Path, saved: Path) -> None:
    """Nobody listed it: a report saved again by an editor that adds a UTF-8 byte-order mark."""
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + saved.read_bytes())
    assert main(["report", str(bom)]) == 0


def _schema(data: Any) -> Report:
    from adprof.render.jsonout import load_report

    return load_report(data)


# --------------------------------------------------------------------------- 2. a report given twice


def test_item02_the_same_report_given_twice_is_refused(
    tmp_path: Path, saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(saved)
    copy = tmp_path / "copy.json"
    copy.write_bytes(saved.read_bytes())
    for second in (saved, link, copy):
        assert main(["report", str(saved), str(second), "--json", str(tmp_path / "out.json")]) == 2, second
        _one_error_line(capsys, "give each report once")
        assert not (tmp_path / "out.json").exists()
    # two measurements of the same chain (two machines) are two results, and merge
    other = _saved(tmp_path / "b.json", make_report(result("ok", versions={"adprof": "0.9"})))
    assert main(["report", str(saved), str(other), "--json", str(tmp_path / "out.json")]) == 0
    assert len(json.loads((tmp_path / "out.json").read_text())["results"]) == 2


# --------------------------------------------------------------------------- 3. R15: a missing shard


def _shard(tmp_path: Path, k: int, positions: list[int], plan: str = "p") -> Path:
    results = [result(f"c{i}") for i in positions]
    rep = Report(results=results, shard=Shard(k, 2, 4, positions, plan))
    return _saved(tmp_path / f"s{k}.json", rep)


def test_item03_R15_a_merge_with_a_missing_shard_fails_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _shard(tmp_path, 1, [0, 2]), _shard(tmp_path, 2, [1, 3])
    assert main(["report", str(one)]) == 2
    _one_error_line(capsys, "shard 2/2 missing", "--allow-missing")
    assert main(["report", str(one), "--allow-missing", "--json", str(tmp_path / "part.json")]) == 0
    notes = json.loads((tmp_path / "part.json").read_text())["notes"]
    assert any("merged 1 of 2 shards" in n for n in notes)
    assert main(["report", str(two), str(one)]) == 0  # every shard: merged, no flag needed
    assert "--allow-missing" in (ROOT / "docs" / "scale-out.md").read_text()


def test_unlisted_a_hand_edited_shard_count_of_10_30_is_one_line(tmp_path: Path) -> None:
    """Nobody listed it: ``"count": 10**30`` in a shard record (the merge enumerated every shard: it never ended;
    run in a child limited in memory and time)."""
    rep = Report(results=[result("c0")], shard=Shard(1, 10**30, 2, [0], "p"))
    done = _adprof("report", str(_saved(tmp_path / "s.json", rep)), cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "more missing" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and len(done.stderr) < 1000


# --------------------------------------------------------------------------- 4. R16: shards of other file contents


def test_item04_R16_the_shard_plan_covers_the_chain_files_contents(tmp_path: Path) -> None:
    chain = tmp_path / "chains.py"
    chain.write_text("# version 1\n")
    specs = [
        SeriesSpec(file=str(chain), chain=f"c{i}", backend="engine", profile="v08", mode="traced", max_depth=8)
        for i in (1, 2)
    ]
    _, before = shard_specs(specs, 1, 2, "settings")
    _, again = shard_specs(specs, 2, 2, "settings")
    assert before.plan == again.plan  # two shards of one run
    chain.write_text("# version 2\n")
    _, after = shard_specs(specs, 2, 2, "settings")
    assert after.plan != before.plan  # the same names, other contents: another run


def test_unlisted_the_shard_plan_covers_a_cmd_programs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody listed it: a ``--cmd`` program edited between two shards (its script, the data its words name)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text("print(1)\n")
    (tmp_path / "data.json").write_text("{}\n")
    cmd = CommandSettings(template="sh -c 'python prog.py --data=data.json {depth}'")
    specs = [SeriesSpec(file=None, chain="prog", backend="cmd", profile=None, mode="traced", max_depth=8, cmd=cmd)]
    plans = []
    for edit in ("", "prog.py", "data.json"):
        if edit:
            (tmp_path / edit).write_text("changed\n")
        plans.append(shard_specs(specs, 1, 1)[1].plan)
    assert len(set(plans)) == 3


# --------------------------------------------------------------------------- 5-7. the output guard


def _refused(argv: list[str], *words: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_command(argv)
    for w in words:
        assert w in str(info.value), info.value


def test_item05_R11_an_output_over_a_cmd_input_named_by_opt_equals_or_inside_sh_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text("")
    (tmp_path / "in.json").write_text("{}")
    for template in (
        "python prog.py --data=in.json {depth}",
        "sh -c 'python prog.py --data in.json {depth}'",
        "sh -c 'python prog.py --data=in.json {depth}'",
    ):
        _refused(["check", "--cmd", template, "--json", "in.json"], "--json in.json", "input of this run")
    assert (tmp_path / "in.json").read_text() == "{}"


def test_item06_guard_never_overwrites_its_baseline(tmp_path: Path, saved: Path) -> None:
    _refused(["guard", "x.py", "--baseline", str(saved), "--json", str(saved)], "input of this run")
    link = tmp_path / "link.json"
    link.symlink_to(saved)
    _refused(["guard", "x.py", "--baseline", str(saved), "--markdown", str(link)], "input of this run")


def _fake_hunt(monkeypatch: pytest.MonkeyPatch, write: bool = False) -> list[Hunt]:
    """``Hunt.run`` replaced by one that measures nothing (``write``: it writes one finding's file, as a hunt does
    on confirming one); the hunts that ran are listed."""
    ran: list[Hunt] = []

    def run(self: Hunt) -> HuntReport:
        ran.append(self)
        self.report.stats.evaluations += 1  # it measured something: a hunt that evaluated nothing is exit 2
        if write:
            f = _finding(self, self._next_number())
            self._write_file(f)
            self.report.findings.append(f)
        return self.report

    monkeypatch.setattr(Hunt, "run", run)
    return ran


def _finding(hunt: Hunt, n: int) -> Finding:
    return Finding(
        id=n,
        file=str(hunt.cfg.out / f"{n:04d}_v08_traced.py"),
        chain=f"finding_{n:04d}",
        target="engine/v08 traced",
        backend="engine",
        profile="v08",
        mode="traced",
        verdict=model.EXPONENTIAL_TRANSFORM,
        figure="x2.00/layer",
        decided_by="counters",
        axis="layer",
        summary="y = x * x",
        generator={},
        uses=2,
        predicted_base=2.0,
        component="counters:transform+drop",
        search_figure="x2.00/layer",
        reproduce="adprof check ...",
        source="# a chain\n",
    )


HUNT = ["hunt", "--backend", "engine", "--profile", "v08", "--mode", "traced", "--jobs", "1", "--budget", "30"]


def test_item07_hunt_json_never_replaces_a_finding_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _fake_hunt(monkeypatch)
    out = tmp_path / "found"
    out.mkdir()
    (out / "0001_v08_traced.py").write_text("# finding 1\n")
    for report in ("0001_v08_traced.py", "0002_v08_traced.py", "12345_jax_traced.py"):
        assert main([*HUNT, "--out", str(out), "--json", str(out / report)]) == 2
        _one_error_line(capsys, "--out", "findings")
    assert not ran and (out / "0001_v08_traced.py").read_text() == "# finding 1\n"
    assert main([*HUNT, "--out", str(out), "--json", str(out / "report.json")]) == 0  # another name: fine
    assert ran


def test_unlisted_no_output_overwrites_any_path_an_argument_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cases nobody listed: the pyproject.toml a guard reads its limits from, a hard link to a file named inside a
    shell command inside a shell command, a colon list (``PYTHONPATH=a:b``), ``-oPATH``, a file a ``python -c``
    program opens, flame's ``-o`` over a program's input, and report's own files through ``--opt=PATH``."""
    monkeypatch.chdir(tmp_path)
    for name in ("pyproject.toml", "prog.py", "cfg.json", "lib.json", "o.json", "a.json"):
        (tmp_path / name).write_text("{}")
    _saved(tmp_path / "a.json", make_report(result("ok")))
    os.link(tmp_path / "cfg.json", tmp_path / "hard.md")
    _refused(["guard", "x.py", "--json", "pyproject.toml"], "input of this run")
    nested = "bash -c \"sh -c 'python prog.py --config=cfg.json {depth}'\""
    _refused(["check", "--cmd", nested, "--markdown", "hard.md"], "input of this run")
    _refused(["check", "--cmd", "env PYTHONPATH=x:lib.json python prog.py {depth}", "--json", "lib.json"], "input")
    _refused(["guard", "--cmd", "prog -oo.json {depth}", "--markdown", "o.json"], "input of this run")
    _refused(["report", "a.json", "--json=a.json"], "input of this run")
    python_c = "python3 -c 'import sys; data = open(\"cfg.json\").read()' {depth}"
    _refused(["guard", "--cmd", python_c, "--json", "cfg.json"], "input of this run")
    assert main(["flame", "--cmd", "python prog.py --config=cfg.json {depth}", "--depth", "2", "-o", "cfg.json"]) == 2
    assert (tmp_path / "cfg.json").read_text() == "{}"


# --------------------------------------------------------------------------- 8-9. hunt's finding files


def _hunt(out: Path, tmp_path: Path) -> Hunt:
    return Hunt(HuntConfig(targets=[], seed=0, budget=1.0, out=out, workdir=tmp_path), executor=None)  # type: ignore[arg-type]


def test_item08_findings_are_numbered_past_names_of_any_width(tmp_path: Path) -> None:
    out = tmp_path / "found"
    out.mkdir()
    (out / "9999_v08_traced.py").write_text("")
    assert _hunt(out, tmp_path)._next_number() == 10000
    (out / "10000_v08_traced.py").write_text("")
    (out / "notes_v08.py").write_text("")  # not a finding's name
    assert _hunt(out, tmp_path)._next_number() == 10001


def test_item09_out_is_checked_before_the_hunt_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = _fake_hunt(monkeypatch)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert main([*HUNT, "--out", str(dangling)]) == 2
    _one_error_line(capsys, "--out", "link to nothing")
    ro = tmp_path / "ro"
    ro.mkdir()

    def denied(*args: Any, **kw: Any) -> Any:  # a read-only folder (the tests may run as root)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("adprof.cli.hunt.tempfile.mkstemp", denied)
    assert main([*HUNT, "--out", str(ro)]) == 2
    _one_error_line(capsys, "--out", "Permission denied")
    assert not ran


def test_item09_a_finding_file_that_cannot_be_written_keeps_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_hunt(monkeypatch, write=True)

    def full(path: Any, data: Any, encoding: str = "utf-8") -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("adprof.hunt.run.write_atomic", full)
    out, report = tmp_path / "found", tmp_path / "hunt.json"
    assert main([*HUNT, "--out", str(out), "--json", str(report)]) == 2
    data = json.loads(report.read_text())
    assert [f["write_error"] for f in data["findings"]] == ["No space left on device"]
    assert data["findings"][0]["source"] == "# a chain\n"  # the finding is in the report whole
    assert "cannot write" in capsys.readouterr().err


# --------------------------------------------------------------------------- 10. unencodable text, every format


def test_item10_a_lone_surrogate_in_a_chain_name_on_every_output_format(
    tmp_path: Path, saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    bad = _saved(
        tmp_path / "bad.json",
        make_report(result("ok"), result(SURROGATE, kind=model.EXPONENTIAL_TRANSFORM, rate=2.0, interval=(1.9, 2.1))),
    )
    outs = {s: tmp_path / f"r{s}" for s in (".html", ".png", ".svg", ".md", ".json")}
    for option, suffix in (("--html", ".html"), ("--plot", ".png"), ("--plot", ".svg"), ("--markdown", ".md")):
        assert main(["report", str(bad), option, str(outs[suffix])]) == 1, option
        assert outs[suffix].stat().st_size > 0
    assert main(["report", str(bad), "--json", str(outs[".json"])]) == 1
    assert json.loads(outs[".json"].read_text())["results"][1]["chain"] == SURROGATE
    assert "bad\\udcff" in outs[".md"].read_text(encoding="utf-8")  # escaped, valid UTF-8
    for option, suffix in (("--markdown", ".md"), ("--html", ".html"), ("--json", ".json")):
        path = tmp_path / f"c{suffix}"
        assert main(["compare", str(saved), str(bad), option, str(path)]) == 0, option
        path.read_text(encoding="utf-8")
    for option in ("--markdown", "--json"):
        capsys.readouterr()
        assert main(["compare", str(saved), str(bad), option, "-"]) == 0
        assert "udcff" in capsys.readouterr().out


def test_item10_guard_markdown_and_junit_with_a_lone_surrogate(tmp_path: Path) -> None:
    from adprof.cli.guard import _write_guard_outputs
    from adprof.guard import GuardLimits, guard_checks
    from adprof.render.console import SafeConsole

    rep = make_report(result(SURROGATE, kind=model.EXPONENTIAL_TRANSFORM, rate=2.0, interval=(1.9, 2.1)))
    guard = guard_checks(rep, GuardLimits())
    args = argparse.Namespace(junit=str(tmp_path / "g.xml"), markdown=str(tmp_path / "g.md"))
    assert _write_guard_outputs(guard, rep, 0, args, SafeConsole(stderr=True))
    assert "bad\\udcff" in (tmp_path / "g.md").read_text(encoding="utf-8")
    (tmp_path / "g.xml").read_text(encoding="utf-8")


def test_unlisted_a_stream_that_cannot_encode_gets_escapes() -> None:
    """Nobody listed it: ``--json -`` into an ASCII stream (LANG=C) with a name outside ASCII and a surrogate."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    files.write_stream(stream, f"café {SURROGATE}\n")
    assert raw.getvalue() == b"caf\\xe9 bad\\udcff\n"
