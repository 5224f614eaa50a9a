"""Checkpoint chains: which checkpoint leaf stands for which traced value (tenferro's ``CheckpointNode``).

Every recorded op merges its inputs' chains (:func:`merge_chains`). In ``v08`` the merge copies the
left chain onto the right one without checking whether they are the same chain (tenferro's
``CheckpointNode::merge_chains``), so checkpointing every layer of a chain that uses its value twice
doubles the chain per layer; ``fixed`` deduplicates by identity.
"""

from __future__ import annotations

from . import profiles
from .counters import COUNTERS


class CheckpointNode:
    """One link of a checkpoint chain: ``leaf`` stands for ``target``."""

    __slots__ = ("leaf", "target", "prev")

    def __init__(self, leaf, target, prev: CheckpointNode | None) -> None:
        self.leaf = leaf
        self.target = target
        self.prev = prev


def chain_nodes(chain: CheckpointNode | None) -> list[CheckpointNode]:
    nodes = []
    while chain is not None:
        nodes.append(chain)
        chain = chain.prev
    return nodes


def chain_length(t) -> int:
    """Links in ``t``'s checkpoint chain (the record-time cost of merging it)."""
    return len(chain_nodes(t.chain))


def merge_chains(lhs: CheckpointNode, rhs: CheckpointNode) -> CheckpointNode:
    """The chain of an op whose inputs carry chains ``lhs`` and ``rhs``."""
    if profiles.current() == "v08":
        # upstream: rebuild the whole lhs list on top of rhs, never asking whether it is rhs itself
        merged = rhs
        copied = chain_nodes(lhs)
        for node in reversed(copied):
            merged = CheckpointNode(node.leaf, node.target, merged)
        COUNTERS.nodes_visited += len(copied)
        return merged
    if lhs is rhs:
        return lhs
    have = {id(n.leaf) for n in chain_nodes(rhs)}
    merged = rhs
    for node in reversed(chain_nodes(lhs)):
        if id(node.leaf) not in have:
            merged = CheckpointNode(node.leaf, node.target, merged)
    return merged


__all__ = ["CheckpointNode", "chain_length", "chain_nodes", "merge_chains"]
