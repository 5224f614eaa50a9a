"""``adprof guard`` and ``adprof flame`` through the command line."""

from __future__ import annotations

import subprocess
import sys

ROOT_CHAINS = "probes/chains.py"


def adprof(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "adprof", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_guard_holds_on_fixed_and_fails_on_v08():
    ok = adprof("guard", f"{ROOT_CHAINS}::mul", "--depths", "1,2,3,4,5,6,7,8")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "adprof guard: 2 of 2 held" in ok.stdout
    bad = adprof(
        "guard",
        f"{ROOT_CHAINS}::mul",
        "--profile",
        "v08",
        "--mode",
        "traced",
        "--depths",
        "1,2,3,4,5,6,7,8,9,10",
        "--max-base",
        "1.5",
    )
    assert bad.returncode == 1
    assert "- limit    max base 1.50" in bad.stdout and "+ measured base 2.00 per layer" in bad.stdout
    assert "0 of 1 held" in bad.stdout


def test_guard_reads_limits_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.adprof.guard]\nmax_base = 2.5\n")
    (tmp_path / "c.py").write_text(
        "import adprof\n\n@adprof.chain(input_shape=(2,), depths=(1, 2, 3, 4, 5, 6, 7, 8))\n"
        "def sq(xp, x, depth):\n    y = x\n    for _ in range(depth):\n"
        "        y = (y * y) * 0.5\n    return xp.sum(y)\n"
    )
    r = adprof("guard", "c.py", "--profile", "v08", "--mode", "traced", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max base 2.50" in r.stdout


def test_guard_bad_target_is_one_line_exit_2(tmp_path):
    r = adprof("guard", str(tmp_path / "missing.py"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_flame_is_a_subcommand():
    r = adprof("flame", "--help")
    assert r.returncode == 0 and "py-spy" in r.stdout
