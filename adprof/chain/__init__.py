"""The chain format (:mod:`adprof.chain.spec`: the ``@adprof.chain`` decorator and :class:`Chain`) and
loading chain files safely (:mod:`adprof.chain.loader`). Layer 1: imports no other adprof module, only
numpy and the standard library."""

from adprof.chain.loader import (
    ChainFileNotFoundError,
    ChainImportError,
    ChainNotFoundError,
    ChainSyntaxError,
    NoChainsError,
    NotAPythonFileError,
    TargetSyntaxError,
    chains_in,
    load_chains,
    parse_target,
)
from adprof.chain.spec import (
    COMMON_AXES,
    DEFAULT_AXIS,
    DEFAULT_DEPTHS,
    DEFAULT_INPUT_SHAPE,
    DEFAULT_MODES,
    DEFAULT_SEED,
    KNOWN_MODES,
    Chain,
    ChainError,
    ChainSignatureError,
    as_chain,
    chain,
)

__all__ = [
    "COMMON_AXES",
    "DEFAULT_AXIS",
    "DEFAULT_DEPTHS",
    "DEFAULT_INPUT_SHAPE",
    "DEFAULT_MODES",
    "DEFAULT_SEED",
    "KNOWN_MODES",
    "Chain",
    "ChainError",
    "ChainFileNotFoundError",
    "ChainImportError",
    "ChainNotFoundError",
    "ChainSignatureError",
    "ChainSyntaxError",
    "NoChainsError",
    "NotAPythonFileError",
    "TargetSyntaxError",
    "as_chain",
    "chain",
    "chains_in",
    "load_chains",
    "parse_target",
]
