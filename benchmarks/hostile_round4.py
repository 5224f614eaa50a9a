"""The fourth hostile round (issue 39, last requirement): a table of cases on what issue 39's list did not touch.

    python benchmarks/hostile_round4.py [--jobs 2] [--only GROUP[,GROUP]] [--case NAME] [--list] [--json out.json]

Each case runs ``python -P -m adprof ...`` (or a Python script using the API, or pytest with the fixture) in a
temporary directory (tests/fault_helpers.py: the run's processes are tagged, so the ones it leaves behind are
found and killed) and checks adprof's promises (docs/reliability.md), as benchmarks/hostile_round3.py does:

* the exit status is one the case allows (3, an internal error, never is);
* no traceback (without ``--verbose``), no "internal error";
* bad input (exit 2) is one ``adprof...`` error line on stderr;
* no raw escape sequence reaches stdout, stderr or a written HTML file;
* no process of the run outlives it; the wall time is bounded where the case says so;
* case checks: a broken chain's verdict is never ``linear``, a report re-rendered keeps its series, ...

Groups: ``body`` (chains that return odd values, print megabytes, read stdin, change the cwd, exit, fork, set
signals, recurse, allocate, start threads, patch the array namespace), ``file`` (chain files: encodings, BOMs,
CRLF, import-time side effects, long and odd names, duplicates, a file named ``adprof.py``), ``cmds`` (``ratio``,
``halve`` and ``report`` re-renders of odd but valid reports), ``env`` (HOME, TMPDIR, COLUMNS, TERM, LANG,
PYTHON* variables, a read-only cwd, stdout closed or full), ``signals`` (SIGINT/SIGTERM/SIGHUP during start-up,
import, ``ratio`` and ``halve``), ``api`` (``adprof.check``/``guard``/``load``/``compare`` with odd arguments,
twice, from threads, interrupted), ``plugin`` (backends through the ``adprof.backends`` entry point that raise,
hang, exit, return NaN/negative/huge counters, lie about their modes) and ``pytest`` (the fixture in a user's
project). The regression tests of the failures this round found are tests/test_hostile_round4_own.py; the
results are in benchmarks/hostile_round4.md.
"""

# ruff: noqa: E501 - the table's API scripts and chain sources are string literals, one per case, kept whole
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fault_helpers import (  # noqa: E402
    TRACEBACK,
    base_env,
    command,
    describe,
    kill_tagged,
    leftovers,
)

PY = sys.executable
FAST = ["--profile", "fixed", "--no-color", "--no-structure"]
#: C0 controls but tab, newline and carriage return, DEL and C1 controls.
RAW_ESCAPE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# --------------------------------------------------------------------------- chain files

HEALTHY = "    y = x\n    for _ in range(depth):\n        y = xp.sin(y)\n    return xp.sum(y)\n"
HEADER = "import os\nimport signal\nimport sys\nimport time\n\nimport adprof\n\n\n"


def chain(
    name: str,
    body: str = "",
    decorator: str = "input_shape=(3,), depths=(1, 2, 3, 4)",
    sig: str = "",
    tail: str | None = None,
    prelude: str = "",
) -> str:
    """A chain file: the sin chain with ``body`` run before it (``tail`` replaces the sin loop)."""
    return (
        f"{HEADER}{prelude}@adprof.chain({decorator})\ndef {name}(xp, x, depth{sig}):\n{body}"
        f"{HEALTHY if tail is None else tail}"
    )


FILES: dict[str, str] = {"ok.py": chain("ok")}

# --------------------------------------------------------------------------- running one case


@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    wall: float
    left: list[str]
    tmp: Path

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self, name: str = "r.json") -> dict[str, Any]:
        return json.loads((self.tmp / name).read_text())


Check = Callable[[Outcome], str | None]


@dataclass
class Case:
    group: str
    name: str
    args: list[str]
    exits: set[int]
    check: Check | None = None
    files: dict[str, str | bytes] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None
    timeout: float = 90.0
    wall: float | None = None
    signal_after: tuple[float, int] | None = None
    env: dict[str, str] = field(default_factory=dict)
    drop_env: tuple[str, ...] = ()
    pytest_file: str | None = None  # run pytest on this test file instead of adprof
    script: str | None = None  # run this Python script (the API) instead of adprof
    stdout: str = "pipe"  # "pipe", "closed" (fd 1 closed), "full" (/dev/full), "head" (closed after 200 bytes)
    readonly_cwd: bool = False
    stderr_escapes_ok: bool = False  # a terminal's cursor movements on stderr are expected (FORCE_COLOR)
    note: str = ""
    #: A failure this round found and did not fix (why): reported as KNOWN, not counted as a failure.
    known: str = ""


def _start(case: Case, argv: list[str], tmp: Path, env: dict[str, str]) -> subprocess.Popen:
    out: Any = subprocess.PIPE
    if case.stdout == "full":
        out = open("/dev/full", "w")
    kwargs: dict[str, Any] = {}
    if case.stdout == "closed":
        out = None
        kwargs["preexec_fn"] = lambda: os.close(1)
    return subprocess.Popen(
        argv,
        cwd=tmp,
        env=env,
        stdout=out,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
        errors="replace",
        **kwargs,
    )


