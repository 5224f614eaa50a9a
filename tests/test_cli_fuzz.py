"""Property-based fuzz of the CLI (slow): hypothesis draws option values and chain files from a small
grammar of good and bad constructs, runs ``python -P -m adprof`` as a user does, and asserts: no traceback, no
internal error, an exit code from the documented set *for that case*, a bounded wall time, valid JSON when asked
for, and no process left behind.

``ADPROF_FUZZ_EXAMPLES`` sets the number of cases (default 300); ``ADPROF_FUZZ_SHRINK=0`` skips shrinking.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fault_helpers import TRACEBACK, describe, kill_tagged, leftovers, scaled_budget, slack, start_adprof
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("ADPROF_FUZZ_EXAMPLES", "300"))
#: ADPROF_FUZZ_SHRINK=0 reports the first failing case as drawn (each shrink step is a whole adprof run).
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + (
    [] if os.environ.get("ADPROF_FUZZ_SHRINK", "1") == "0" else [Phase.shrink]
)

# --------------------------------------------------------------------------- chain grammar

HEALTHY = "y = x\nfor _ in range(depth):\n    y = xp.sin(y)\nreturn xp.sum(y)"

#: construct -> (body, fails): ``fails`` says the chain is a finding when the construct runs (exit 1).
CONSTRUCTS: dict[str, tuple[str, bool]] = {
    "ok": ("pass", False),
    "raise": ('raise ValueError("boom at depth %d" % depth)', True),
    "raise_markup": ('raise FileNotFoundError("could not load [/data/w.npy] [bold]x[/] [")', True),
    "hang": ("while True:\n    pass", True),
    "sleep_hang": ("time.sleep(3600)", True),
    "sys_exit": ("sys.exit(3)", True),
    "os_exit": ("os._exit(7)", True),
    "segv": ("os.kill(os.getpid(), signal.SIGSEGV)", True),
    "recursion": ("def _r(n):\n    return _r(n + 1)\n_r(0)", True),
    "print_flood": ('for _ in range(200):\n    print("[x] " * 500)\n    print("[/]" * 500, file=sys.stderr)', False),
    "patch_clock": ("time.perf_counter = lambda: 0.0", False),
    "child_sleep": ('subprocess.Popen(["sleep", "30"])', False),
    "return_str": ('return "abc"', True),
    "return_none": ("return None", True),
    "return_vector": ("return xp.sin(x)", True),
    "return_nan": ("return xp.sum(xp.log(x * 0.0 - 1.0))", True),
    "return_list": ("return [1.0]", True),
}

#: decorator argument sets -> valid?
DECORATORS: dict[str, tuple[str, bool]] = {
    "plain": ("input_shape=(3,), depths=(1, 2, 3, 4)", True),
    "matrix": ("input_shape=(2, 2), reuse=1, depths=(1, 2, 3, 4, 5, 6)", True),
    "sweep": ('input_shape=(3,), depths=(1, 2, 3), sweep={"k": [1, 2]}', True),
    "bad_shape": ('input_shape="abc", depths=(1, 2)', False),
    "bad_depths": ("input_shape=(3,), depths=(0, -1)", False),
    "bad_reuse": ('input_shape=(3,), reuse="nope", depths=(1, 2)', False),
}

DOCS = ['"""y <- sin(y)."""', '"""Loads [bold]w[/bold] from [/data] and [/]."""', '"""' + "[" * 50 + '"""', ""]


@dataclass
class ChainCase:
    construct: str
    guarded: bool  # run the construct only from depth 2 on
    decorator: str
    doc: str

    def source(self, name: str) -> str:
        body, _ = CONSTRUCTS[self.construct]
        if self.guarded:
            body = "if depth >= 2:\n" + textwrap.indent(body, "    ")
        sweep = "sweep" in self.decorator
        sig = "xp, x, depth, k" if sweep else "xp, x, depth"
        lines = [f"@adprof.chain({DECORATORS[self.decorator][0]})", f"def {name}({sig}):"]
        if self.doc:
            lines.append("    " + self.doc)
        lines.append(textwrap.indent(body, "    "))
        lines.append(textwrap.indent(HEALTHY, "    "))
        return "\n".join(lines) + "\n"


chain_cases = st.builds(
    ChainCase,
    construct=st.sampled_from(sorted(CONSTRUCTS)),
    guarded=st.booleans(),
    decorator=st.one_of(
        st.sampled_from([k for k, (_, ok) in DECORATORS.items() if ok]),
        st.sampled_from(sorted(DECORATORS)),
    ),
    doc=st.sampled_from(DOCS),
)

PRELUDE = "import os\nimport signal\nimport subprocess\nimport sys\nimport time\n\nimport adprof\n\n\n"

# --------------------------------------------------------------------------- option grammar
# value -> valid? (None: option left out)

CAPS = {"0.2": True, "0.5": True, "1e9": True, "0": False, "-1": False, "nan": False, "abc": False}
BUDGETS = {"3": True, "4": True, "0": False, "-2": False, "inf": False, "x": False}
CALLS = {None: True, "2": True, "6": True, "1000000": True, "1": False, "0": False, "-5": False, "abc": False}
BACKENDS = {None: True, "engine": True, "": False, "nope": False, "numpy": False}
MODES = {None: True, "traced": True, "eager": True, "bogus": False, "": False}
PROFILES = {None: True, "fixed": True, "v08": True, "v08,fixed": True, "bogus": False, "": False}
DEPTHS = {None: True, "1,2": True, "1,2,3,4": True, "1,2,100000000": True, "0": False, "-1,2": False, "abc": False}
JOBS = {None: True, "1": True, "2": True, "0": False, "-1": False}
JSONS = {None: True, "r.json": True, "-": True, "/proc/x.json": False, "missing/x.json": False, ".": False}


@dataclass
class Case:
    command: str
    chains: list[ChainCase]
    cap: str
    budget: str
    calls: str | None
    backend: str | None
    mode: str | None
    profile: str | None
    depths: str | None
    jobs: str | None
    json_out: str | None
    no_structure: bool
    signal_after: float | None
    sig: int

    def options_valid(self) -> bool:
        ok = all(
            [
                CAPS[self.cap],
                BUDGETS[self.budget],
                CALLS[self.calls],
                BACKENDS[self.backend],
                MODES[self.mode],
                PROFILES[self.profile],
                DEPTHS[self.depths] or self.command == "halve",  # halve takes no --depths (not passed)
                JOBS[self.jobs],
                JSONS[self.json_out],
            ]
        )
        if self.command in ("ratio", "halve") and "sweep" in self.chains[0].decorator:
            ok = False  # FILE::c0 names a sweep, not one chain: bad input naming the variants
        return ok and all(DECORATORS[c.decorator][1] for c in self.chains)

    def first_chain_fails(self) -> bool:
        """c0 fails for sure: a failing construct that runs at depth 1 (or at 2 when 2 is always measured)."""
        c = self.chains[0]
        if not CONSTRUCTS[c.construct][1]:
            return False
        if not c.guarded:
            return True
        return self.depths in (None, "1,2", "1,2,3,4", "1,2,100000000")  # depth 2 is measured

    def args(self, file: Path) -> list[str]:
        target = str(file) + ("::c0" if self.command in ("ratio", "halve") else "")
        args = [self.command, target, "--cap", self.cap, "--budget", self.budget, "--no-color"]
        for flag, value in [
            ("--calls", self.calls),
            ("--backend", self.backend),
            ("--mode", self.mode),
            ("--profile", self.profile),
            ("--jobs", self.jobs),
            ("--json", self.json_out),
        ]:
            if value is not None:
                args += [flag, value]
        if self.depths is not None and self.command != "halve":
            args += ["--depths", self.depths]
        if self.command == "halve":
            args += ["--depth", "4"]
        if self.no_structure and self.command == "check":
            args.append("--no-structure")
        return args

    def bound(self) -> float:
        """Seconds the run may take: budget + one cap (the budget wins over a larger cap) + slack."""
        if not self.options_valid():
            return scaled_budget(20.0)  # bad input is rejected before measuring (or after one load of the file)
        budget, cap = float(self.budget), float(self.cap)
        return budget + min(cap, budget) + slack()


FIELDS = {
    "cap": CAPS,
    "budget": BUDGETS,
    "calls": CALLS,
    "backend": BACKENDS,
    "mode": MODES,
    "profile": PROFILES,
    "depths": DEPTHS,
    "jobs": JOBS,
    "json_out": JSONS,
}


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """All options valid, then (half of the time) one of them replaced by a bad value: a case with many bad
    options at once only ever tests the first check."""
    values = {name: draw(st.sampled_from([v for v, ok in table.items() if ok])) for name, table in FIELDS.items()}
    if draw(st.booleans()):
        name = draw(st.sampled_from(sorted(FIELDS)))
        values[name] = draw(st.sampled_from([v for v, ok in FIELDS[name].items() if not ok]))
    return Case(
        command=draw(st.sampled_from(["check", "check", "check", "guard", "ratio", "halve"])),
        chains=draw(st.lists(chain_cases, min_size=1, max_size=3)),
        no_structure=draw(st.booleans()),
        signal_after=draw(st.one_of(st.none(), st.none(), st.none(), st.sampled_from([1.5, 3.0]))),
        sig=draw(st.sampled_from([signal.SIGTERM, signal.SIGINT])),
        **values,
    )


def _run_case(case: Case, work: Path) -> tuple[int | None, str, str, float, list[str], str | None]:
    file = work / "fuzz_chains.py"
    file.write_text(PRELUDE + "\n\n".join(c.source(f"c{i}") for i, c in enumerate(case.chains)))
    t0 = time.monotonic()
    proc, tag = start_adprof(case.args(file), work, None)
    try:
        try:
            if case.signal_after is not None:
                try:
                    o, e = proc.communicate(timeout=case.signal_after)
                except subprocess.TimeoutExpired:
                    if case.sig == signal.SIGINT:
                        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
                    else:
                        os.kill(proc.pid, signal.SIGTERM)
                    o, e = proc.communicate(timeout=15)
            else:
                o, e = proc.communicate(timeout=case.bound() + 15)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            kill_tagged(tag)
            proc.kill()
            o, e = proc.communicate()
            code = None
        wall = time.monotonic() - t0
        left = describe(leftovers(tag, 3.0))
    finally:
        kill_tagged(tag)
    report = work / "r.json"
    return code, o, e, wall, left, report.read_text() if report.is_file() else None


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    phases=PHASES,
)
@given(case=cases())
def test_cli_fuzz(case: Case) -> None:
    work = Path(tempfile.mkdtemp(prefix="adprof-fuzz-"))
    try:
        code, out, err, wall, left, json_file = _run_case(case, work)
        src = (work / "fuzz_chains.py").read_text()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = f"case {case}\nexit {code}, {wall:.1f} s, left {left}\nchains:\n{src}\nstderr tail:\n{err[-1500:]}"
    assert code is not None, f"no end within the bound\n{what}"
    assert TRACEBACK not in out + err, f"traceback\n{what}"
    assert "internal error" not in out + err, f"internal error\n{what}"
    assert not left, f"processes left behind\n{what}"
    signalled = case.signal_after is not None and wall >= case.signal_after
    expected = {0, 1, 2}
    if signalled:
        # stopped by the signal (or finished in the same instant)
        expected = {130 if case.sig == signal.SIGINT else 143, 0, 1, 2}
    elif not case.options_valid():
        expected = {2}
    elif case.first_chain_fails():
        expected = {1}
    else:
        expected = {0, 1}
    assert code in expected, f"exit {code}, expected one of {sorted(expected)}\n{what}"
    if not signalled:
        assert wall <= case.bound(), f"wall {wall:.1f} s > bound {case.bound():.1f} s\n{what}"
    if code in (0, 1) and case.json_out == "-" and not signalled:
        json.loads(out)  # stdout is the JSON report, nothing else
    if code in (0, 1, 130, 143) and case.json_out == "r.json":
        assert json_file is not None, f"--json r.json was not written\n{what}"
        json.loads(json_file)
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith("adprof")]
        assert lines, f"bad input gets one 'adprof' line naming the cause\n{what}"


# =========================================================================== --cmd templates and protocol lines
# (the fuzz also covers programs). A program is generated per case: at each depth it prints the drawn
# lines (protocol objects good and bad, unknown keys, broken JSON, binary and escape sequences), may start
# detached children and exits with the drawn status; the template around it is drawn good or bad.

#: protocol line -> (the JSON text, or None for a non-JSON line; fails: the point fails when it is the last JSON line)
PROTOCOL_LINES: dict[str, tuple[str | None, bool]] = {
    "traced": ('{"transform_seconds": 0.0001, "drop_seconds": 0.00001}', False),
    "counters": ('{"transform_seconds": 0.0001, "counters": {"key_comparisons": 7}}', False),
    "nested": ('{"counters": {"transform": {"key_comparisons": 3}, "drop": {"nodes": 1}}}', False),
    "eager_lists": ('{"forward_seconds": [0.001, 0.0005], "backward_seconds": [0.002, 0.001, 0.001]}', False),
    "typo": ('{"transfrom_seconds": 0.001, "colour": "blue"}', False),
    "empty_object": ("{}", False),
    "string": ('{"transform_seconds": "fast"}', True),
    "negative": ('{"transform_seconds": -1}', True),
    "bool": ('{"transform_seconds": true}', True),
    "huge": ('{"transform_seconds": 1e300}', True),
    "nan_text": ('{"transform_seconds": NaN}', True),
    "empty_list": ('{"backward_seconds": []}', True),
    "bad_counters": ('{"counters": [1, 2]}', True),
    "broken": ('{"transform_seconds": 0.1,', True),
    "not_object": ("[1, 2, 3]", False),  # not a line starting with "{": no protocol (process time)
    "plain": (None, False),
}
JUNK = {
    "none": "",
    "escape": "sys.stdout.buffer.write(b'\\x1b]0;PWNED\\x07\\x1b[2J\\xff\\xfe\\n'); "
    "sys.stderr.buffer.write(b'\\x1b[31m\\x9b err\\n')",
    "stderr_lines": "print('warning: [bold]x[/] [', file=sys.stderr)",
    "detached": "subprocess.Popen(['sleep', '30'], start_new_session=True, stdout=None)",
    "in_group": "subprocess.Popen(['sleep', '31'], stdout=subprocess.DEVNULL)",
    "close_pipes": "sys.stdout.flush(); os.close(1); os.close(2); time.sleep(0.02)",
}
#: template form -> (template with PROG for the program path, valid?)
TEMPLATES = {
    "plain": ("PROG {depth}", True),
    "calls": ("PROG {depth} --calls {calls}", True),
    "quoted": ("'PROG' {depth} 'an arg'", True),
    "no_depth": ("PROG 3", False),
    "bad_quote": ("PROG {depth} 'unclosed", False),
    "empty": ("", False),
    "missing": ("./no-such-program {depth}", False),
    "not_executable": ("NOEXEC {depth}", False),
    "no_shebang": ("NOSHEBANG {depth}", False),
    "directory": ("./ {depth}", False),
}


@dataclass
class CmdCase:
    command: str
    template: str
    lines: list[str]  # printed in order at every depth
    junk: str
    exit_status: int
    from_depth: int  # the lines and junk from this depth on (before it: a good traced line)
    mode: str | None
    budget: str
    cap: str
    json_out: str | None
    signal_after: float | None

    def valid(self) -> bool:
        """The template runs and the options are good (else: bad input, exit 2)."""
        return TEMPLATES[self.template][1] and self.mode != "bogus"

    def fails_at_first_depth(self) -> bool:
        if self.from_depth > 1:
            return False
        if self.exit_status != 0:
            return True
        jsons = [PROTOCOL_LINES[n] for n in self.lines if PROTOCOL_LINES[n][0] is not None]
        last = next((j for j in reversed(jsons) if j[0].startswith("{")), None)
        return last is not None and last[1] and self.junk != "close_pipes"

    def program(self) -> str:
        body = [f"print({PROTOCOL_LINES[n][0] or 'no json here'!r})" for n in self.lines]
        junk = JUNK[self.junk]
        return "\n".join(
            [
                f"#!{sys.executable}",
                "import os, subprocess, sys, time",
                "depth = int(sys.argv[1])",
                f"if depth < {self.from_depth}:",
                "    print('{\"transform_seconds\": 0.0001}')",
                "    sys.exit(0)",
                *body,
                junk,
                f"sys.exit({self.exit_status})",
                "",
            ]
        )

    def args(self, work: Path) -> list[str]:
        prog = work / "prog.py"
        template = TEMPLATES[self.template][0]
        template = template.replace("PROG", str(prog)).replace("NOEXEC", str(work / "noexec.py"))
        template = template.replace("NOSHEBANG", str(work / "noshebang.sh"))
        args = [self.command, "--cmd", template, "--cap", self.cap, "--budget", self.budget, "--no-color"]
        if self.mode is not None:
            args += ["--mode", self.mode]
        if self.json_out is not None:
            args += ["--json", self.json_out]
        if self.command == "halve":
            args += ["--depth", "4"]
        elif self.command in ("check", "guard"):
            args += ["--max-depth", "8"]
        return args


cmd_cases = st.builds(
    CmdCase,
    command=st.sampled_from(["check", "check", "check", "guard", "ratio", "halve"]),
    template=st.one_of(st.sampled_from(["plain", "plain", "calls", "quoted"]), st.sampled_from(sorted(TEMPLATES))),
    lines=st.lists(st.sampled_from(sorted(PROTOCOL_LINES)), min_size=0, max_size=3),
    junk=st.sampled_from(sorted(JUNK)),
    exit_status=st.sampled_from([0, 0, 0, 1, 3]),
    from_depth=st.sampled_from([1, 1, 2, 3]),
    mode=st.sampled_from([None, "traced", "eager", "bogus"]),
    budget=st.sampled_from(["4", "6"]),
    cap=st.sampled_from(["0.5", "2"]),
    json_out=st.sampled_from([None, "r.json", "-"]),
    signal_after=st.one_of(st.none(), st.none(), st.none(), st.sampled_from([1.0, 2.0])),
)


@settings(
    max_examples=max(1, EXAMPLES // 3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    phases=PHASES,
)
@given(case=cmd_cases)
def test_cli_fuzz_cmd(case: CmdCase) -> None:
    work = Path(tempfile.mkdtemp(prefix="adprof-fuzz-cmd-"))
    try:
        prog = work / "prog.py"
        prog.write_text(case.program())
        prog.chmod(0o755)
        (work / "noexec.py").write_text("print('{}')\n")
        (work / "noshebang.sh").write_text("echo '{}'\n")
        (work / "noshebang.sh").chmod(0o755)
        t0 = time.monotonic()
        proc, tag = start_adprof(case.args(work), work, None)
        try:
            try:
                if case.signal_after is not None:
                    try:
                        out, err = proc.communicate(timeout=case.signal_after)
                    except subprocess.TimeoutExpired:
                        os.kill(proc.pid, signal.SIGTERM)
                        out, err = proc.communicate(timeout=15)
                else:
                    out, err = proc.communicate(timeout=float(case.budget) + float(case.cap) + slack() + 15)
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                kill_tagged(tag)
                proc.kill()
                out, err = proc.communicate()
                code = None
            wall = time.monotonic() - t0
            left = describe(leftovers(tag, 3.0))
        finally:
            kill_tagged(tag)
        report = work / "r.json"
        json_file = report.read_text() if report.is_file() else None
        src = prog.read_text()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = f"case {case}\nexit {code}, {wall:.1f} s, left {left}\nprogram:\n{src}\nstderr tail:\n{err[-1500:]}"
    assert code is not None, f"no end within the bound\n{what}"
    assert TRACEBACK not in out + err and "internal error" not in out + err, f"traceback\n{what}"
    assert not left, f"processes left behind\n{what}"
    assert not [c for c in ("\x1b", "\x07", "\x9b") if c in out + err], f"raw control characters printed\n{what}"
    signalled = case.signal_after is not None and wall >= case.signal_after
    valid = case.valid()
    if signalled:
        expected = {143, 0, 1, 2}
    elif not valid:
        expected = {2}
    elif case.fails_at_first_depth():
        expected = {1}
    else:
        expected = {0, 1}
    assert code in expected, f"exit {code}, expected one of {sorted(expected)}\n{what}"
    if code in (0, 1) and case.json_out == "-" and not signalled:
        json.loads(out)
    if code in (0, 1, 143) and case.json_out == "r.json" and "while starting" not in err:  # (before the options)
        assert json_file is not None, f"--json r.json was not written\n{what}"
        json.loads(json_file)
    if code == 2:
        assert [ln for ln in err.splitlines() if ln.startswith("adprof")], f"one 'adprof' line for bad input\n{what}"
