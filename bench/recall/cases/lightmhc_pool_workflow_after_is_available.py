# source: https://github.com/instadeepai/LightMHC/issues/4 (code: lightmhc/inference.py, main and workflow)
# family: tensors crossing processes: a multiprocessing Pool forked after the parent initialised CUDA
# symptom: "CUDA error, related to multiprocessing": with model.use_gpu=true and n_cpus=32 the pool's workers fail in
#   workflow at `model = model.to(device)` (RemoteTraceback from pool.starmap); the parent called
#   torch.cuda.is_available() to pick the device before the stdlib Pool forked its workers
# hazard: `pool.starmap(workflow, workflow_args)`: forked workers run `workflow`, which moves the model to CUDA
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
from multiprocessing import Pool
from pathlib import Path

import torch
import torch.nn as nn


def build_model():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 14 * 3))


def workflow(conf, input_csv_path, output_dir, device, workflow_index=0):
    batches = [torch.randn(8, 16) for _ in range(4)]  # stand-in for the csv partition's dataloader
    model = build_model()
    model = model.to(device)
    preds = []
    with torch.no_grad():
        for batch in batches:
            preds.append(model(batch.to(device)).cpu())
    out = Path(output_dir) / f"workflow_{workflow_index}.pt"
    torch.save(torch.cat(preds), out)


def partition_csv(input_csv_path, n_cpus):
    return [Path(f"{Path(input_csv_path).stem}_cpu_{i}.csv") for i in range(n_cpus)]


def main(conf):
    device = (
        torch.device("cuda:0")
        if (conf["use_gpu"] and torch.cuda.is_available())
        else torch.device("cpu")
    )
    partition_list = partition_csv(conf["input_csv_path"], conf["n_cpus"])
    workflow_args = [
        (conf, path, conf["output_dir"], device, i) for i, path in enumerate(partition_list)
    ]
    with Pool(processes=conf["n_cpus"]) as pool:
        pool.starmap(workflow, workflow_args)  # hazard: GML204


if __name__ == "__main__":
    main({"use_gpu": True, "n_cpus": 4, "input_csv_path": "xray.lightmhc.csv", "output_dir": "."})