def run_case(case: Case) -> tuple[Case, Outcome]:
    tmp = Path(tempfile.mkdtemp(prefix="h4-" + re.sub(r"\W", "_", case.name)[:40] + "-"))
    for name, text in {**FILES, **case.files}.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (tmp / name).write_bytes(text)
        else:
            (tmp / name).write_text(text)
    if case.setup is not None:
        case.setup(tmp)
    tag = uuid.uuid4().hex
    env = base_env(tag, None)
    env.update({k: v.replace("{site}", str(tmp / "site")) for k, v in case.env.items()})
    for key in case.drop_env:
        env.pop(key, None)
    if case.pytest_file is not None:
        (tmp / "test_guarded.py").write_text(case.pytest_file)
        argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_guarded.py"]
    elif case.script is not None:
        (tmp / "script.py").write_text(case.script)
        argv = [PY, "script.py"]
    else:
        argv = command(case.args)
    if case.readonly_cwd:
        tmp.chmod(stat.S_IRUSR | stat.S_IXUSR)
    t0 = time.monotonic()
    proc = _start(case, argv, tmp, env)
    out = ""
    try:
        if case.stdout == "head":
            assert proc.stdout is not None
            out = proc.stdout.read(200)
            proc.stdout.close()
            proc.stdout = None
        if case.signal_after is not None:
            delay, sig = case.signal_after
            try:
                proc.communicate(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        more, err = proc.communicate(timeout=case.timeout)
        out += more or ""
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tagged(tag)
        proc.kill()
        more, err = proc.communicate()
        out += more or ""
        code = None
    wall = time.monotonic() - t0
    left = describe(leftovers(tag, 4.0))
    kill_tagged(tag)
    if case.readonly_cwd:
        tmp.chmod(stat.S_IRWXU)
    return case, Outcome(code, out, err or "", wall, left, tmp)


def _status_problems(case: Case, o: Outcome) -> list[str]:
    found: list[str] = []
    verbose = "-v" in case.args or "--verbose" in case.args
    if o.code is None:
        found.append(f"did not finish within {case.timeout:g} s (a hang)")
    elif o.code not in case.exits:
        found.append(f"exit {o.code}, expected {sorted(case.exits)}")
    if o.code == 3:
        found.append("exit 3: an internal error")
    if case.pytest_file is None and case.script is None and not verbose and TRACEBACK in o.text:
        found.append("a traceback reached the user")
    if case.script is not None and TRACEBACK in o.err:
        found.append("the script raised: " + o.err.strip().splitlines()[-1][:200])
    if "internal error" in o.text:
        found.append("'internal error' in the output")
    if case.pytest_file is None and case.script is None and o.code == 2:
        errors = [ln for ln in o.err.splitlines() if ln.startswith("adprof")]
        if len(errors) != 1:
            found.append(f"exit 2 with {len(errors)} 'adprof...' lines on stderr")
    return found


def _output_problems(o: Outcome, stderr_ok: bool = False) -> list[str]:
    found: list[str] = []
    if RAW_ESCAPE.search(o.out) or (not stderr_ok and RAW_ESCAPE.search(o.err)):
        found.append("a raw control character reached the terminal")
    for html in o.tmp.glob("*.html"):
        page = html.read_text(errors="replace")
        if RAW_ESCAPE.search(page):
            found.append(f"a raw control character in {html.name}")
        if "<script>alert" in page.lower():
            found.append(f"unescaped <script in {html.name}")
    return found


def problems(case: Case, o: Outcome) -> list[str]:
    """Every promise the case broke (empty: it held them all)."""
    found = _status_problems(case, o) + _output_problems(o, case.stderr_escapes_ok)
    if o.left:
        found.append(f"processes left behind: {o.left}")
    if case.wall is not None and o.wall > case.wall:
        found.append(f"wall {o.wall:.1f} s > {case.wall:g} s")
    if case.check is not None and o.code is not None:
        try:
            why = case.check(o)
        except Exception as exc:  # a check that cannot read the output is a failure of the case
            why = f"check raised {type(exc).__name__}: {exc}"
        if why:
            found.append(why)
    return found


# --------------------------------------------------------------------------- checks


def verdicts(o: Outcome, name: str = "r.json") -> list[str]:
    return [r["verdict"] for r in o.json(name)["results"]]


def never_linear(o: Outcome) -> str | None:
    vs = verdicts(o)
    return f"a broken chain read {vs}" if not vs or "linear" in vs else None


def all_linear(o: Outcome) -> str | None:
    vs = verdicts(o)
    return None if vs and all(v == "linear" for v in vs) else f"a healthy chain read {vs}"


def err_says(pattern: str) -> Check:
    def check(o: Outcome) -> str | None:
        return None if re.search(pattern, o.err, re.I) else f"stderr does not say {pattern!r}"

    return check


def out_says(pattern: str) -> Check:
    def check(o: Outcome) -> str | None:
        return None if re.search(pattern, o.text, re.I) else f"the output does not say {pattern!r}"

    return check


def out_lacks(pattern: str) -> Check:
    def check(o: Outcome) -> str | None:
        return f"the output says {pattern!r}" if re.search(pattern, o.text, re.I) else None

    return check


def both(*checks: Check) -> Check:
    def check(o: Outcome) -> str | None:
        for c in checks:
            why = c(o)
            if why:
                return why
        return None

    return check


def results_count(n: int, name: str = "r.json") -> Check:
    def check(o: Outcome) -> str | None:
        got = len(o.json(name)["results"])
        return None if got == n else f"{got} results, expected {n}"

    return check


def row_error(pattern: str) -> Check:
    def check(o: Outcome) -> str | None:
        rows = o.json()["results"]
        return None if any(re.search(pattern, r.get("error") or "", re.I) for r in rows) else f"no error {pattern!r}"

    return check


def script_ok(o: Outcome) -> str | None:
    return None if "SCRIPT-OK" in o.out else "the script did not reach its end"


def file_unchanged(name: str, text: str) -> Check:
    def check(o: Outcome) -> str | None:
        return None if (o.tmp / name).read_text() == text else f"{name} was changed"

    return check


# --------------------------------------------------------------------------- body: what a chain does


def body_cases() -> list[Case]:
    g = "body"
    out = ["--json", "r.json", "--html", "r.html"]
    base = ["check", *FAST, "--mode", "traced", "--budget", "20", "--cap", "1", *out]

    def bad(
        name: str, body: str, check: Check | None = None, exits: set[int] | None = None, tail: str | None = None, **kw
    ) -> Case:
        """A chain that misbehaves: exit 1 and never linear unless said otherwise."""
        files = {f"{name}.py": chain(name.replace("-", "_"), body, tail=tail, prelude=kw.pop("prelude", ""))}
        return Case(
            g,
            name,
            [*base, f"{name}.py"],
            exits or {1},
            check if check is not None else never_linear,
            files=files,
            wall=kw.pop("wall", 45.0),
            **kw,
        )

    def fine(name: str, body: str, tail: str | None = None, **kw) -> Case:
        """A chain that does something odd but harmless: measured, linear."""
        return bad(name, body, all_linear, {0}, tail=tail, **kw)

    at2 = "    if depth >= 2:\n"
    cases = [
        # return values
        bad("ret-none", "", tail="    return None\n"),
        bad("ret-str", "", tail="    return 'a string'\n"),
        bad("ret-tuple", "", tail=HEALTHY.replace("return xp.sum(y)", "return (xp.sum(y), xp.sum(y))")),
        bad("ret-vector", "", tail=HEALTHY.replace("return xp.sum(y)", "return y")),
        bad("ret-int", "", tail="    return 3\n"),
        bad("ret-nan", "", tail=HEALTHY.replace("return xp.sum(y)", "return xp.sum(y) * float('nan')")),
        bad(
            "ret-inf-at3",
            "",
            tail=HEALTHY.replace("return xp.sum(y)", "return xp.sum(y) * (1e309 if depth == 3 else 1)"),
        ),
        bad("ret-complex", "", tail="    return complex(1, 2)\n"),
        bad("ret-generator", "", tail="    yield xp.sum(x)\n"),
        fine("ret-0d-reshape", "", tail=HEALTHY.replace("return xp.sum(y)", "return xp.reshape(xp.sum(y), ())")),
        # a value that does not depend on x: no gradient path; constant cost, so linear is no lie
        bad("ret-constant", "", tail="    return xp.sum(xp.asarray([1.0, 2.0]))\n", exits={0, 1}, check=lambda o: None),
        bad("ret-depth-kind", "", tail=HEALTHY.replace("return xp.sum(y)", "return xp.sum(y) if depth < 3 else 'x'")),
        # raising
        bad("raise-at1-only", "    if depth == 1:\n        raise ValueError('only at one')\n", exits={0, 1}),
        bad("raise-keyboardinterrupt", at2 + "        raise KeyboardInterrupt\n"),
        bad("raise-systemexit0", at2 + "        raise SystemExit(0)\n"),
        bad("raise-baseexception", at2 + "        raise BaseException('base')\n"),
        bad("raise-generatorexit", at2 + "        raise GeneratorExit\n"),
        bad(
            "raise-bad-str",
            "    class E(Exception):\n        def __str__(self):\n            raise RuntimeError('no str')\n"
            + at2
            + "        raise E()\n",
        ),
        bad("raise-1mb-message", at2 + "        raise ValueError('m' * 1_000_000)\n"),
        bad("raise-recursion", "    def f(n):\n        return f(n + 1)\n" + at2 + "        f(0)\n"),
        bad("raise-memoryerror", at2 + "        raise MemoryError\n"),
        bad(
            "raise-unpicklable",
            "    class E(Exception):\n        def __reduce__(self):\n            raise TypeError('nope')\n"
            + at2
            + "        raise E('x')\n",
        ),
        # exits
        bad("sys-exit0", at2 + "        sys.exit(0)\n"),
        bad("sys-exit-str", at2 + "        sys.exit('bye from the chain')\n"),
        bad("os-exit0", at2 + "        os._exit(0)\n"),
        bad("os-exit-neg", at2 + "        os._exit(255)\n"),
        bad("abort", at2 + "        os.abort()\n"),
        bad("self-sigterm", at2 + "        os.kill(os.getpid(), signal.SIGTERM)\n"),
        bad("self-sigint", at2 + "        os.kill(os.getpid(), signal.SIGINT)\n"),
        bad("self-sigstop", at2 + "        os.kill(os.getpid(), signal.SIGSTOP)\n", wall=40.0),
        bad(
            "deep-c-recursion",
            "    sys.setrecursionlimit(10**7)\n    def f(n):\n        return f(n + 1)\n" + at2 + "        f(0)\n",
        ),
        # output and input
        fine("print-2mb-stdout", "    sys.stdout.write('o' * 2_000_000)\n    sys.stdout.flush()\n"),
        fine("print-2mb-stderr", "    sys.stderr.write('e' * 2_000_000)\n    sys.stderr.flush()\n"),
        fine("print-fd1-raw", "    os.write(1, b'\\x1b[2J garbage on fd 1\\n' * 1000)\n"),
        fine("print-escape-stderr", "    sys.stderr.write('\\x1b]0;PWNED\\x07\\x1b[2J\\n')\n"),
        fine("read-stdin", "    sys.stdin.read()\n"),
        fine("read-fd0", "    os.read(0, 10)\n"),
        bad("close-fd1", at2 + "        os.close(1)\n", exits={0, 1}, check=None),
        bad("close-fd2", at2 + "        os.close(2)\n", exits={0, 1}, check=None),
        fine("stdout-none", "    sys.stdout = None\n"),
        fine("warn-spam", "    import warnings\n    for i in range(2000):\n        warnings.warn('w%d' % i)\n"),
        # process state
        fine("chdir-root", "    os.chdir('/')\n"),
        fine(
            "chdir-tmp-removed", "    import tempfile\n    d = tempfile.mkdtemp()\n    os.chdir(d)\n    os.rmdir(d)\n"
        ),
        fine("environ-clear", "    os.environ.clear()\n"),
        fine("umask-777", "    os.umask(0o777)\n"),
        fine(
            "ignore-signals",
            "    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n        signal.signal(s, signal.SIG_IGN)\n",
        ),
        bad(
            "ignore-signals-hang",
            "    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n        signal.signal(s, signal.SIG_IGN)\n"
            + "    if depth >= 3:\n        while True:\n            pass\n",
            wall=45.0,
        ),
        fine(
            "alarm-handler",
            "    signal.signal(signal.SIGALRM, lambda *a: None)\n    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\n",
        ),
        bad("alarm-default", at2 + "        signal.setitimer(signal.ITIMER_REAL, 0.01)\n"),
        fine("settrace", "    sys.settrace(lambda *a: None)\n"),
        fine("setprofile-none", "    sys.setprofile(None)\n"),
        fine("gc-disable", "    import gc\n    gc.disable()\n"),
        fine("recursionlimit-low", "    sys.setrecursionlimit(60)\n"),
        fine("delete-adprof-module", "    sys.modules.pop('adprof', None)\n"),
        # processes and threads
        fine(
            "fork-child-sleeps",
            "    pid = os.fork()\n    if pid == 0:\n        time.sleep(1000)\n        os._exit(0)\n",
        ),
        fine(
            "thread-nondaemon", "    import threading\n    threading.Thread(target=time.sleep, args=(1000,)).start()\n"
        ),
        bad(
            "thread-raises",
            "    import threading\n    t = threading.Thread(target=lambda: 1 / 0)\n    t.start()\n    t.join()\n",
            exits={0},
            check=all_linear,
        ),
        fine("subprocess-true", "    import subprocess\n    subprocess.run(['true'])\n"),
        # memory (bounded)
        fine("alloc-30mb", "    b = bytearray(30 * 1024 * 1024)\n    del b\n"),
        bad(
            "rlimit-as-then-alloc",
            "    import resource\n    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))\n"
            + at2
            + "        b = bytearray(3 * 1024**3)\n",
        ),
        # global state: a chain that patches the array namespace breaks every later chain in the worker
        Case(
            g,
            "patch-xp-then-other",
            [*base, "--jobs", "1", "patch.py"],
            {0},
            check=lambda o: (
                None
                if [r["verdict"] for r in o.json()["results"] if r["chain"] == "b_ok"] == ["linear"]
                else "a healthy chain read "
                + str([(r["verdict"], r["error"]) for r in o.json()["results"] if r["chain"] == "b_ok"])
                + " after another chain patched xp"
            ),
            files={
                "patch.py": HEADER
                + "@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))\ndef a_patch(xp, x, depth):\n"
                + "    xp.sin = None\n"
                + "    return xp.sum(x)\n"
                + "\n\n@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))\ndef b_ok(xp, x, depth):\n"
                + HEALTHY
            },
        ),
        # inputs
        Case(
            g,
            "input-raises",
            [*base, "inp.py"],
            {1, 2},
            files={"inp.py": chain("inp", decorator="input=lambda: 1 / 0, depths=(1, 2, 3)")},
        ),
        Case(
            g,
            "input-nan",
            [*base, "inp.py"],
            {0, 1},
            files={
                "inp.py": chain(
                    "inp", decorator="input=lambda: __import__('numpy').full((3,), float('nan')), depths=(1, 2, 3)"
                )
            },
        ),
        Case(
            g,
            "input-string",
            [*base, "inp.py"],
            {1, 2},
            files={"inp.py": chain("inp", decorator="input='abc', depths=(1, 2, 3)")},
        ),
        Case(
            g,
            "input-scalar-shape",
            [*base, "inp.py"],
            {0},
            all_linear,
            files={"inp.py": chain("inp", decorator="input_shape=(), depths=(1, 2, 3)")},
        ),
        Case(
            g,
            "input-bool-dtype",
            [*base, "inp.py"],
            {1, 2},
            files={"inp.py": chain("inp", decorator="input_shape=(3,), dtype='bool', depths=(1, 2, 3)")},
        ),
        Case(
            g,
            "dtype-complex",
            [*base, "inp.py"],
            {0, 1, 2},
            files={"inp.py": chain("inp", decorator="input_shape=(3,), dtype='complex128', depths=(1, 2, 3)")},
        ),
        Case(
            g,
            "dtype-float16",
            [*base, "inp.py"],
            {0, 1, 2},
            files={"inp.py": chain("inp", decorator="input_shape=(3,), dtype='float16', depths=(1, 2, 3)")},
        ),
    ]
    return cases


# --------------------------------------------------------------------------- file: chain files


def file_cases() -> list[Case]:
    g = "file"
    base = ["check", *FAST, "--mode", "traced", "--budget", "20", "--cap", "1", "--json", "r.json"]
    ok_src = chain("ok")
    latin = ("# caf\xe9\n" + ok_src).encode("latin-1")
    long_name = "c" * 300

    def f(name: str, src: str | bytes, exits: set[int], check: Check | None = None, target: str = "x.py", **kw) -> Case:
        return Case(
            g,
            name,
            [*base, target],
            exits,
            check,
            files={"x.py": src} if target.startswith("x.py") else {target.split("::")[0]: src},
            wall=kw.pop("wall", 45.0),
            **kw,
        )

    two_same = ok_src + "\n\n" + chain("ok").split("\n\n\n", 1)[1].replace("xp.sin", "xp.cos")
    twice = ok_src.replace("@adprof.chain(", "@adprof.chain\n@adprof.chain(")
    twice2 = ok_src.replace("@adprof.chain(", "@adprof.chain(input_shape=(2,))\n@adprof.chain(")
    cases = [
        f("latin1-no-cookie", latin, {0, 2}),  # Python itself imports a non-UTF-8 byte in a comment
        f("latin1-with-cookie", b"# -*- coding: latin-1 -*-\n" + latin, {0}, all_linear),
        f("utf8-bom", b"\xef\xbb\xbf" + ok_src.encode(), {0}, all_linear),
        f("utf16", ok_src.encode("utf-16"), {2}),
        f("crlf", ok_src.replace("\n", "\r\n").encode(), {0}, all_linear),
        f("nul-byte", ok_src.encode() + b"\x00", {2}),
        f("empty-file", "", {2}),
        f("only-comment", "# nothing here\n", {2}),
        f("syntax-error-late", ok_src + "\ndef broken(:\n", {2}),
        f("import-error-nested", "import no_such_module_at_all\n" + ok_src, {2}, err_says("no_such_module")),
        f("import-print-1mb", "print('p' * 1_000_000)\n" + ok_src, {0}, all_linear),
        f("import-sys-exit0", "import sys\nsys.exit(0)\n" + ok_src, {2}),
        f("import-os-exit", "import os\nos._exit(0)\n" + ok_src, {2}),
        f("import-keyboardinterrupt", "raise KeyboardInterrupt\n" + ok_src, {2}),
        f("import-systemexit-str", "raise SystemExit('from the module')\n" + ok_src, {2}),
        f("import-reads-stdin", "import sys\nsys.stdin.read()\n" + ok_src, {0}, all_linear),
        f("import-chdir", "import os\nos.chdir('/')\n" + ok_src, {0}, all_linear),
        f(
            "import-starts-sleeper",
            "import subprocess\nsubprocess.Popen(['sleep', '1000'])\n" + ok_src,
            {0},
            all_linear,
        ),
        f("import-escape-error", "raise ImportError('\\x1b]0;PWNED\\x07 <script>alert(1)</script>')\n" + ok_src, {2}),
        f("import-calls-check", ok_src + "\nadprof.check(ok, mode='traced', profile='fixed', budget=5)\n", {0, 1, 2}),
        f(
            "two-chains-same-name",
            two_same,
            {0, 1, 2},
            lambda o: None if o.code == 2 or len(o.json()["results"]) >= 1 else "no rows",
        ),
        f("decorator-twice-bare", twice, {0, 2}),
        f("decorator-twice-options", twice2, {0, 2}),
        f("long-chain-name", chain(long_name), {0}, all_linear),
        f("name-option-empty", chain("ok", decorator="name='', depths=(1, 2, 3)"), {2}),
        f("name-option-colons", chain("ok", decorator="name='a::b', depths=(1, 2, 3)"), {0, 2}),
        f("name-option-escape", chain("ok", decorator="name='\\x1b[2Jn', depths=(1, 2, 3)"), {0, 2}),
        f("name-option-rtl", chain("ok", decorator="name='a\\u202eb', depths=(1, 2, 3)"), {0, 2}),
        f("name-option-newline", chain("ok", decorator="name='a\\nb', depths=(1, 2, 3)"), {0, 2}),
        f("name-option-int", chain("ok", decorator="name=3, depths=(1, 2, 3)"), {2}),
        f("unicode-func-name", chain("café_ψ"), {0}, all_linear),
        f("lambda-at-module", "f = lambda xp, x, depth: xp.sum(xp.sin(x))\n", {0}, target="x.py::f"),
        f(
            "callable-instance",
            "class C:\n    def __call__(self, xp, x, depth):\n        return xp.sum(x)\nc = C()\n",
            {0, 2},
            target="x.py::c",
        ),
        f("chain-named-by-class", "class K:\n    pass\n", {2}, target="x.py::K"),
        f("builtin-by-name", "from math import sin\n", {2}, target="x.py::sin"),
        f("target-empty-chain", ok_src, {2}, target="x.py::"),
        f("target-double-colon", ok_src, {2}, target="x.py::ok::ok"),
        Case(g, "file-named-adprof", [*base, "adprof.py"], {0, 2}, files={"adprof.py": ok_src}, wall=45.0),
        Case(g, "file-named-numpy", [*base, "numpy.py"], {0}, all_linear, files={"numpy.py": ok_src}, wall=45.0),
        Case(g, "file-in-unicode-dir", [*base, "dïr ψ/x.py"], {0}, all_linear, files={"dïr ψ/x.py": ok_src}, wall=45.0),
        Case(g, "file-name-rtl", [*base, "a\u202egnp.py"], {0}, all_linear, files={"a\u202egnp.py": ok_src}, wall=45.0),
        Case(g, "file-name-newline", [*base, "a\nb.py"], {0}, all_linear, files={"a\nb.py": ok_src}, wall=45.0),
        Case(g, "file-name-dash", [*base, "--", "-x.py"], {0, 2}, files={"-x.py": ok_src}, wall=45.0),
        Case(g, "file-no-suffix", [*base, "chains"], {0, 2}, files={"chains": ok_src}, wall=45.0),
        Case(g, "file-is-dir", [*base, "d.py"], {2}, setup=lambda t: (t / "d.py").mkdir(), wall=45.0),
        Case(
            g,
            "file-symlink-loop",
            [*base, "loop.py"],
            {2},
            setup=lambda t: (t / "loop.py").symlink_to("loop.py"),
            wall=45.0,
        ),
        Case(
            g,
            "file-unreadable",
            [*base, "x.py"],
            {2} if os.geteuid() != 0 else {0},  # root reads a file of mode 000
            files={"x.py": ok_src},
            setup=lambda t: (t / "x.py").chmod(0),
            wall=45.0,
        ),
        Case(
            g,
            "file-same-twice",
            [*base, "x.py", "x.py"],
            {0},
            results_count(1),
            files={"x.py": ok_src},
            wall=45.0,
        ),
    ]
    return cases


# --------------------------------------------------------------------------- cmds: ratio, halve, report


def _saved(tmp: Path, name: str, args: list[str]) -> None:
    """Measure once, into ``tmp/name`` (the case then renders it)."""
    subprocess.run(
        command([*args, "--json", name]),
        cwd=tmp,
        env=base_env(uuid.uuid4().hex, None),
        timeout=120,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def cmds_cases() -> list[Case]:
    g = "cmds"
    two = chain("one") + "\n\n" + chain("two").split("\n\n\n", 1)[1]
    raise3 = chain(
        "raise3",
        "    if depth >= 3:\n        raise ValueError('boom')\n",
        decorator="input_shape=(3,), depths=(1, 2, 3, 4, 5)",
    )
    hang3 = chain(
        "hang3",
        "    if depth >= 3:\n        while True:\n            pass\n",
        decorator="input_shape=(3,), depths=(1, 2, 3, 4, 5)",
    )
    expo = (
        HEADER
        + "@adprof.chain(input_shape=(3, 3), reuse=2, depths=tuple(range(1, 9)))\ndef expo(xp, x, depth):\n"
        + "    y = x\n    for _ in range(depth):\n        y = (y * y) * 0.5\n    return xp.sum(y)\n"
    )
    r = ["--profile", "fixed", "--no-color", "--budget", "15", "--cap", "1"]
    files = {"two.py": two, "raise3.py": raise3, "hang3.py": hang3, "expo.py": expo}

    def c(name: str, args: list[str], exits: set[int], check: Check | None = None, **kw) -> Case:
        return Case(g, name, args, exits, check, files=files, wall=kw.pop("wall", 45.0), **kw)

    def saved(args: list[str], name: str = "s.json") -> Callable[[Path], None]:
        return lambda t: _saved(t, name, args)

    check_ok = ["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15"]
    cases = [
        c("ratio-two-chains-no-name", ["ratio", "two.py", *r], {2}),
        c("ratio-descending-depths", ["ratio", "ok.py::ok", *r, "--depths", "3,2,1"], {0, 2}),
        c("ratio-one-depth", ["ratio", "ok.py::ok", *r, "--depths", "5"], {0, 2}),
        c("ratio-eager", ["ratio", "ok.py::ok", *r, "--mode", "eager", "--max-depth", "4"], {0}),
        c("ratio-raise3", ["ratio", "raise3.py::raise3", *r, "--max-depth", "5"], {1}, out_says("boom")),
        c(
            "ratio-hang3",
            ["ratio", "hang3.py::hang3", *r, "--max-depth", "5"],
            {1},
            out_says("kill|hang|timeout"),
            wall=30.0,
        ),
        c(
            "ratio-expo",
            ["ratio", "expo.py::expo", *r, "--profile", "v08", "--max-depth", "8"],
            {1},
            out_says("exponential"),
        ),
        c(
            "ratio-json-and-markdown-stdout",
            ["ratio", "ok.py::ok", *r, "--max-depth", "3", "--json", "-", "--markdown", "-"],
            {0, 2},
        ),
        c(
            "ratio-markdown-file",
            ["ratio", "ok.py::ok", *r, "--max-depth", "3", "--markdown", "m.md"],
            {0},
            lambda o: None if (o.tmp / "m.md").read_text().strip() else "empty markdown",
        ),
        c("ratio-two-backends", ["ratio", "ok.py::ok", *r, "--max-depth", "3", "--backend", "engine,engine"], {0, 2}),
        c("ratio-verbose", ["ratio", "ok.py::ok", *r, "--max-depth", "3", "-v"], {0}),
        c("halve-depth1", ["halve", "ok.py::ok", *r, "--depth", "1"], {0, 2}),
        c("halve-depth3-odd", ["halve", "ok.py::ok", *r, "--depth", "3"], {0, 2}),
        c("halve-raise3", ["halve", "raise3.py::raise3", *r, "--depth", "4"], {1}, out_says("boom")),
        c(
            "halve-hang3",
            ["halve", "hang3.py::hang3", *r, "--depth", "4"],
            {1},
            out_says("kill|hang|timeout"),
            wall=30.0,
        ),
        c(
            "halve-traced-expo",
            ["halve", "expo.py::expo", *r, "--profile", "v08", "--mode", "traced", "--depth", "8"],
            {1},
        ),
        c("halve-json", ["halve", "ok.py::ok", *r, "--depth", "4", "--json", "r.json"], {0}, results_count(1)),
        c("halve-two-chains-no-name", ["halve", "two.py", *r], {2}),
        c(
            "report-of-ratio-json",
            ["report", "s.json", "--no-color"],
            {0},
            setup=saved(["ratio", "ok.py::ok", *r, "--max-depth", "3"]),
        ),
        c(
            "report-of-halve-json",
            ["report", "s.json", "--no-color"],
            {0},
            setup=saved(["halve", "ok.py::ok", *r, "--depth", "4"]),
        ),
        c(
            "report-of-guard-json",
            ["report", "s.json", "--no-color"],
            {0, 2},
            setup=saved(["guard", "ok.py", "--mode", "traced", "--budget", "15"]),
        ),
        c(
            "report-of-compare-json",
            ["report", "c.json", "--no-color"],
            {2},
            setup=lambda t: (
                _saved(t, "s.json", check_ok),
                subprocess.run(
                    command(["compare", "s.json", "s.json", "--json", "c.json"]),
                    cwd=t,
                    env=base_env(uuid.uuid4().hex, None),
                    timeout=60,
                    stdout=subprocess.DEVNULL,
                ),
            ),
        ),
        c(
            "report-check-plus-ratio",
            ["report", "s.json", "q.json", "--no-color", "--json", "r.json"],
            {0},
            results_count(2),
            setup=lambda t: (
                _saved(t, "s.json", check_ok),
                _saved(t, "q.json", ["ratio", "ok.py::ok", *r, "--max-depth", "3"]),
            ),
        ),
        c(
            "report-error-rows-plot",
            ["report", "s.json", "--no-color", "--plot", "p.png", "--html", "r.html"],
            {1},
            setup=saved(["check", "raise3.py", *FAST, "--mode", "traced", "--budget", "15", "--depths", "3,4"]),
        ),
        c(
            "report-escape-error-html",
            ["report", "s.json", "--no-color", "--html", "r.html", "--markdown", "m.md"],
            {1},
            setup=lambda t: (
                (t / "pwn.py").write_text(
                    chain("pwn", "    raise ValueError('<script>alert(1)</script> \\x1b]0;PWNED\\x07')\n")
                ),
                _saved(t, "s.json", ["check", "pwn.py", *FAST, "--mode", "traced", "--budget", "15"]),
            ),
        ),
        c(
            "report-json-stdout-roundtrip",
            ["report", "s.json", "--json", "-"],
            {0},
            lambda o: None if json.loads(o.out)["results"] else "no results",
            setup=saved(check_ok),
        ),
        c(
            "report-markdown-stdout",
            ["report", "s.json", "--markdown", "-", "--no-color"],
            {0},
            out_says(r"\|"),
            setup=saved(check_ok),
        ),
        c("report-verbose", ["report", "s.json", "-v", "--no-color"], {0}, setup=saved(check_ok)),
        c(
            "report-results-empty",
            ["report", "e.json", "--no-color"],
            {0, 2},
            setup=lambda t: (
                _saved(t, "s.json", check_ok),
                (t / "e.json").write_text(json.dumps({**json.loads((t / "s.json").read_text()), "results": []})),
            ),
        ),
        c(
            "report-unicode-chain",
            ["report", "s.json", "--no-color", "--html", "r.html", "--markdown", "m.md"],
            {0},
            setup=lambda t: (
                (t / "u.py").write_text(chain("café_ψ_名")),
                _saved(t, "s.json", ["check", "u.py", *FAST, "--mode", "traced", "--budget", "15"]),
            ),
            env={"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": ""},
        ),
        c("report-same-as-json-out", ["report", "s.json", "--json", "s.json"], {2}, setup=saved(check_ok)),
        c(
            "report-json-indent-crlf",
            ["report", "s.json", "--no-color"],
            {0},
            setup=lambda t: (
                _saved(t, "x.json", check_ok),
                (t / "s.json").write_bytes(
                    json.dumps(json.loads((t / "x.json").read_text()), indent=8).replace("\n", "\r\n").encode()
                ),
            ),
        ),
        c(
            "report-json-bom",
            ["report", "s.json", "--no-color"],
            {0, 2},
            setup=lambda t: (
                _saved(t, "x.json", check_ok),
                (t / "s.json").write_bytes(b"\xef\xbb\xbf" + (t / "x.json").read_bytes()),
            ),
        ),
    ]
    return cases


# --------------------------------------------------------------------------- env


def env_cases() -> list[Case]:
    g = "env"
    base = ["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15", "--json", "r.json"]
    uni = {"u.py": chain("café_ψ")}

    def e(
        name: str, exits: set[int] | None = None, check: Check | None = all_linear, args: list[str] | None = None, **kw
    ) -> Case:
        return Case(g, name, args or base, exits or {0}, check, wall=kw.pop("wall", 45.0), **kw)

    cases = [
        e("home-unset", drop_env=("HOME",)),
        e("home-missing", env={"HOME": "/nonexistent/home"}),
        e("tmpdir-missing", env={"TMPDIR": "/nonexistent/tmp"}),
        e("tmpdir-is-file", env={"TMPDIR": "/etc/hostname"}),
        e("columns-0", env={"COLUMNS": "0"}),
        e("columns-huge", env={"COLUMNS": "100000"}),
        e("columns-text", env={"COLUMNS": "abc"}),
        e("lines-0", env={"LINES": "0"}),
        # forced: stderr is a terminal (rich's progress moves the cursor there); the report is plain text
        e("no-color-and-force", env={"NO_COLOR": "1", "FORCE_COLOR": "1"}, stderr_escapes_ok=True),
        e("term-dumb", env={"TERM": "dumb"}),
        e(
            "lang-c-unicode",
            args=["check", "u.py", *FAST, "--mode", "traced", "--budget", "15", "--json", "r.json"],
            files=uni,
            env={"LANG": "C", "LC_ALL": "C"},
        ),
        e(
            "ioencoding-ascii-unicode",
            args=["check", "u.py", *FAST, "--mode", "traced", "--budget", "15", "--json", "r.json"],
            files=uni,
            env={"PYTHONIOENCODING": "ascii"},
        ),
        e("pythonwarnings-error", env={"PYTHONWARNINGS": "error"}),
        e("pythonoptimize-2", env={"PYTHONOPTIMIZE": "2"}),
        e("pythonutf8-0-latin", env={"PYTHONUTF8": "0", "LANG": "C"}),
        e("path-empty", env={"PATH": ""}),
        e("omp-threads-0", env={"OMP_NUM_THREADS": "0"}),
        e(
            "readonly-cwd-no-output",
            args=["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15"],
            check=None,
            readonly_cwd=True,
        ),
        e("readonly-cwd-json", {2} if os.geteuid() != 0 else {0}, None, readonly_cwd=True),  # root writes anyway
        e(
            "stdout-closed",
            {0},
            None,
            args=["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15"],
            stdout="closed",
        ),
        e(
            "stdout-dev-full",
            {0, 1, 2},
            None,
            args=["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15"],
            stdout="full",
        ),
        e(
            "stdout-broken-pipe-json",
            {0, 1, 2, 141},
            None,
            args=["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15", "--json", "-"],
            stdout="head",
        ),
        e("adprof-env-junk", env={"ADPROF_RUN": "x" * 1000, "ADPROF_OWNER": "\x1b[2J"}),
        e("xdg-cache-readonly", env={"XDG_CACHE_HOME": "/proc"}),
        e(
            "mplconfig-bad",  # matplotlib refuses the environment's backend: one line, exit 2, is right
            exits={0, 2},
            check=None,
            args=["check", "ok.py", *FAST, "--mode", "traced", "--budget", "15", "--json", "r.json", "--plot", "p.png"],
            env={"MPLCONFIGDIR": "/nonexistent/mpl", "MPLBACKEND": "nosuchbackend"},
        ),
    ]
    return cases


# --------------------------------------------------------------------------- signals


def signal_cases() -> list[Case]:
    g = "signals"
    slow_import = "import time\ntime.sleep(6)\n" + chain("ok")
    slow = chain("slow", "    time.sleep(0.4)\n", decorator="input_shape=(3,), depths=tuple(range(1, 9))")
    files = {"slowimp.py": slow_import, "slow.py": slow}
    r = ["--profile", "fixed", "--no-color", "--budget", "40", "--cap", "2"]

    def s(name: str, args: list[str], when: float, sig: int, exits: set[int], check: Check | None = None) -> Case:
        return Case(g, name, args, exits, check, files=files, signal_after=(when, sig), wall=when + 15.0)

    code = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
    cases = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        n = signal.Signals(sig).name.lower()
        cases += [
            s(f"startup-{n}", ["check", "ok.py", *FAST, "--budget", "20"], 0.15, sig, {code[sig]}),
            s(
                f"import-{n}",
                ["check", "slowimp.py", *FAST, "--budget", "20", "--json", "r.json"],
                3.0,
                sig,
                {code[sig]},
            ),
            s(f"ratio-{n}", ["ratio", "slow.py::slow", *r], 5.0, sig, {code[sig]}, out_says("interrupt")),
            s(f"halve-{n}", ["halve", "slow.py::slow", *r], 4.0, sig, {code[sig]}),
        ]
    cases.append(
        s(
            "ratio-sigint-json",
            ["ratio", "slow.py::slow", *r, "--json", "r.json"],
            5.0,
            signal.SIGINT,
            {130},
            lambda o: None if o.json()["results"] else "no partial report",
        )
    )
    return cases


# --------------------------------------------------------------------------- api


API_HEAD = """\
import os, signal, sys, threading, time, math, functools
import adprof

@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def ok(xp, x, depth):
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)

FAST = dict(profile="fixed", mode="traced", structure=False, budget=15)

def usage(fn, *a, **k):
    try:
        fn(*a, **k)
    except adprof.UsageError as exc:
        msg = str(exc)
        assert "\\n" not in msg.strip(), repr(msg)
        print("usage:", msg[:200])
        return
    raise AssertionError("no UsageError")
"""


def api_cases() -> list[Case]:
    g = "api"

    def a(name: str, body: str, exits: set[int] | None = None, check: Check | None = script_ok, **kw) -> Case:
        return Case(
            g,
            name,
            [],
            exits or {0},
            check,
            script=API_HEAD + body + "\nprint('SCRIPT-OK')\n",
            wall=kw.pop("wall", 60.0),
            **kw,
        )

    kinds = "[r.verdict.kind for r in rep.results]"
    cases = [
        a(
            "check-twice",
            f"rep = adprof.check(ok, **FAST)\nrep = adprof.check(ok, **FAST)\nassert {kinds} == ['linear'], {kinds}\n",
        ),
        a(
            "check-in-thread",
            f"out = []\nt = threading.Thread(target=lambda: out.append(adprof.check(ok, **FAST)))\nt.start(); t.join()\nrep = out[0]\nassert {kinds} == ['linear']\n",
        ),
        a(
            "check-two-threads",
            "out, errs = [], []\n"
            "def go():\n    try:\n        out.append(adprof.check(ok, **FAST))\n    except Exception as e:\n        errs.append(repr(e))\n"
            "ts = [threading.Thread(target=go) for _ in range(2)]\n[t.start() for t in ts]; [t.join() for t in ts]\n"
            "assert len(out) + len(errs) == 2 and all('Traceback' not in e for e in errs), errs\n"
            "assert out, errs\n",
        ),
        a("budget-zero", "usage(adprof.check, ok, profile='fixed', mode='traced', budget=0)\n"),
        a("budget-nan", "usage(adprof.check, ok, profile='fixed', mode='traced', budget=float('nan'))\n"),
        a("budget-string", "usage(adprof.check, ok, profile='fixed', mode='traced', budget='ten')\n"),
        a("depths-empty", "usage(adprof.check, ok, profile='fixed', mode='traced', depths=[])\n"),
        a("depths-zero", "usage(adprof.check, ok, profile='fixed', mode='traced', depths=[0, 1])\n"),
        a(
            "depths-string",
            "rep = adprof.check(ok, profile='fixed', mode='traced', structure=False, depths='1,2,3', budget=15)\n",
        ),
        a("mode-int", "usage(adprof.check, ok, profile='fixed', mode=123)\n"),
        a("backend-empty-list", "usage(adprof.check, ok, profile='fixed', mode='traced', backend=[])\n"),
        a("target-none", "usage(adprof.check, None, **FAST)\n"),
        a("target-int", "usage(adprof.check, 42, **FAST)\n"),
        a("target-empty-list", "usage(adprof.check, [], **FAST)\n"),
        a("target-builtin", "usage(adprof.check, math.sin, **FAST)\n"),
        a("target-missing-file", "usage(adprof.check, 'nope.py::x', **FAST)\n"),
        a("unknown-kwarg", "usage(adprof.check, ok, bogus_option=1, **FAST)\n"),
        a(
            "chain-option-bad",
            "def f(xp, x, depth):\n    return xp.sum(x)\nusage(adprof.check, f, reuse='zzz', **FAST)\n",
        ),
        a(
            "target-partial",
            "def g(xp, x, depth, k):\n    return xp.sum(x) * k\np = functools.partial(g, k=2)\ntry:\n    adprof.check(p, **FAST)\nexcept adprof.UsageError as e:\n    print('usage', e)\n",
        ),
        a(
            "target-closure-lock",
            "lock = threading.Lock()\ndef h(xp, x, depth):\n    with lock:\n        return xp.sum(x)\nusage(adprof.check, h, ship='cloudpickle', **FAST)\n",
        ),
        a(
            "target-exec-defined",
            "ns = {}\nexec('def e(xp, x, depth):\\n    return xp.sum(xp.sin(x))', ns)\ntry:\n    rep = adprof.check(ns['e'], **FAST)\n    print([r.verdict.kind for r in rep.results])\nexcept adprof.UsageError as e:\n    print('usage', e)\n",
        ),
        a(
            "target-lambda",
            "lam = lambda xp, x, depth: xp.sum(xp.sin(x))\nrep = adprof.check(lam, **FAST)\nprint([r.verdict.kind for r in rep.results])\n",
        ),
        a("guard-max-base-nan", "usage(adprof.guard, ok, mode='traced', max_base=float('nan'), budget=15)\n"),
        a("guard-baseline-missing", "usage(adprof.guard, ok, mode='traced', baseline='missing.json', budget=15)\n"),
        a(
            "guard-baseline-report",
            "rep = adprof.check(ok, **FAST)\ng = adprof.guard(ok, mode='traced', baseline=rep, budget=15)\nassert g.ok, g\n",
        ),
        a("load-missing", "usage(adprof.load, 'missing.json')\n"),
        a("load-directory", "usage(adprof.load, '.')\n"),
        a("load-not-json", "open('x.json', 'w').write('nope')\nusage(adprof.load, 'x.json')\n"),
        a("compare-same-report", "rep = adprof.check(ok, **FAST)\nc = adprof.compare(rep, rep)\nprint(c.summary())\n"),
        a("compare-bad-type", "usage(adprof.compare, 3, 4)\n"),
        a(
            "to-json-unwritable",
            "rep = adprof.check(ok, **FAST)\ntry:\n    rep.to_json('/proc/nope.json')\nexcept (OSError, adprof.UsageError) as e:\n    print('refused', type(e).__name__)\nelse:\n    raise AssertionError('wrote into /proc')\n",
        ),
        a(
            "report-outputs",
            "rep = adprof.check(ok, **FAST)\nrep.to_html('r.html'); rep.to_markdown('r.md'); rep.to_json('r.json'); str(rep); repr(rep); rep._repr_mimebundle_()\n",
        ),
        a(
            "interrupt-sigint",
            "slow_src = '''import time\\nimport adprof\\n@adprof.chain(input_shape=(3,), depths=tuple(range(1, 9)))\\ndef slow(xp, x, depth):\\n    time.sleep(1.0)\\n    return xp.sum(xp.sin(x))\\n'''\n"
            "open('slow.py', 'w').write(slow_src)\n"
            "t0 = time.monotonic()\n"
            "threading.Timer(4.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
            "try:\n    r = adprof.check('slow.py', profile='fixed', mode='traced', structure=False, budget=40)\n"
            "except adprof.Interrupted as e:\n    print('interrupted with', e.report and len(e.report.results))\n"
            "else:\n    raise AssertionError(f'not interrupted: returned after {time.monotonic() - t0:.1f} s, '\n"
            "        + str([(x.verdict.kind, x.series.stop, [p.depth for p in x.series.points]) for x in r.results]))\n"
            "time.sleep(0.5)\n"
            "rep = adprof.check(ok, **FAST)\nassert [r.verdict.kind for r in rep.results] == ['linear']\n",
        ),
        a(
            "interrupt-keyboardinterrupt-in-thread-check",
            "out = []\nt = threading.Thread(target=lambda: out.append(adprof.check(ok, **FAST)))\nt.start()\n"
            "time.sleep(1.0)\ntry:\n    os.kill(os.getpid(), signal.SIGINT)\n    t.join()\nexcept KeyboardInterrupt:\n    t.join()\n",
            exits={0, 1, 130},
            check=None,
        ),
        a(
            "sigterm-during-check",
            "slow_src = '''import time\\nimport adprof\\n@adprof.chain(input_shape=(3,), depths=tuple(range(1, 9)))\\ndef slow(xp, x, depth):\\n    time.sleep(1.0)\\n    return xp.sum(xp.sin(x))\\n'''\n"
            "open('slow.py', 'w').write(slow_src)\n"
            "threading.Timer(4.0, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()\n"
            "try:\n    adprof.check('slow.py', profile='fixed', mode='traced', structure=False, budget=40)\n"
            "except adprof.Interrupted:\n    print('interrupted')\n",
            exits={0, 143, -15},  # the API promises Ctrl-C only: a plain script dies of SIGTERM
            check=None,
        ),
        a("check-notebook-magic-no-ipython", "import adprof.notebook\n"),
        a(
            "magic-line-bad-option",
            "from IPython.testing.globalipapp import start_ipython\nip = start_ipython()\nip.run_line_magic('load_ext', 'adprof')\n"
            "ip.run_line_magic('adprof', '--budget abc ok')\n",
        ),
        a(
            "magic-cell-no-chain",
            "from IPython.testing.globalipapp import start_ipython\nip = start_ipython()\nip.run_line_magic('load_ext', 'adprof')\n"
            "ip.run_cell_magic('adprof', '--mode traced', 'x = 1')\n",
        ),
        a(
            "magic-cell-chain",
            "from IPython.testing.globalipapp import start_ipython\nip = start_ipython()\nip.run_line_magic('load_ext', 'adprof')\n"
            "ip.run_cell_magic('adprof', '--mode traced --profile fixed --budget 15', "
            "'import adprof\\n@adprof.chain(input_shape=(3,), depths=(1,2,3))\\ndef m(xp, x, depth):\\n    return xp.sum(xp.sin(x))\\n')\n"
            "assert ip.user_ns['_adprof_report'].results\n",
        ),
    ]
    for c in cases:
        if c.name == "interrupt-sigint":
            c.known = (
                "under full load, Ctrl-C 4 s into adprof.check sometimes let it return normally (twice in three "
                "loaded runs, never in six runs alone): not diagnosed"
            )
    return cases


# --------------------------------------------------------------------------- plugin backends

PLUGIN_HEAD = """\
import math, os, sys, time
from adprof.backends.base import Backend, measure_phase
from adprof.backends.peer_common import failure
from adprof.model import Point
import numpy as np

BEHAVIOUR = os.environ.get("H4_PLUGIN", "ok")


class Plug(Backend):
    name = "plug"
    modes = ("traced",)
    phases = {"traced": ("record", "transform")}
    metrics = {"traced": ("python_calls",)}
    deciding_metrics = {"traced": ("python_calls",)}
    requires = ("numpy",)
    install_hint = "pip install numpy"

    def measure_point(self, chain, mode, depth, profile=None, *, calls=6, on_phase=None, counter_budget=None,
                      repeats=None):
        self.check_arguments(mode, profile)
        on_phase = on_phase or (lambda name, call: None)
        pt = Point(depth=depth)
        a = chain.make_input()
        if BEHAVIOUR == "raise" and depth >= 2:
            raise RuntimeError("plugin broke at depth %d" % depth)
        if BEHAVIOUR == "hang" and depth >= 2:
            time.sleep(1000)
        if BEHAVIOUR == "exit" and depth >= 2:
            os._exit(7)
        if BEHAVIOUR == "none":
            return None
        if BEHAVIOUR == "string":
            return "a point"
        try:
            y = measure_phase(pt, "record", lambda: chain(np, a, depth), on_phase, python_calls=True)
            pt.extra["value"] = float(y)
            measure_phase(pt, "transform", lambda: chain(np, a, depth), on_phase, repeats=repeats, python_calls=True)
        except Exception as exc:
            raise failure(exc, chain, depth, "transform", pt) from None
        m = pt.metrics.get("transform", {})
        if BEHAVIOUR == "nan":
            m["python_calls"] = float("nan")
        elif BEHAVIOUR == "negative":
            m["python_calls"] = -5 * depth
        elif BEHAVIOUR == "huge":
            m["python_calls"] = 1e308 * depth
        elif BEHAVIOUR == "bigint":
            m["python_calls"] = 10**400 * depth
        elif BEHAVIOUR == "expo-counter":
            m["python_calls"] = 2**depth
        elif BEHAVIOUR == "neg-time":
            pt.times["transform"] = -1.0
        elif BEHAVIOUR == "nan-time":
            pt.times["transform"] = float("nan")
        elif BEHAVIOUR == "wrong-phase":
            pt.times = {"nonsense": 1.0}
            pt.metrics = {}
        return pt
"""

PLUGIN_VARIANTS = {
    # a declaration that lies: a mode whose phases are missing
    "liar_modes": 'class LiarModes(Plug):\n    name = "liar_modes"\n    modes = ("traced", "eager")\n',
    # deciding on a metric it does not report
    "liar_metric": 'class LiarMetric(Plug):\n    name = "liar_metric"\n    deciding_metrics = {"traced": ("no_such_metric",)}\n',
    # a name that differs from the entry point's
    "misnamed": 'class Misnamed(Plug):\n    name = "something_else"\n',
    # no modes at all
    "nomodes": 'class NoModes(Plug):\n    name = "nomodes"\n    modes = ()\n    phases = {}\n    metrics = {}\n    deciding_metrics = {}\n',
    # requires a package that is not installed
    "needs": 'class Needs(Plug):\n    name = "needs"\n    requires = ("no_such_pkg_h4",)\n',
    # takes the name of a built-in backend
    "engine": 'class FakeEngine(Plug):\n    name = "engine"\n',
    # not a Backend at all
    "notabackend": "class NotABackend:\n    name = 'notabackend'\n",
    # a function, not a class
    "afunction": "def afunction():\n    return 3\n",
}


def _install_plugin(tmp: Path, import_side: str = "") -> None:
    site = tmp / "site"
    site.mkdir()
    src = import_side + PLUGIN_HEAD + "\n\n" + "\n\n".join(PLUGIN_VARIANTS.values())
    (site / "h4plug.py").write_text(src)
    info = site / "h4plug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: h4plug\nVersion: 0.1\n")
    classes = {
        "plug": "Plug",
        "liar_modes": "LiarModes",
        "liar_metric": "LiarMetric",
        "misnamed": "Misnamed",
        "nomodes": "NoModes",
        "needs": "Needs",
        "engine": "FakeEngine",
        "notabackend": "NotABackend",
        "afunction": "afunction",
    }
    (info / "entry_points.txt").write_text(
        "[adprof.backends]\n" + "".join(f"{k} = h4plug:{v}\n" for k, v in classes.items())
    )


def plugin_cases() -> list[Case]:
    g = "plugin"
    pp = f"{{site}}{os.pathsep}{ROOT}"
    base = [
        "check",
        "ok.py",
        "--no-color",
        "--no-structure",
        "--mode",
        "traced",
        "--budget",
        "15",
        "--cap",
        "1",
        "--json",
        "r.json",
    ]

    def p(name: str, backend: str, behaviour: str, exits: set[int], check: Check | None = None, side: str = "") -> Case:
        def setup(t: Path) -> None:
            _install_plugin(t, side)

        case = Case(
            g,
            name,
            [*base, "--backend", backend],
            exits,
            check,
            setup=setup,
            env={"H4_PLUGIN": behaviour},
            wall=40.0,
        )
        case.env["PYTHONPATH"] = pp  # filled in by run_case through the {site} placeholder
        return case

    broken = never_linear
    cases = [
        p("plugin-ok", "plug", "ok", {0}, all_linear),
        p("plugin-raise", "plug", "raise", {1}, both(broken, row_error("plugin broke"))),
        p("plugin-hang", "plug", "hang", {1}, broken),
        p("plugin-os-exit", "plug", "exit", {1}, broken),
        p("plugin-returns-none", "plug", "none", {1}, broken),
        p("plugin-returns-string", "plug", "string", {1}, broken),
        p("plugin-nan-counter", "plug", "nan", {1}, broken),
        p("plugin-negative-counter", "plug", "negative", {1}, broken),
        p("plugin-huge-counter", "plug", "huge", {0, 1}),
        p("plugin-bigint-counter", "plug", "bigint", {0, 1}),
        p("plugin-expo-counter", "plug", "expo-counter", {1}, broken),
        p("plugin-negative-time", "plug", "neg-time", {0, 1}),
        p("plugin-nan-time", "plug", "nan-time", {0, 1}),
        p("plugin-wrong-phase", "plug", "wrong-phase", {1}, broken),
        p("plugin-liar-modes-eager", "liar_modes", "ok", {1, 2}),
        p("plugin-liar-metric", "liar_metric", "ok", {1, 2}),
        p("plugin-misnamed", "misnamed", "ok", {0, 2}),
        p("plugin-no-modes", "nomodes", "ok", {2}),
        p("plugin-requires-missing", "needs", "ok", {2}, err_says("no_such_pkg_h4|install")),
        p("plugin-shadows-engine", "engine", "ok", {0}),
        p("plugin-not-a-backend", "notabackend", "ok", {2}),
        p("plugin-a-function", "afunction", "ok", {2}),
        p("plugin-import-prints", "plug", "ok", {0}, all_linear, side="print('\\x1b[2J hello from the plugin')\n"),
        p("plugin-import-exits", "plug", "ok", {2}, side="import sys\nsys.exit(4)\n"),
        p("plugin-backend-all", "all", "ok", {0, 1, 2}),
    ]
    for c in cases:
        if c.name == "plugin-import-prints":
            c.known = (
                "a plugin's module is imported in adprof's own process (to check its declarations): what it prints "
                "there is its own output, not a string adprof renders"
            )
    # the eager mode on the liar: declared, no phases
    cases[14].args[cases[14].args.index("traced")] = "eager"
    return cases


# --------------------------------------------------------------------------- pytest: the fixture in a project


def fixture_file(body: str, marker: str = "", head: str = "") -> str:
    return (
        "import pytest\n" + head + "\n\n" + (marker + "\n" if marker else "") + "def test_guarded(adprof_guard):\n"
        f"    {body}\n"
    )


def pytest_cases() -> list[Case]:
    g = "pytest"
    expo = (
        HEADER
        + "@adprof.chain(input_shape=(3, 3), reuse=2, depths=tuple(range(1, 9)))\ndef expo(xp, x, depth):\n"
        + "    y = x\n    for _ in range(depth):\n        y = (y * y) * 0.5\n    return xp.sum(y)\n"
    )
    files = {"expo.py": expo}

    def t(
        name: str, src: str, exits: set[int], check: Check | None = None, extra: dict[str, str] | None = None
    ) -> Case:
        return Case(g, name, [], exits, check, files={**files, **(extra or {})}, pytest_file=src, wall=60.0)

    cases = [
        t("fixture-ok", fixture_file('adprof_guard.scaling("ok.py::ok", mode="traced", budget=15)'), {0}),
        t(
            "fixture-expo-fails",
            fixture_file('adprof_guard.scaling("expo.py::expo", mode="traced", profile="v08", budget=15)'),
            {1},
            out_says("expo"),
        ),
        t(
            "fixture-parametrized",
            "import pytest\n\n@pytest.mark.parametrize('name', ['ok', 'ok'])\ndef test_p(adprof_guard, name):\n"
            "    adprof_guard.scaling(f'ok.py::{name}', mode='traced', budget=15)\n",
            {0},
        ),
        t(
            "fixture-shadowed-by-conftest",
            fixture_file('assert adprof_guard == "mine"'),
            {0},
            extra={"conftest.py": "import pytest\n\n@pytest.fixture\ndef adprof_guard():\n    return 'mine'\n"},
        ),
        t(
            "fixture-called-twice",
            "def test_twice(adprof_guard):\n    adprof_guard.scaling('ok.py::ok', mode='traced', budget=15)\n"
            "    adprof_guard.scaling('ok.py::ok', mode='traced', budget=15)\n",
            {0},
        ),
        t(
            "fixture-chain-object-import",
            "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport ok as okmod\n\n"
            "def test_obj(adprof_guard):\n    adprof_guard.scaling(okmod.ok, mode='traced', budget=15)\n",
            {0},
        ),
        t(
            "fixture-chain-in-test-fn",
            "import adprof\n\ndef test_inner(adprof_guard):\n"
            "    @adprof.chain(input_shape=(3,), depths=(1, 2, 3))\n    def inner(xp, x, depth):\n        return xp.sum(xp.sin(x))\n"
            "    adprof_guard.scaling(inner, mode='traced', budget=15)\n",
            {0, 1},
        ),
        t(
            "fixture-pyproject-table-ok",
            fixture_file('adprof_guard.scaling("ok.py::ok", mode="traced", budget=15)'),
            {0},
            extra={"pyproject.toml": "[tool.adprof.guard]\nmax_base = 1.2\n"},
        ),
        t(
            "fixture-in-thread",
            "import threading\n\ndef test_thread(adprof_guard):\n    errs = []\n"
            "    def go():\n        try:\n            adprof_guard.scaling('ok.py::ok', mode='traced', budget=15)\n"
            "        except BaseException as e:\n            errs.append(e)\n"
            "    t = threading.Thread(target=go); t.start(); t.join()\n    assert not errs, errs\n",
            {0},
        ),
        t(
            "fixture-no-plugin",
            fixture_file('adprof_guard.scaling("ok.py::ok")'),
            {1},
            out_says("fixture 'adprof_guard' not found"),
        ),
    ]
    cases[-1].env = {"PYTEST_ADDOPTS": "-p no:adprof"}
    return cases


GROUPS: dict[str, Callable[[], list[Case]]] = {
    "body": body_cases,
    "file": file_cases,
    "cmds": cmds_cases,
    "env": env_cases,
    "signals": signal_cases,
    "api": api_cases,
    "plugin": plugin_cases,
    "pytest": pytest_cases,
}


def all_cases() -> list[Case]:
    return [c for make in GROUPS.values() for c in make()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="groups, comma-separated")
    ap.add_argument("--case", default="", help="a regular expression on case names")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--markdown", default=None, help="write the results as a Markdown table here")
    args = ap.parse_args(argv)
    cases = all_cases()
    if args.only:
        cases = [c for c in cases if c.group in args.only.split(",")]
    if args.case:
        cases = [c for c in cases if re.search(args.case, c.name)]
    if args.list:
        for c in cases:
            print(f"{c.group:8} {c.name}")
        print(f"{len(cases)} cases")
        return 0
    t0 = time.monotonic()
    rows = []
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as pool:
        for case, o in pool.map(run_case, cases):
            found = problems(case, o)
            known = bool(found and case.known)
            failed += bool(found) and not known
            mark = "KNOWN" if known else "FAIL" if found else "ok"
            if known:
                found.append(f"known: {case.known}")
            print(
                f"{mark:5} {case.group:8} {case.name:44} exit {o.code} {o.wall:6.1f} s"
                + ("" if not found else "\n       " + "\n       ".join(found)),
                flush=True,
            )
            rows.append(
                {
                    "group": case.group,
                    "name": case.name,
                    "exit": o.code,
                    "wall": o.wall,
                    "problems": found,
                    "known": known,
                }
            )
            if found:
                (o.tmp / "adprof.stdout").write_text(o.out)
                (o.tmp / "adprof.stderr").write_text(o.err)
                print(f"       kept in {o.tmp}")
            else:
                shutil.rmtree(o.tmp, ignore_errors=True)
    total = time.monotonic() - t0
    print(f"{len(cases)} cases, {failed} failed, {total:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": rows, "failed": failed, "seconds": total}, indent=2))
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(rows))
    return 1 if failed else 0


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table: group, case, exit, seconds, outcome and what failed."""
    lines = ["| group | case | exit | s | result | problems |", "|---|---|---|---|---|---|"]
    for r in rows:
        mark = "known" if r["known"] else "FAIL" if r["problems"] else "ok"
        why = "; ".join(p.replace("|", "\\|").replace("\n", " ") for p in r["problems"])[:300]
        lines.append(f"| {r['group']} | `{r['name']}` | {r['exit']} | {r['wall']:.1f} | {mark} | {why} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
