"""adprof: a diagnostic profiler for autodiff cost pathologies."""

__version__ = "0.1.0"
