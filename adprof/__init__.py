"""adprof: a diagnostic profiler for autodiff cost pathologies.

Write chains with :func:`chain` (see the README), load them with :func:`load_chains`, and run
``adprof check my_chain.py``.
"""

from adprof.chain import Chain, ChainError, chain, load_chains, parse_target
from adprof.constants import __version__

__all__ = ["Chain", "ChainError", "__version__", "chain", "load_chains", "parse_target"]
