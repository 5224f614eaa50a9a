"""Instruction counts of in-process phases (``--metric instructions`` on a chain file): the reusable piece.

Call counts cannot see work done inside C++ (torch's autograd engine, XLA's compiler); callgrind's
instruction counts can, and they are deterministic. The way (one valgrind'd worker per series):

* the parent starts the series' worker as ``valgrind --tool=callgrind --instr-atstart=no
  --collect-atstart=yes`` (:func:`adprof.measure.client.callgrind_argv`) with address randomization off,
  ``PYTHONHASHSEED=0``, a canonical environment and :data:`COUNT_ENV` set: the counts depend on the
  heap's layout (pointer-keyed tables), so everything that shifts it from run to run is fixed. Imports
  run without instrumentation (about 5x slower than natively, not 50x);
* :meth:`InstructionCounter.count` runs one phase: instrumentation is switched on at the first count
  and stays on (switching it drops valgrind's translations: ~30 s to re-translate XLA each time), the
  costs are zeroed, the phase runs, ``CALLGRIND_DUMP_STATS_AT`` writes them out, and the parent reads
  the ``totals:`` line of that dump (:func:`fill_counts`) as the phase's count: every thread's
  instructions between the two requests (XLA compiles on a thread of its own; a per-thread toggle such
  as ``torch._C._valgrind_toggle()`` sees only the caller's, about 1% of a compile);
* the backend measures each depth once, after an untimed warm-up call (at depth 1 once per process,
  and, where it is cheap, at the measured depth), and stores ``metrics[phase]["instructions"]`` and
  ``times[phase] = instructions / NOMINAL_INSTRUCTION_RATE``: the cap and the schedule's predictions
  see a deterministic native-time estimate, never valgrind's wall time.

The client requests are valgrind.h's macros, issued from Python through a few bytes of x86-64 machine
code called with ctypes (:class:`ClientRequests`); outside valgrind they are no-ops. Nothing to build,
no torch needed: the same piece serves every backend. To count a phase of a new mode (torch.compile's
compile, say): declare the mode in ``Backend.instruction_modes``, pass a measurer for it as
``peer_measure_point(..., counted={mode: fn})``, and in ``fn`` run each measured phase once through
:func:`counted_phase` after a warm-up (eager modes: :func:`adprof.backends.peer_common.measure_counted_eager`
does it all from the eager loop's callables; JAX compile: ``count_compile`` in the JAX backend).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
from collections.abc import Callable
from typing import Any, TypeVar

from adprof.constants import NOMINAL_INSTRUCTION_RATE
from adprof.model import Point

#: Set (to ``callgrind``) in the environment of a worker started under callgrind.
COUNT_ENV = "ADPROF_COUNTING"

# valgrind.h's client request on amd64: %rax -> the 6-word request block, %rdx = default (and result);
# the four rotations of %rdi (a no-op natively) and `xchg %rbx,%rbx` are valgrind's magic sequence.
_AMD64_REQUEST = bytes.fromhex(
    "4889f8"  # mov  %rdi,%rax        (the block)
    "4889f2"  # mov  %rsi,%rdx        (the default result)
    "48c1c703"  # rol $3,%rdi
    "48c1c70d"  # rol $13,%rdi
    "48c1c73d"  # rol $61,%rdi
    "48c1c733"  # rol $51,%rdi
    "4887db"  # xchg %rbx,%rbx        (%rdx = request(%rax))
    "4889d0"  # mov  %rdx,%rax
    "c3"  # ret
)
_RUNNING_ON_VALGRIND = 0x1001
_CALLGRIND = (ord("C") << 24) | (ord("T") << 16)  # VG_USERREQ_TOOL_BASE('C','T')
_DUMP_STATS, _ZERO_STATS, _TOGGLE_COLLECT, _DUMP_STATS_AT, _START_INSTRUMENTATION, _STOP_INSTRUMENTATION = range(
    _CALLGRIND, _CALLGRIND + 6
)


class CountingUnavailable(RuntimeError):
    """Instructions cannot be counted here (the message is one line, saying why)."""


class ClientRequests:
    """valgrind/callgrind client requests from Python (x86-64 only)."""

    def __init__(self) -> None:
        if platform.machine().lower() not in ("x86_64", "amd64"):
            machine = platform.machine()
            raise CountingUnavailable(f"callgrind client requests from Python need x86-64 (this is {machine})")
        try:
            self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        except (OSError, ValueError, AttributeError) as exc:
            raise CountingUnavailable(f"no executable page for the client-request stub ({exc})") from None
        self._page.write(_AMD64_REQUEST)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        proto = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint64)
        self._call = proto(addr)

    def request(self, code: int, arg1: int = 0, default: int = 0) -> int:
        block = (ctypes.c_uint64 * 6)(code, arg1, 0, 0, 0, 0)
        return int(self._call(block, default))

    def running_on_valgrind(self) -> bool:
        return self.request(_RUNNING_ON_VALGRIND) > 0

    def zero_stats(self) -> None:
        self.request(_ZERO_STATS)

    def dump_stats_at(self, label: str) -> None:
        text = ctypes.create_string_buffer(label.encode("utf-8", "replace"))  # read during the request
        self.request(_DUMP_STATS_AT, ctypes.addressof(text))

    def start_instrumentation(self) -> None:
        self.request(_START_INSTRUMENTATION)

    def stop_instrumentation(self) -> None:
        self.request(_STOP_INSTRUMENTATION)

    def toggle_collect(self) -> None:
        self.request(_TOGGLE_COLLECT)


def dump_totals(path: str) -> int:
    """The ``totals:`` count of one callgrind dump (the last line; ``summary:`` in the header counts the
    zeroed part too)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 4096))
        tail = f.read().decode("utf-8", "replace")
    for line in reversed(tail.splitlines()):
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise CountingUnavailable(f"no totals in callgrind dump {os.path.basename(path)}")


