"""Issue 20, the hostile-input cases that are not about processes or signals: N3, N6, N13, N14, N15, N19, N21,
guard's timings and the minor items. Each test names its case; the CLI ones run adprof as a user does
(in-process through ``adprof.cli.main`` where nothing but the argument handling is at stake, else as a
subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import assert_clean, load_json, rows, run_adprof

from adprof.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
MISBEHAVE = REPO / "tests" / "cmds" / "misbehave.py"
PROBE = Path(os.environ.get("ADPROF_NATIVE_PROBE", REPO / "examples/native/target/release/adprof-native-probe"))
FAST = ["--profile", "fixed", "--mode", "traced", "--no-color", "--no-structure"]
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
needs_probe = pytest.mark.skipif(not PROBE.is_file(), reason="native probe not built (examples/native/build.sh)")

HEALTHY = "    y = x\n    for _ in range(depth):\n        y = xp.sin(y)\n    return xp.sum(y)\n"


def chain_file(path: Path, name: str, body: str = "", decorator: str = "input_shape=(3,), depths=(1, 2, 3)") -> Path:
    path.write_text(
        f"import os\nimport adprof\n\n\n@adprof.chain({decorator})\ndef {name}(xp, x, depth):\n{body}{HEALTHY}"
    )
    return path


def misbehave(behaviour: str) -> str:
    return f"{sys.executable} {MISBEHAVE} {behaviour} {{depth}}"


# --------------------------------------------------------------------------- one run, several cases


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory):
    """One `adprof check` (a single worker) over chains that misbehave in different ways; each test below reads
    its own case from it: N3 (a chain's chdir), N21 (escape sequences in a message), a BaseException subclass."""
    tmp = tmp_path_factory.mktemp("hostile")
    chain_file(tmp / "chdir.py", "wanders", "    os.chdir('/')\n")
    chain_file(tmp / "pwn.py", "pwn", "    raise ValueError('\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m done')\n")
    (tmp / "base.py").write_text(
        "import adprof\n\n\nclass Boom(BaseException):\n    pass\n\n\n"
        "@adprof.chain(input_shape=(3,), depths=(1, 2))\ndef boom(xp, x, depth):\n    raise Boom('went off')\n"
    )
    chain_file(tmp / "other_rel.py", "damped")
    out = tmp / "r.json"
    targets = ["chdir.py", "pwn.py", "base.py", "other_rel.py::damped"]
    args = ["check", *targets, *FAST, "--jobs", "1", "--budget", "40", "--json", str(out)]
    run = run_adprof(args, tmp, timeout=120)
    assert_clean(run)
    return run, load_json(out)


def test_a_chains_chdir_does_not_move_the_next_target(hostile_run) -> None:
    """N3: chain A does os.chdir('/'); the next targets, given relative to the cwd, still load and run
    (main: `damped`: error "no such file: other_rel.py")."""
    run, report = hostile_run
    for name in ("wanders", "damped"):
        (row,) = rows(report, name)
        assert not row["error"] and row["points"], (name, row["error"], run.summary())


# --------------------------------------------------------------------------- N6: unknown protocol keys


def test_unknown_protocol_keys_are_named() -> None:
    """N6 (in-process): a misspelt key is kept by name, with the known key it most likely meant."""
    from adprof.backends.cmd import apply_protocol
    from adprof.cli.run import protocol_notes
    from adprof.model import Point, Series

    pt = Point(depth=1)
    assert not apply_protocol(pt, {"transfrom_seconds": 0.1, "colour": "blue"}, "traced")
    assert pt.extra["unknown_keys"] == ["transfrom_seconds", "colour"]
    (note,) = protocol_notes([Series(chain="prog", backend="cmd", profile=None, mode="traced", points=[pt])])
    assert "'transfrom_seconds' (did you mean 'transform_seconds'?)" in note and "'colour'" in note


def test_unknown_protocol_keys_are_warned_about_by_default(tmp_path: Path, capsys) -> None:
    """N6 end to end: the note is printed without --verbose, and kept in the JSON."""
    out = tmp_path / "r.json"
    code = main(["check", "--cmd", misbehave("typo"), "--depths", "1,2,3", "--no-color", "--json", str(out)])
    text = capsys.readouterr().out
    assert code in (0, 1) and "did you mean 'transform_seconds'" in text, text
    assert any("transfrom_seconds" in n for n in load_json(out)["notes"])


# --------------------------------------------------------------------------- N13: the C locale


def test_c_locale_prints_a_unicode_chain_name(tmp_path: Path) -> None:
    """N13: LANG=C LC_ALL=C PYTHONUTF8=0 and a chain named café_ünï: the table, exit 0 (main: exit 3)."""
    chain_file(tmp_path / "uni.py", "café_ünï")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.update(LANG="C", LC_ALL="C", PYTHONUTF8="0", PYTHONPATH=str(REPO), COLUMNS="200")
    p = subprocess.run(
        [sys.executable, "-P", "-m", "adprof", "check", "uni.py", *FAST, "--budget", "30"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=90,
    )
    text = (p.stdout + p.stderr).decode("ascii", "replace")
    assert p.returncode == 0, text
    assert "adprof summary" in text and "internal error" not in text
    assert "caf\\xe9_\\xfcn\\xef" in text  # readable, escaped


# --------------------------------------------------------------------------- N14, minor: flame's option ranges


@pytest.mark.parametrize(
    ("option", "why"),
    [(["--seconds", "1e9"], "--seconds"), (["--seconds", "nan"], "--seconds"), (["--top", "-3"], "--top")],
)
def test_flame_options_out_of_range_are_bad_input(capsys, option: list[str], why: str) -> None:
    """N14: --seconds 1e9 gave an OverflowError traceback; --top -3 listed all but 3: now one line, exit 2."""
    code = main(["flame", f"{REPO}/probes/chains.py::linear", "--depth", "4", *option])
    err = capsys.readouterr().err
    assert code == 2 and why in err and "Traceback" not in err, err
    code = main(["flame", "--cmd", "true {depth}", "--depth", "4", *option])
    err = capsys.readouterr().err
    assert code == 2 and why in err, err


# --------------------------------------------------------------------------- N15, minor: the pytest plugin's settings


def test_bad_guard_settings_in_a_test_are_one_line(pytester: pytest.Pytester) -> None:
    """N15: @pytest.mark.adprof_guard(max_base="abc") gave a raw ValueError traceback; mode="sideways" read as a
    limit exceeded. Both: the test fails with one usage line, nothing measured."""
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.adprof_guard(max_base="abc")
        def test_bad_limit(adprof_guard):
            adprof_guard.scaling("{REPO}/probes/chains.py::linear", mode="traced")

        def test_bad_mode(adprof_guard):
            adprof_guard.scaling("{REPO}/probes/chains.py::linear", mode="sideways")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert "adprof guard: max_base: expected a positive number, got 'abc'" in text
    assert "adprof guard: unknown mode 'sideways'" in text
    assert "ValueError" not in text and "scaling limit exceeded" not in text and "Traceback" not in text


# --------------------------------------------------------------------------- N19: a flood on the worker's stderr


def test_a_stderr_flood_is_kept_bounded(tmp_path: Path) -> None:
    """N19: a chain writing 64 MB to stderr in one point: measured, and adprof keeps 64 kB of it (main: a temp
    file of the whole size)."""
    from adprof.measure import Worker

    chain_file(
        tmp_path / "loud.py",
        "loud",
        "    import sys\n    for _ in range(256):\n        sys.stderr.write('x' * (1 << 18))\n",
        decorator="input_shape=(3,), depths=(1,)",
    )
    w = Worker()
    try:
        req = {"op": "point", "file": str(tmp_path / "loud.py"), "chain": "loud", "backend": "engine"}
        ans = w.request({**req, "profile": "fixed", "mode": "traced", "depth": 1}, timeout=60)
        assert ans["ok"], ans
        sink = w._err
        assert sink is not None
        sink.settle(1.0)
        assert sink.total >= 64 << 20 and len(sink.tail) <= 2 * sink.keep
        assert w.stderr_text().endswith("x")
    finally:
        w.close()


# --------------------------------------------------------------------------- N21: escape sequences


ESCAPES = ("\x1b", "\x07", "\x9b")


def test_a_chains_escape_sequences_are_escaped(hostile_run) -> None:
    """N21: ValueError("\\x1b]0;PWNED\\x07\\x1b[2J") from a chain: shown as text, never sent (set-title, clear)."""
    run, report = hostile_run
    (row,) = rows(report, "pwn")
    assert "\x1b" in row["error"]  # the JSON keeps the message as it was (escaped by JSON itself)
    assert not [c for c in ESCAPES if c in run.text], run.summary()
    assert "\\x1b]0;PWNED\\x07" in run.text


@pytest.mark.slow
def test_a_programs_binary_output_is_escaped(tmp_path: Path) -> None:
    """N21 for --cmd: binary stdout and ESC on stderr of a failing program reach the terminal escaped."""
    run = run_adprof(["check", "--cmd", misbehave("escape"), "--budget", "10", "-v"], tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 1 and not [c for c in ESCAPES if c in run.text], run.summary()
    assert "\\x1b]0;PWNED-ERR" in run.text


def test_terminal_safe_text() -> None:
    from adprof.util.text import terminal_safe

    assert terminal_safe("a\x1b[2Jb\tc\nd\x07\u202e") == "a\\x1b[2Jb\tc\nd\\x07\\u202e"
    assert terminal_safe("plain [x] café") == "plain [x] café"


# --------------------------------------------------------------------------- guard's timings


def test_guards_defaults_agree_with_its_help_and_catch_a_hang_within_a_minute() -> None:
    """`guard --help` said budget "(default 60)" while 600 was used; a hang took 4 x 60 = 240 s to catch."""
    from adprof.measure import MeasureConfig

    parser = build_parser()
    args = parser.parse_args(["guard", "x.py"])
    guard = parser._subparsers._group_actions[0].choices["guard"]  # type: ignore[union-attr]
    helps = {a.dest: a.help for a in guard._actions}
    assert f"(default {args.budget:g})" in helps["budget"] and f"(default {args.cap:g})" in helps["cap"]
    assert MeasureConfig(cap=args.cap, budget=args.budget).timeout <= 60


# --------------------------------------------------------------------------- minor items


def test_a_narrow_console_keeps_the_verdict() -> None:
    """COLUMNS=1 hid the verdict: the console is at least 80 columns wide."""
    import io

    from adprof.model import Result, Series, Verdict
    from adprof.render.console import SafeConsole, render_report
    from adprof.report import build_report

    report = build_report([Series(chain="mul", backend="engine", profile="fixed", mode="traced")], {})
    buf = io.StringIO()
    render_report(report, SafeConsole(file=buf, width=1, color_system=None))
    assert report.results[0].verdict.kind in buf.getvalue()
    assert isinstance(report.results[0], Result) and isinstance(report.results[0].verdict, Verdict)


def test_a_script_without_a_shebang_is_bad_input(tmp_path: Path, capsys) -> None:
    """A --cmd script without #! was an error row; it is bad input (exit 2), as "not executable" is."""
    script = tmp_path / "noshebang.sh"
    script.write_text("echo '{}'\n")
    script.chmod(0o755)
    code = main(["check", "--cmd", f"{script} {{depth}}", "--budget", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "#! line" in err, err


def test_a_failing_input_names_the_chain_and_the_file(tmp_path: Path) -> None:
    """@chain(input=lambda: 1/0) said only "ZeroDivisionError"."""
    from adprof.chain import ChainError, load_chains

    f = chain_file(tmp_path / "inp.py", "zero", decorator="input=lambda: 1/0, depths=(1, 2)")
    (ch,) = load_chains(f)
    with pytest.raises(ChainError, match=r"chain 'zero' in .*inp\.py: its input\(\) raised ZeroDivisionError"):
        ch.make_input()


def test_a_tiny_cap_is_refused(capsys) -> None:
    """--cap 1e-9 said the chain hangs; a cap under 1 ms is bad input."""
    with pytest.raises(SystemExit) as info:
        main(["check", f"{REPO}/probes/chains.py", "--cap", "1e-9"])
    assert info.value.code == 2 and "too small" in capsys.readouterr().err
    from adprof.measure import MeasureConfig

    assert MeasureConfig(cap=0.001).timeout >= 0.25  # the smallest cap: no scheduling hiccup is a hang


def test_a_time_no_process_could_report_is_refused() -> None:
    """transform_seconds 1e300 from a 50 ms process was accepted."""
    from adprof.backends.cmd import CommandFailure, run_command_point

    with pytest.raises(CommandFailure, match="not a time it measured") as info:
        run_command_point(misbehave("huge"), 1, "traced", timeout=10)
    assert info.value.kind == "malformed"


def test_an_integer_input_dtype_is_refused() -> None:
    """@chain(dtype='int8'): traced said error, eager linear; it is refused when the chain is declared."""
    import adprof
    from adprof.chain import ChainError

    with pytest.raises(ChainError, match="not a floating-point type"):
        adprof.chain(input_shape=(3,), dtype="int8")(lambda xp, x, depth: xp.sum(x))


def test_duplicates_are_measured_once() -> None:
    """Duplicate targets, profiles or modes were measured twice."""
    from adprof.measure.plan import plan_series

    meta = {"file": str(REPO / "probes/chains.py"), "name": "mul", "modes": ["traced", "eager"], "depths": [1, 2]}
    specs = plan_series([meta, dict(meta)], ["engine", "engine"], "fixed,fixed", "traced,traced", [])
    assert [(s.chain, s.profile, s.mode) for s in specs] == [("mul", "fixed", "traced")]


def test_no_empty_parentheses_in_decided_by() -> None:
    """ "(deterministic: )" appeared when the fit had no interval method."""
    from adprof.analysis.evidence import decided_by
    from adprof.model import Fit, Series

    fit = Fit(metric="counters: key_comparisons", kind="linear")
    fit.source = "counters"
    line = decided_by(fit, Series(chain="c", backend="engine", profile="fixed", mode="traced"), "counters")
    assert "()" not in line and ": )" not in line and line.endswith("(deterministic)")


def test_a_base_exception_is_named_without_the_internal_module(hostile_run) -> None:
    """A BaseException subclass showed `_adprof_chains_…` (the loader's module name) in its message."""
    run, report = hostile_run
    (row,) = rows(report, "boom")
    assert "Boom" in row["error"] and "went off" in row["error"], row["error"]
    assert "_adprof_chains" not in run.text, run.summary()


def test_one_name_from_two_files_gets_a_file_column() -> None:
    """The summary table showed two rows with the same chain name and no file column."""
    import io

    from adprof.model import Series
    from adprof.render.console import SafeConsole, summary_table
    from adprof.report import build_report

    series = [
        Series(chain="bad", backend="engine", profile="fixed", mode="traced", file="a/dup.py"),
        Series(chain="bad", backend="engine", profile="fixed", mode="traced", file="b/dup.py"),
    ]
    buf = io.StringIO()
    SafeConsole(file=buf, width=200, color_system=None).print(summary_table(build_report(series, {})))
    text = buf.getvalue()
    assert "file" in text and "a/dup.py" in text and "b/dup.py" in text, text


@needs_valgrind
def test_flame_cmd_on_a_crashing_program_names_it(tmp_path: Path, capsys) -> None:
    """flame --cmd on a crashing program exited 2 with valgrind's line; now: exit 1, the program named."""
    prog = tmp_path / "crash.sh"
    prog.write_text("#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n")
    prog.chmod(0o755)
    code = main(["flame", "--cmd", f"{prog} {{depth}}", "--depth", "2", "-o", str(tmp_path / "f.svg")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "crash.sh was killed by signal" in err and "about to crash" in err and "==" not in err, err


@pytest.mark.slow
@needs_valgrind
@needs_probe
def test_flame_phase_matching_nothing_is_refused(tmp_path: Path, capsys) -> None:
    """flame --phase with a pattern that matches nothing said "0 instructions counted", exit 0."""
    code = main(
        ["flame", "--cmd", f"{PROBE} mul {{depth}}", "--depth", "3", "--phase", "transform=*nomatch*"]
        + ["-o", str(tmp_path / "f.svg")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no instructions inside functions matching" in err, err
    assert not (tmp_path / "f.svg").exists()


def test_json_protocol_of_the_fuzz_programs() -> None:
    """The misbehaving program's protocol line parses (the fuzz and the fault suite rely on it)."""
    out = subprocess.run(
        [sys.executable, str(MISBEHAVE), "typo", "3"], capture_output=True, text=True, timeout=30
    ).stdout
    assert json.loads(out.splitlines()[-1])["colour"] == "blue"


# --------------------------------------------------------------------------- flame imports in a worker


def test_flame_loads_the_chain_file_in_a_subprocess_under_a_timeout(tmp_path: Path, capsys, monkeypatch) -> None:
    """`adprof flame` imported the chain file in its own process, with no timeout: an import that hangs hung
    adprof. Now the file is loaded in a subprocess, killed past the load timeout (one line, exit 2)."""
    import time

    import adprof.flame.command as flame_command

    (tmp_path / "where.py").write_text(
        f"import os\nopen({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n" + "import adprof\n\n\n"
        "@adprof.chain(input_shape=(3,))\ndef c(xp, x, depth):\n    return xp.sum(x)\n"
    )
    code = main(["flame", f"{tmp_path / 'where.py'}::nope", "--depth", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "no chain or function named 'nope'" in err, err
    assert int((tmp_path / "pid").read_text()) != os.getpid(), "the chain file was imported by adprof itself"

    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(120)\n")
    monkeypatch.setattr(flame_command, "LOAD_TIMEOUT", 1.0)
    t0 = time.monotonic()
    code = main(["flame", f"{tmp_path / 'hangs.py'}::c", "--depth", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "did not finish within 1 s" in err, err
    assert time.monotonic() - t0 < 15
