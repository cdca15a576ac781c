"""gpumem-lint: find tensor-sharing and GPU-memory hazards in PyTorch code."""

__version__ = "0.1.0"
