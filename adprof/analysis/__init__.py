"""Analysis: pure functions on measured data (layer 3, beside measure; imports only model and constants).

:mod:`~adprof.analysis.growth` (growth fits of one cost series), :mod:`~adprof.analysis.classify`
(verdicts from a series), :mod:`~adprof.analysis.structure` (the predicted base from a recorded
forward graph), :mod:`~adprof.analysis.explain` (causes and remedies for a verdict).
"""
