"""Fixture: a Python file without any @adprof.chain."""


def helper(x):
    return x + 1
