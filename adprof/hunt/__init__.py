"""``adprof hunt``: a search over generators of chain shapes, on every installed engine, for cost pathologies
nobody wrote a chain for (docs/hunt.md).

Modules, bottom up: :mod:`~adprof.hunt.gen` (the generator language: JSON, static analysis, the chain file it
writes), :mod:`~adprof.hunt.mutate` (drawing, mutating, reducing), :mod:`~adprof.hunt.targets` (what is hunted
and how each target is searched and checked), :mod:`~adprof.hunt.evaluate` (a generator's search points, a task
on the executors), :mod:`~adprof.hunt.fitness` (components, growth, the archive), :mod:`~adprof.hunt.search`,
:mod:`~adprof.hunt.shrink`, :mod:`~adprof.hunt.checks` (the check path), :mod:`~adprof.hunt.attribute` (the
class per engine; ``check --compare``), :mod:`~adprof.hunt.run` (a whole hunt), :mod:`~adprof.hunt.model` (its
report) and :mod:`~adprof.hunt.render` (terminal, JSON, HTML). The layer sits beside ``guard`` and below
``cli``: it measures through :mod:`adprof.measure`, decides through :mod:`adprof.report`, and renders its own
report.
"""
