"""Engine exceptions: every user mistake raises one of these with a one-line message."""


class EngineError(Exception):
    """Base class of the engine's errors."""


class ShapeError(EngineError, ValueError):
    """Shapes that do not fit an operation (checked at record time)."""


class DTypeError(EngineError, TypeError):
    """A dtype the operation does not accept, or two operands of different dtypes."""


class TransformError(EngineError, ValueError):
    """A transform asked of a graph that cannot take it (non-scalar grad, unbound input, ...)."""


class MissingRuleError(EngineError, NotImplementedError):
    """A primitive has no rule for the transform asked of it."""
