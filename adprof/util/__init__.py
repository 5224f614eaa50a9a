"""Standard-library helpers every layer may use: process supervision (:mod:`~adprof.util.procs`), output
files (:mod:`~adprof.util.files`) and text safe for a terminal (:mod:`~adprof.util.text`).

They import nothing of adprof (the layer of :mod:`adprof.model`).
"""
