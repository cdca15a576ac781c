# source: https://github.com/facebookresearch/mmf/issues/1182
# family: tensors crossing processes (spawn children re-run the main module)
# symptom: calling the training entry point from a plain python script fails with "An attempt has been
#   made to start a new process before the current process has finished its bootstrapping phase"
# hazard: the top-level call that reaches torch.multiprocessing.spawn, with no __main__ guard
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase. ...
import torch
import torch.multiprocessing


def distributed_main(device_id, configuration, predicate=None):
    torch.manual_seed(device_id)
    print("worker", device_id, "of", configuration["world_size"], torch.randn(1).item())


def run(opts=None, predict=False):
    configuration = {"world_size": 2, "opts": opts or []}
    if configuration["world_size"] > 1:
        torch.multiprocessing.spawn(
            fn=distributed_main,
            args=(configuration, predict),
            nprocs=configuration["world_size"],
        )
    else:
        distributed_main(0, configuration, predict)


run(opts=["config=projects/hateful_memes/configs/mmbt/defaults.yaml", "run_type=train_val"])  # hazard: GML211
