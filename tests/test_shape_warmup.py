"""Any axis, any shape (issue #34): where a backend compiles at each new shape, one untimed warm-up call per depth
comes first (``Point.warmup``); call 0 and the steady calls are never that compile, the schedule does not
extrapolate from it, and a warm-up has a timeout of its own. Deterministic fakes: no wall-time assertion."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from adprof.backends.peer_common import measure_eager
from adprof.chain import chain
from adprof.measure import client
from adprof.measure.series import compiles_per_shape, doublings, shapes_within, warmup_seconds, without_warmup
from adprof.model import WARMUP_PHASE, Point


@chain(input_shape=(2,))
def tiny(xp: Any, x: Any, depth: int) -> Any:
    return xp.sum(x)


class FakeShapes:
    """A backend that compiles at each new shape: the first call at a depth costs ``compile`` fake seconds more
    (and one compile), each later call ``steady``; a meter that reads the fake cost, not a clock."""

    def __init__(self, compile: float = 8.3, steady: float = 0.06) -> None:
        self.compile, self.steady = compile, steady
        self.shapes: set[int] = set()
        self.compiles = 0
        self.cost = 0.0
        self.phases: list[str] = []

    def forward(self, depth: int) -> Any:
        def fwd(x: float) -> tuple[float, int]:
            self.cost += self.steady
            if depth not in self.shapes:
                self.shapes.add(depth)
                self.compiles += 1
                self.cost += self.compile
            return 1.0, depth

        return fwd

    def backward(self, x: float, state: int) -> float:
        self.cost += self.steady
        return 1.0

    @contextlib.contextmanager
    def meter(self, phase: str, call: int) -> Iterator[dict[str, Any]]:
        out: dict[str, Any] = {}
        start = self.cost
        try:
            yield out
        finally:
            out["seconds"] = self.cost - start

    def read(self) -> tuple[int, float]:
        return self.compiles, self.compile * self.compiles


def _measure(fake: FakeShapes, depth: int, per_shape: bool) -> Point:
    return measure_eager(
        tiny,
        depth,
        calls=3,
        on_phase=lambda name, call: fake.phases.append(name),
        leaf=lambda: 0.0,
        forward=fake.forward(depth),
        backward=fake.backward,
        scalar=float,
        check=lambda loss, d: None,
        python_calls=False,
        meter=fake.meter,
        per_shape=fake.read if per_shape else None,
    )


def test_call0_is_no_compile_with_a_warmup_per_shape() -> None:
    fake = FakeShapes()
    for depth in (8, 16):
        pt = _measure(fake, depth, per_shape=True)
        assert pt.times["forward0"] == pytest.approx(fake.steady)  # the compile went to the warm-up
        assert pt.times["backward0"] == pytest.approx(fake.steady)
        assert pt.warmup["seconds"] == pytest.approx(fake.compile + 2 * fake.steady)
        assert pt.warmup["compiles"] == 1 and pt.warmup["compile_seconds"] == pytest.approx(fake.compile)
        assert WARMUP_PHASE in fake.phases and fake.phases.index(WARMUP_PHASE) < fake.phases.index("forward0")
        fake.phases.clear()


def test_without_the_warmup_call0_carries_the_compile() -> None:
    """The failure the warm-up fixes: call 0 at each new shape is a compile."""
    fake = FakeShapes()
    pt = _measure(fake, 8, per_shape=False)
    assert pt.times["forward0"] == pytest.approx(fake.compile + fake.steady)
    assert not pt.warmup


def test_the_schedule_does_not_extrapolate_from_a_compile() -> None:
    """Two points of steady calls and a compile per shape each: the prediction at the next depth is the steady
    calls', nowhere near the compile's."""
    from adprof.measure.schedule import predict_next

    fake = FakeShapes()
    pts = [_measure(fake, d, per_shape=True) for d in (1, 2)]
    pred = predict_next(pts, 3, exponential=True)
    assert max(pred.values()) < 10 * fake.steady < fake.compile


def test_wall_without_warmup_and_thinning() -> None:
    pt = Point(depth=8, times={"forward0": 0.01, "backward": 0.01}, warmup={"once": 2.0, "seconds": 5.0, "compiles": 3})
    assert without_warmup(pt, 7.5) == pytest.approx(0.5)
    assert without_warmup(Point(depth=1), 1.0) == 1.0
    assert compiles_per_shape(pt)
    assert not compiles_per_shape(Point(depth=8, times={"backward": 1.0}, warmup={"seconds": 0.5, "compiles": 0}))
    grid = [8, 10, 13, 16, 20, 25, 32, 40, 50, 64, 81, 102, 128]
    assert doublings(grid, 8) == [8, 16, 32, 64, 128]
    assert doublings([8, 10, 13, 16, 20, 25, 32, 40, 50], 8) == [8, 16, 32, 50]


def test_fewer_shapes_where_the_share_cannot_afford_every_compile() -> None:
    """Every new shape compiles (JAX eager: 25-39 compiles, seconds each under load): where the share affords fewer
    points than the doublings, they are spread from the first to the deepest depth, which is always reached; never
    fewer than three (a law, and the program's, are read over three)."""
    grid = [8, 10, 13, 16, 20, 25, 32, 40, 50, 64, 81, 102, 128, 161, 203, 256]
    assert shapes_within(grid, 8, 10) == [8, 16, 32, 64, 128, 256]  # room for all: the doublings
    assert shapes_within(grid, 8, 4) == [8, 25, 81, 256]  # geometric over the planned depths: x3.2 each
    assert shapes_within(grid, 8, 0) == shapes_within(grid, 8, 3) == [8, 50, 256]
    assert warmup_seconds(Point(depth=8, warmup={"seconds": 5.0, "compiles": 36})) == 5.0
    assert warmup_seconds(Point(depth=8, warmup={"once": 2.0})) == 0.0  # a one-time warm-up is no per-shape cost


def test_a_warmup_has_its_own_timeout() -> None:
    assert client._phase_limit(WARMUP_PHASE, 6.0) >= client.WARMUP_TIMEOUT
    assert client._phase_limit("backward0", 6.0) == 6.0


@pytest.mark.slow
def test_a_slow_first_use_is_no_timeout(tmp_path: Any) -> None:
    """A chain whose first call in the worker takes longer than the point's timeout (a fresh worker's first use of
    every primitive) is measured, not killed: the warm-up runs under its own timeout."""
    pytest.importorskip("jax")
    f = tmp_path / "slow_first.py"
    f.write_text(
        textwrap.dedent(
            """
            import time
            import adprof

            _calls = []

            @adprof.chain(input_shape=(2,))
            def slow_first(xp, x, depth):
                if not _calls:
                    _calls.append(1)
                    time.sleep(7.0)  # longer than the point's timeout below
                return xp.sum(xp.sin(x))
            """
        )
    )
    w = client.Worker()
    try:
        w.start()
        req = {"op": "point", "file": str(f), "chain": "slow_first", "backend": "jax", "mode": "eager", "depth": 2}
        req["calls"] = 2
        ans = w.request(req, 5.0)
        assert ans["ok"], ans
        assert ans["point"]["warmup"]["seconds"] > 5.0
    finally:
        w.kill()


@chain(input_shape=(3,))
def torch_first(xp: Any, x: Any, depth: int) -> Any:
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


def test_torch_traced_first_use_is_a_warmup_under_its_own_timeout() -> None:
    """torch traced: the process's first make_fx(grad) and the chain's first use of each op (6 s under load: the
    point was killed at its 6 s timeout before any depth finished) are a warm-up phase with its own timeout, kept in
    ``Point.warmup['once']`` (outside the point's wall); later points have none."""
    pytest.importorskip("torch")
    from adprof.backends import torch_backend

    phases: list[str] = []
    first = torch_backend.measure_traced(torch_first, 2, on_phase=lambda name, call: phases.append(name))
    assert phases[0] == WARMUP_PHASE and "record" in phases[1:]
    assert first.warmup["once"] > 0 and without_warmup(first, first.warmup["once"] + 0.5) == pytest.approx(0.5)
    phases.clear()
    again = torch_backend.measure_traced(torch_first, 3, on_phase=lambda name, call: phases.append(name))
    assert WARMUP_PHASE not in phases and not again.warmup
