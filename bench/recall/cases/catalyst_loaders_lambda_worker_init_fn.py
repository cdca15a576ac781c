# source: https://github.com/catalyst-team/catalyst/issues/1024 (code: catalyst/utils/loaders.py at 0a2afda,
#   get_loaders_from_params lines 318-321)
# family: tensors crossing processes: a lambda worker_init_fn put into a DataLoader's arguments by a library helper
# symptom: with num_workers > 0 set in the Config API, the run fails with "Can't pickle local object
#   'get_loaders_from_params.<locals>.<lambda>'"; the reporter found the lambda that the helper puts in the loader's
#   parameters
# hazard: `loader_params["worker_init_fn"] = lambda x: ...`, then `DataLoader(**loader_params)` with num_workers > 0
# runs-on-cpu: yes, under spawn (the script sets it, standing in for the reporter's platform, where workers are
#   spawned). A TensorDataset stands in for the experiment's datasets; the distributed and sampler branches are left
#   out
# printed (torch 2.13): AttributeError: Can't pickle local object 'get_loaders_from_params.<locals>.<lambda>'
import random
from collections import OrderedDict

import numpy as np
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset, TensorDataset


def set_global_seed(seed):
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    torch.manual_seed(seed)


def get_loaders_from_params(batch_size=1, num_workers=0, drop_last=False, loaders_params=None, initial_seed=42,
                            **data_params):
    default_batch_size = batch_size
    default_num_workers = num_workers
    loaders_params = loaders_params or {}
    datasets = dict(**data_params)

    loaders = OrderedDict()
    for name, datasource in datasets.items():
        assert isinstance(datasource, (Dataset, dict)), f"{datasource} should be Dataset or Dict"
        loader_params = loaders_params.pop(name, {})
        batch_size = loader_params.pop("batch_size", default_batch_size)
        num_workers = loader_params.pop("num_workers", default_num_workers)
        loader_params = {
            "batch_size": batch_size,
            "num_workers": num_workers,
            "pin_memory": torch.cuda.is_available(),
            "drop_last": drop_last,
            **loader_params,
        }
        loader_params["dataset"] = datasource
        loader_params["shuffle"] = name.startswith("train")
        if "worker_init_fn" not in loader_params:
            loader_params["worker_init_fn"] = lambda x: set_global_seed(initial_seed + x)  # hazard: GML212
        loaders[name] = DataLoader(**loader_params)
    return loaders


if __name__ == "__main__":
    mp.set_start_method("spawn")
    data_params = {"batch_size": 4, "num_workers": 2}
    datasets = {"train": TensorDataset(torch.randn(16, 3), torch.randint(0, 2, (16,))),
                "valid": TensorDataset(torch.randn(8, 3), torch.randint(0, 2, (8,)))}
    loaders = get_loaders_from_params(**data_params, **datasets)
    for name, loader in loaders.items():
        for features, targets in loader:
            pass
        print(name, "done")
