# source: https://github.com/invoke-ai/InvokeAI/pull/8067 (code: invokeai/app/run_app.py at the PR's parent,
#   invokeai/app/util/torch_cuda_allocator.py)
# family: environment variables set too late
# symptom: app start stops with "RuntimeError: configure_torch_cuda_allocator() must be called before importing
#   torch." (run_app.py line 33); the PR moves the InvocationRegistry and load_custom_nodes imports, which import
#   torch, below the call
# hazard: configure_torch_cuda_allocator() writes PYTORCH_CUDA_ALLOC_CONF after run_app's earlier imports pulled in
#   torch (the allocator backend is parsed when torch loads); the project's own check raises before the write
# runs-on-cpu: yes (the project's check needs no GPU). `import torch` stands in for the two invocation imports
#   (baseinvocation and load_custom_nodes import torch); a SimpleNamespace for get_config(), with the
#   pytorch_cuda_alloc_conf the docs suggest
# printed (torch 2.13): RuntimeError: configure_torch_cuda_allocator() must be called before importing torch.
import logging
import os
import sys
from types import SimpleNamespace


def configure_torch_cuda_allocator(pytorch_cuda_alloc_conf: str, logger: logging.Logger):
    """Configure the PyTorch CUDA memory allocator."""

    if "torch" in sys.modules:
        raise RuntimeError("configure_torch_cuda_allocator() must be called before importing torch.")

    prev_cuda_alloc_conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", None)
    if prev_cuda_alloc_conf is not None:
        logger.warning("PYTORCH_CUDA_ALLOC_CONF is already set. Skipping configuration.")
        return

    # NOTE: It is important that this happens before torch is imported.
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = pytorch_cuda_alloc_conf  # hazard: GML302

    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("Attempted to configure the PyTorch CUDA memory allocator, but no CUDA devices are available.")
    logger.info(f"PyTorch CUDA memory allocator: {torch.cuda.get_allocator_backend()}")


def get_config():
    return SimpleNamespace(pytorch_cuda_alloc_conf="backend:cudaMallocAsync", port=9090)


def run_app() -> None:
    """The main entrypoint for the app."""
    # from invokeai.app.invocations.baseinvocation import InvocationRegistry
    # from invokeai.app.invocations.load_custom_nodes import load_custom_nodes
    import torch  # what the two invocation imports above bring in

    # Load config.
    app_config = get_config()
    logger = logging.getLogger("InvokeAI")

    # Configure the torch CUDA memory allocator.
    # NOTE: It is important that this happens before torch is imported.
    if app_config.pytorch_cuda_alloc_conf:
        configure_torch_cuda_allocator(app_config.pytorch_cuda_alloc_conf, logger)  # hazard-via: GML302

    # This import must happen after configure_torch_cuda_allocator() is called, because the module imports torch.
    logger.info(f"Using torch device: {'cuda' if torch.cuda.is_available() else 'cpu'}")


run_app()
