"""The program layer (issue #34): each backend's forward read deterministically, its ops, FLOPs, bytes and
intermediates; exact counts on small programs, carried through the worker into the JSON."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest

import adprof
from adprof.backends import program
from adprof.backends.program import PROGRAM_KEYS, bounded, checked, matmul_flops, read_program
from adprof.model import Point
from probes import scaling


@adprof.chain(input_shape=(3, 5))
def mm(xp: Any, x: Any, depth: int) -> Any:
    """(3, 5) @ (5, 7): 2*3*7*5 FLOPs, then a sum."""
    w = xp.asarray(np.ones((5, 7)))
    return xp.sum(x @ w)


@adprof.chain(input_shape=(4,))
def sins(xp: Any, x: Any, depth: int) -> Any:
    """depth sines of 4 elements, then a sum: linear in depth."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


def test_matmul_flops_rules() -> None:
    assert matmul_flops((3, 5), (5, 7)) == 2 * 3 * 7 * 5
    assert matmul_flops((2, 3, 5), (5, 7)) == 2 * 2 * 3 * 7 * 5  # batch broadcast
    assert matmul_flops((5,), (5, 7)) == 2 * 7 * 5
    assert program.einsum_flops(["ij", "jk"], [(3, 5), (5, 7)]) == 2 * 3 * 5 * 7


def test_checked_refuses_bad_counts() -> None:
    assert checked({"ops": 1, "flops": 2, "bytes": 3, "intermediate_bytes": 4}) == dict(
        zip(PROGRAM_KEYS, (1, 2, 3, 4), strict=True)
    )
    assert checked({"ops": 1, "flops": -2, "bytes": 3, "intermediate_bytes": 4}) is None
    assert checked({"ops": 1}) is None
    assert checked(None) is None


def test_bound_gives_up_and_restores() -> None:
    """A reader that never returns is cut off at its bound (None), and the alarm is left as it was."""

    def forever(chain: Any, depth: int, profile: Any) -> Any:
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # a reader's own handler must not swallow the bound
                pass

    class Slow:
        name = "slow"
        read_program = staticmethod(forever)

    assert read_program(Slow(), sins, 1, None, seconds=0.05) is None
    import signal

    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    with bounded(0):  # no bound: nothing armed
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_unknown_backend_has_no_program() -> None:
    assert read_program("no-such-backend", sins, 3) is None


def _read(backend: str, chain: Any, depth: int, profile: str | None = None) -> dict[str, int]:
    reader = program.reader_for(backend)
    assert reader is not None, f"no program reader for {backend}"
    with bounded(120.0):  # the reader itself, its failures shown (read_program would turn them into None)
        out = checked(reader(chain, depth, profile))
    assert out is not None, f"bad counts on {backend}"
    return out


# -- engine -------------------------------------------------------------------------------------------------------


def test_engine_matmul_exact() -> None:
    p = _read("engine", mm, 1, "fixed")
    assert p["ops"] == 2  # matmul, reduce_sum
    assert p["flops"] == 2 * 3 * 7 * 5 + 3 * 7
    assert p["intermediate_bytes"] == (3 * 7 + 1) * 8
    assert p["bytes"] == (3 * 5 + 5 * 7 + 3 * 7) * 8 + (3 * 7 + 1) * 8


def test_engine_sin_chain_linear() -> None:
    counts = [_read("engine", sins, d, "fixed") for d in (4, 8, 16)]
    assert [c["ops"] for c in counts] == [5, 9, 17]
    assert [c["flops"] for c in counts] == [4 * 4 + 4, 8 * 4 + 4, 16 * 4 + 4]
    assert [c["intermediate_bytes"] for c in counts] == [(4 * 4 + 1) * 8, (8 * 4 + 1) * 8, (16 * 4 + 1) * 8]


