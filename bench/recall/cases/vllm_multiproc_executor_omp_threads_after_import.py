# source: https://github.com/vllm-project/vllm/pull/6802 (code: vllm/executor/multiproc_gpu_executor.py,
#   MultiprocessingGPUExecutor._init_executor, as vllm#6109 left it)
# family: environment variables set too late
# symptom: "OMP_NUM_THREADS must be set before `import torch` in order for it to have an effect on the CPU thread
#   parallelization of torch operations ... I thought that I had resolved this issue with #6109, but ... the code
#   change does not resolve the problem ... that is not the case for setting OMP_NUM_THREADS in
#   multiproc_gpu_executor.py"; the PR calls torch.set_num_threads() in the workers instead
# hazard: `os.environ["OMP_NUM_THREADS"] = "1"` in _init_executor, long after `import torch` (vllm imports it at
#   module level) sized the thread pool
# runs-on-cpu: yes. The executor keeps the environment lines and runs its CPU work in-process; the print shows the
#   thread count torch uses (1 is what the line asks for)
# printed (torch 2.13): torch threads: 2 (OMP_NUM_THREADS=1) on a 2-core machine
import os

import torch


def get_vllm_instance_id():
    return "vllm-instance-0"


class MultiprocessingGPUExecutor:
    """Python multiprocessing-based multi-GPU executor"""

    def __init__(self, tensor_parallel_size=1, pipeline_parallel_size=1):
        self.tensor_parallel_size = tensor_parallel_size
        self.pipeline_parallel_size = pipeline_parallel_size
        self._init_executor()

    def _init_executor(self) -> None:
        world_size = self.pipeline_parallel_size * self.tensor_parallel_size

        # Ensure that VLLM_INSTANCE_ID is set, to be inherited by workers
        os.environ["VLLM_INSTANCE_ID"] = get_vllm_instance_id()

        # Disable torch async compiling which won't work with daemonic processes
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

        # Set OMP_NUM_THREADS to 1 if it is not set explicitly, avoids CPU
        # contention amongst the shards
        if "OMP_NUM_THREADS" not in os.environ:
            os.environ["OMP_NUM_THREADS"] = "1"  # hazard: GML303

        self.world_size = world_size

    def load_model(self):
        weights = torch.randn(256, 256)
        return weights @ weights.t()


executor = MultiprocessingGPUExecutor()
executor.load_model()
print("torch threads:", torch.get_num_threads(), "(OMP_NUM_THREADS=%s)" % os.environ["OMP_NUM_THREADS"])