T = TypeVar("T")


class InstructionCounter:
    """Counts the instructions of phases in this process, which runs under callgrind (see the module docstring).

    The worker only issues the requests; the parent reads the dumps (:func:`fill_counts`): the path of
    callgrind's output (a random temporary directory) must not enter the worker, whose counts shift by up
    to 1% with the contents of its environment and heap."""

    def __init__(self, requests: ClientRequests | None = None) -> None:
        self.requests = requests or ClientRequests()
        if not self.requests.running_on_valgrind():
            raise CountingUnavailable("this worker does not run under valgrind")
        self.instrumenting = False
        self.dumps = 0

    def count(self, fn: Callable[[], T], label: str) -> tuple[int, T]:
        """``(dump number, fn())``: dump ``n`` (callgrind's ``<out-file>.<n>``) holds every thread's
        instructions while ``fn`` ran."""
        if not self.instrumenting:
            self.requests.start_instrumentation()
            self.instrumenting = True
        self.requests.zero_stats()
        out = fn()
        self.requests.dump_stats_at(label)
        self.dumps += 1
        return self.dumps, out


_counter: InstructionCounter | None = None


def counter() -> InstructionCounter:
    """This worker's counter (raises :class:`CountingUnavailable` outside a worker started under callgrind)."""
    global _counter
    if _counter is None:
        if os.environ.get(COUNT_ENV) != "callgrind":
            raise CountingUnavailable(f"--metric instructions: this worker does not run under callgrind ({COUNT_ENV})")
        _counter = InstructionCounter()
    return _counter


#: ``Point.extra`` key of a counted point's dumps, phase -> [dump number, label] (read by the parent).
DUMPS_KEY = "callgrind_dumps"


def counted_phase(pt: Point, phase: str, fn: Callable[[], T], on_phase: Callable[[str, int | None], None]) -> T:
    """Run ``fn`` once as phase ``phase`` of ``pt``, counted (``on_phase`` first: the parent's timeout restarts);
    the parent fills ``metrics[phase]["instructions"]`` and ``times[phase]`` from the dump (:func:`fill_counts`)."""
    on_phase(phase, None)
    label = f"{phase} depth {pt.depth}"
    dump, out = counter().count(fn, label)
    pt.extra.setdefault(DUMPS_KEY, {})[phase] = [dump, label]
    return out


def fill_counts(point: dict[str, Any], out_file: str) -> None:
    """In the parent, on a counted point as the worker sent it (``dataclasses.asdict`` of a Point): the counts
    of its dumps (``<out_file>.<n>``, each checked against its label, then removed: megabytes each for XLA)
    into ``metrics`` and ``times``; raises :class:`CountingUnavailable` when a dump is missing."""
    for phase, (dump, label) in point.get("extra", {}).pop(DUMPS_KEY, {}).items():
        path = f"{out_file}.{dump}"
        try:
            with open(path, "rb") as f:
                head = f.read(2048).decode("utf-8", "replace")
            if f"Trigger: Client Request: {label}\n" not in head:
                raise CountingUnavailable(f"callgrind dump {dump} is not that of {label}")
            instructions = dump_totals(path)
        except OSError as exc:
            raise CountingUnavailable(f"callgrind dump {dump} ({label}) unreadable: {exc.strerror}") from None
        finally:
            if os.path.exists(path):
                os.remove(path)
        point.setdefault("metrics", {}).setdefault(phase, {})["instructions"] = instructions
        point.setdefault("times", {})[phase] = instructions / NOMINAL_INSTRUCTION_RATE
        point["extra"]["times"] = f"instructions / {NOMINAL_INSTRUCTION_RATE:.3g} per s (nominal native speed)"


__all__ = [
    "COUNT_ENV",
    "DUMPS_KEY",
    "ClientRequests",
    "CountingUnavailable",
    "InstructionCounter",
    "counted_phase",
    "counter",
    "dump_totals",
    "fill_counts",
]