def test_engine_attention_quadratic() -> None:
    """The score matrix is n x n: the intermediates grow ~n², the op count stays put."""
    a, b = _read("engine", scaling.attention, 32, "fixed"), _read("engine", scaling.attention, 64, "fixed")
    assert a["ops"] == b["ops"]
    assert 3.6 < b["intermediate_bytes"] / a["intermediate_bytes"] < 4.1
    assert 3.6 < b["flops"] / a["flops"] < 4.1


def test_engine_program_is_repeatable() -> None:
    assert _read("engine", scaling.pairs, 16, "fixed") == _read("engine", scaling.pairs, 16, "v08")


def test_point_program_round_trips_json() -> None:
    from adprof.measure.series import point_from_dict

    pt = Point(depth=3, program={"ops": 1, "flops": 2, "bytes": 3, "intermediate_bytes": 4})
    import dataclasses

    back = point_from_dict(json.loads(json.dumps(dataclasses.asdict(pt))))
    assert back.program == pt.program
    assert Point(depth=1).program is None


def test_worker_carries_program(tmp_path: Any) -> None:
    """The point a worker measures carries its program, read once per depth."""
    from adprof.measure.client import Worker

    w = Worker()
    try:
        w.start()
        req = {
            "op": "point",
            "file": scaling.__file__,
            "chain": "attention",
            "backend": "engine",
            "profile": "fixed",
            "mode": "traced",
            "depth": 8,
        }
        events: list[dict[str, Any]] = []
        ans = w.request(req, 60.0, events.append)
        assert ans["ok"], ans
        assert ans["point"]["program"] == _read("engine", scaling.attention, 8, "fixed")
        assert any(e.get("phase") == "program" for e in events)
        events.clear()
        again = w.request(req, 60.0, events.append)
        assert again["point"]["program"] == ans["point"]["program"]
        assert not any(e.get("phase") == "program" for e in events)  # read once per depth
    finally:
        w.kill()


# -- JAX ----------------------------------------------------------------------------------------------------------


def test_jax_matmul_exact() -> None:
    pytest.importorskip("jax")
    p = _read("jax", mm, 1)
    assert p["ops"] == 2  # dot_general, reduce_sum
    assert p["flops"] == 2 * 3 * 7 * 5 + (3 * 7 - 1)  # XLA counts n-1 adds per reduction
    assert p["intermediate_bytes"] == (3 * 7 + 1) * 8


def test_jax_counts_transcendentals() -> None:
    """XLA puts sin apart from flops: the program counts both."""
    pytest.importorskip("jax")
    a, b = _read("jax", sins, 8), _read("jax", sins, 16)
    assert (a["ops"], b["ops"]) == (9, 17)
    assert b["flops"] - a["flops"] == 8 * 4  # one per element per sine
    assert b["intermediate_bytes"] - a["intermediate_bytes"] == 8 * 4 * 8


def test_jax_attention_quadratic() -> None:
    pytest.importorskip("jax")
    a, b = _read("jax", scaling.attention, 32), _read("jax", scaling.attention, 64)
    assert a["ops"] == b["ops"]
    assert 3.6 < b["intermediate_bytes"] / a["intermediate_bytes"] < 4.1
    assert 3.6 < b["flops"] / a["flops"] < 4.1


def test_jax_scan_body_counts_per_trip() -> None:
    """A loop body is one equation in the jaxpr; the program counts it once per trip."""
    pytest.importorskip("jax")

    @adprof.chain(input_shape=(4,))
    def scanned(xp: Any, x: Any, depth: int) -> Any:
        import jax

        y, _ = jax.lax.scan(lambda c, _: (xp.sin(c), None), x, None, length=depth)
        return xp.sum(y)

    a, b = _read("jax", scanned, 8), _read("jax", scanned, 16)
    assert b["intermediate_bytes"] - a["intermediate_bytes"] == 8 * 4 * 8


# -- torch --------------------------------------------------------------------------------------------------------


