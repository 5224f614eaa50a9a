"""The chain format (:mod:`adprof.chain.spec`: the ``@adprof.chain`` decorator and :class:`Chain`) and
loading chain files safely (:mod:`adprof.chain.loader`). Layer 1: imports no other adprof module, only
numpy and the standard library."""

from adprof.chain import spec as _spec
from adprof.chain.loader import (
    ChainFile,
    ChainFileNotFoundError,
    ChainImportError,
    ChainNotFoundError,
    ChainSyntaxError,
    NoChainsError,
    NotAPythonFileError,
    TargetSyntaxError,
    chains_in,
    import_chain_file,
    load_chains,
    parse_target,
)
from adprof.chain.spec import *  # noqa: F403  (the format's names, listed once: spec's __all__)

__all__ = [
    *_spec.__all__,
    "ChainFileNotFoundError",
    "ChainFile",
    "ChainImportError",
    "ChainNotFoundError",
    "ChainSyntaxError",
    "NoChainsError",
    "NotAPythonFileError",
    "TargetSyntaxError",
    "chains_in",
    "import_chain_file",
    "load_chains",
    "parse_target",
]