def test_torch_matmul_exact() -> None:
    pytest.importorskip("torch")
    p = _read("torch", mm, 1)
    assert p["ops"] == 2  # matmul, sum (the constant is a leaf)
    assert p["flops"] == 2 * 3 * 7 * 5 + 3 * 7
    assert p["intermediate_bytes"] == (3 * 7 + 1) * 8


def test_torch_sin_chain_and_views() -> None:
    pytest.importorskip("torch")

    @adprof.chain(input_shape=(2, 2))
    def viewed(xp: Any, x: Any, depth: int) -> Any:
        y = x
        for _ in range(depth):
            y = xp.sin(xp.reshape(xp.transpose(y), (2, 2)))  # views: no new value
        return xp.sum(y)

    assert _read("torch", viewed, 5)["ops"] == 6
    assert [_read("torch", sins, d)["flops"] for d in (4, 8)] == [4 * 4 + 4, 8 * 4 + 4]


def test_torch_attention_quadratic() -> None:
    pytest.importorskip("torch")
    a, b = _read("torch", scaling.attention, 32), _read("torch", scaling.attention, 64)
    assert a["ops"] == b["ops"]
    assert 3.6 < b["intermediate_bytes"] / a["intermediate_bytes"] < 4.1
    assert 3.6 < b["flops"] / a["flops"] < 4.1


def test_backends_agree_on_dense_layers() -> None:
    """Four dense layers: 2*4*w*w FLOPs per layer dominate on every backend; the same intermediates."""
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    e, t, j = (_read(b, scaling.dense4, 64, "fixed" if b == "engine" else None) for b in ("engine", "torch", "jax"))
    assert e["intermediate_bytes"] == t["intermediate_bytes"] == j["intermediate_bytes"]
    assert e["ops"] == t["ops"] == j["ops"]
    for p in (e, t, j):
        assert abs(p["flops"] - (2 * 4 * 4 * 64 + 4 * 2 * 4 * 64 * 64)) < 4 * 64 * 6


# -- autograd, tinygrad, --cmd ------------------------------------------------------------------------------------


def test_autograd_matches_the_engine() -> None:
    pytest.importorskip("autograd")
    p = _read("autograd", mm, 1)
    assert p == {"ops": 2, "flops": 2 * 3 * 7 * 5 + 3 * 7, "bytes": 744, "intermediate_bytes": (3 * 7 + 1) * 8}
    for d in (8, 16):
        assert _read("autograd", scaling.dense4, d)["flops"] == _read("engine", scaling.dense4, d, "fixed")["flops"]
    a, b = _read("autograd", scaling.attention, 32), _read("autograd", scaling.attention, 64)
    assert a["ops"] == b["ops"] and 3.6 < b["intermediate_bytes"] / a["intermediate_bytes"] < 4.1


def test_tinygrad_lazy_graph() -> None:
    """Best effort: the lazy graph before fusion; a matmul is a broadcast multiply and a sum."""
    from extras import missing_reason

    if (missing := missing_reason("tinygrad")) is not None:  # not importorskip: the backend sets DEV before
        pytest.skip(missing)
    assert _read("tinygrad", mm, 1)["flops"] == 2 * 3 * 7 * 5 + 3 * 7
    assert [_read("tinygrad", sins, d)["ops"] for d in (8, 16)] == [9, 17]


def test_cmd_protocol_program() -> None:
    from adprof.backends import cmd
    from adprof.backends.cmd.process import CommandFailure

    counts = {"ops": 3, "flops": 10, "bytes": 80, "intermediate_bytes": 24}
    pt = Point(depth=2)
    cmd.apply_protocol(pt, {"backward_seconds": 0.1, "program": counts}, "traced")
    assert pt.program == counts and "unknown_keys" not in pt.extra
    with pytest.raises(CommandFailure):
        cmd.apply_protocol(Point(depth=2), {"program": {"ops": -1}}, "traced")
