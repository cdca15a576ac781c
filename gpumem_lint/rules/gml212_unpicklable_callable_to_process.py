import re
from collections.abc import Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules._boundaries import loader_start_method, module_datasets, pickling_method_text, process_model
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.datasets import WORKER_LOADER
from gpumem_lint.semantic.given_keywords import GivenKeywords, spread_keywords
from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.pickling import enclosing_functions, held_by_instance, held_unpicklable
from gpumem_lint.semantic.processes import PROCESS_CROSSING, process_table

#: Crossings whose function is pickled to the child only when the child starts fresh (spawn, forkserver).
_STARTED = ("process",)
#: Crossings whose function is always pickled: pool and executor tasks travel through a queue;
#: `torch.multiprocessing.spawn` always spawns.
_ALWAYS_PICKLED = ("pool", "executor", "spawn")


class UnpicklableCallableToProcess(Rule):
    """
    ## What it does
    Flags a lambda, or a function defined inside another function, handed to another process
    where it must be pickled:
    - as a pool or executor task (`pool.map(lambda x: ..., items)`, `executor.submit(f, ...)`
      with a nested `f`), or to `torch.multiprocessing.spawn`, whatever the start method;
    - as `Process(target=...)` or in its `args` / `kwargs` (pickled with it), or as a `DataLoader`'s `collate_fn` / `worker_init_fn` with
      `num_workers` other than 0, when the children start with spawn or forkserver: chosen by the
      code (`multiprocessing_context="spawn"`, `set_start_method`, `get_context`) or by default:
      the default is spawn on macOS and Windows, and forkserver on Linux from Python 3.14 (set
      `target-version`); only Linux up to 3.13 forks by default. Code that relies on fork says so
      (`multiprocessing_context="fork"`, `mp.get_context("fork")`).

    ## Why is this bad?
    `pickle` sends a function by its qualified name, and neither `<lambda>` nor
    `main.<locals>.init` names anything the child can import. Measured on the installed torch
    by `tests/test_pickling_facts.py` (Python 3.11, torch 2.13 CPU): a lambda `collate_fn`, a
    nested `worker_init_fn` and a lambda `Process` target run under fork and raise
    `AttributeError: Can't pickle local object` under spawn; a lambda given to `Pool.map` raises
    it under fork too ([docs/facts.md](../docs/facts.md) F30). Code that works on Linux up to Python 3.13 breaks on 3.14, whose default
    is forkserver, and on macOS and Windows, whose default is spawn.

    ## Known problems
    Only a lambda written in place, or a name bound to a lambda or a nested `def` in the same
    function or a function it is nested in (a closure: `create_loader` inside `main` reads
    `main`'s `collate_fn`), or to a lambda at module level, is recognised, and, in a dataset, what its
    construction passes that the dataset keeps (also through `**kwargs` of a dict written out before the
    call: `kwargs = dict(transform=t)`): what `__init__` stores (`self.degrade = degrade`, or `self.n, self.degrade = n, degrade`)
    for a class of this module, the `transform`, `target_transform` and `transforms` keywords
    for a class of another module (torchvision's datasets keep them), and a lambda held by any of
    these: in a list, tuple or dict (a list filled by `append`, `extend` or `+=` too), among the arguments of an object built by a class
    (`Compose([...])`, `transforms.Lambda(...)`: spelled CapWords, as PEP 8 spells classes), stored on
    an object of a class of this module as it is built (by its `__init__`, a base class's, or a method
    they call: `self.len_fn = lambda tokens: ...`; not for a class with `__getstate__` or `__reduce__`), or
    returned by a function of this module, or by a method of the class whose method makes the loader
    (or its override in a subclass of the module); the same holds for a task, a target, a `collate_fn` or
    a `worker_init_fn` (`collate_fn=make_collate(pad)`, or `collate_fn=self._get_collate_fun()`, which
    returns a nested `def`). A dataset
    that is an instance of a class defined inside a function (`Dataset = get_dataset(opt)`, whose
    body defines and returns `class Dataset(...)`) cannot be pickled either: pickle finds a class by
    its qualified name, `get_dataset.<locals>.Dataset`. A `DataLoader` subclass of the module that
    defines no `__init__` is built as a `DataLoader` is; one that does makes its loader in
    `super().__init__(...)`, with the workers its
    constructions ask for (`Masking(data, num_workers=4)`, passed on through `**kwargs`). A loader's
    keywords include those of a dict written out before the call and the keys stored into it since
    (`params["worker_init_fn"] = lambda w: ...`, then `DataLoader(**params)`), and, for a `**kwargs` the
    function around it hands on, what the module's calls of that function put in it, three calls up
    (`make_loader(data, collate_fn=f, num_workers=2)`); a keyword that a named parameter of a function on
    the way takes stops there. A lambda reached through a `functools.partial`, an
    attribute set later, or a function of another module is not seen.

    ## Example
    ```python
    loader = DataLoader(data, batch_size=32, num_workers=4, collate_fn=lambda batch: batch,
                        multiprocessing_context="spawn")
    ```

    ## Use instead
    ```python
    def keep_as_list(batch):
        return batch

    loader = DataLoader(data, batch_size=32, num_workers=4, collate_fn=keep_as_list,
                        multiprocessing_context="spawn")
    ```

    ## Fix safety
    There is no automatic fix: the function must move to module level, where what it captured
    from the enclosing function is no longer in scope.

    ## References
    - [multiprocessing: the spawn and forkserver start methods pickle the process object](https://docs.python.org/3/library/multiprocessing.html#the-spawn-and-forkserver-start-methods)
    - [pickle: what can be pickled](https://docs.python.org/3/library/pickle.html#what-can-be-pickled-and-unpickled)
    """

    code = "GML212"
    name = "unpicklable-callable-to-process"
    severity = Severity.ERROR
    summary = "A lambda or nested function handed to a process that receives it by pickling"
    fix_title = "Define the function at module level"
    triggers = ("multiprocessing", "ProcessPoolExecutor", "DataLoader")
    file_trigger = re.compile(f"{PROCESS_CROSSING.pattern}|{WORKER_LOADER.pattern}")
    VALID = (
        # the helper returns a module-level function, which pickle finds by its name
        """
import random

from torch.utils.data import DataLoader


def seed_worker(worker_id):
    random.seed(worker_id)


def get_worker_init():
    return seed_worker


def loader(data):
    return DataLoader(data, num_workers=2, worker_init_fn=get_worker_init(), multiprocessing_context="spawn")
""",
        # the method returns a module-level function, which pickle finds by its name
        """
import torch
from torch.utils.data import DataLoader


def stack(batch):
    return torch.stack(batch)


class Job:
    def __init__(self, data):
        self.data = data

    def _get_collate_fun(self):
        return stack

    def loader(self):
        return DataLoader(self.data, num_workers=2, collate_fn=self._get_collate_fun(), multiprocessing_context="spawn")
""",
        # the helper's own `collate_fn` parameter takes the caller's lambda: its `**kwargs` does not pass it on
        """
from torch.utils.data import DataLoader


def make_loader(data, collate_fn=None, **kwargs):
    if collate_fn is not None:
        data = [collate_fn([item]) for item in data]
    return DataLoader(data, batch_size=2, **kwargs)


def main(data):
    return list(make_loader(data, collate_fn=lambda batch: batch[0] * 2, num_workers=2))
""",
        # the options given to the worker loader were bound again after the lambda went in
        """
from torch.utils.data import DataLoader


def main(data):
    options = {"batch_size": 2}
    options["collate_fn"] = lambda batch: batch
    preview = options["collate_fn"](data[:2])
    options = {"batch_size": 2, "num_workers": 2}
    return preview, list(DataLoader(data, **options))
""",
        # what the process is started with is a module-level function
        """
import multiprocessing as mp


def make_env(name):
    def build():
        return name

    return build


def make_named(name):
    return name


def run(env_fn):
    print(env_fn())


if __name__ == "__main__":
    mp.set_start_method("spawn")
    worker = mp.Process(target=run, args=(make_named,))
    worker.start()
    worker.join()
""",
        # the enclosing function's parameter: what its caller passes, a module-level function
        """
import torch
from torch.utils.data import DataLoader


def stack(batch):
    return torch.stack(batch)


def train(data, collate_fn):
    def create_loader(dataset):
        return DataLoader(dataset, batch_size=2, num_workers=2, collate_fn=collate_fn)

    return [batch.shape for batch in create_loader(data)]


if __name__ == "__main__":
    train([torch.randn(3) for _ in range(8)], stack)
""",
        # the factory returns a class defined at module level, which pickle finds by its name
        """
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, split):
        self.images = [torch.randn(3, 8, 8) for _ in range(4)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index]


def get_dataset(name):
    return {"images": Images}[name] if name != "default" else Images


def main():
    Chosen = get_dataset("images")
    loader = DataLoader(Chosen("train"), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    return [batch.shape for batch in loader]
""",
        # a DataLoader subclass whose every construction starts no workers
        """
import torch
from torch.utils.data import DataLoader


class PaddedLoader(DataLoader):
    def __init__(self, dataset, batch_size=1, **kwargs):
        super().__init__(dataset, batch_size, collate_fn=lambda items: torch.stack(items), **kwargs)


def loader(data):
    return PaddedLoader(data, batch_size=16, num_workers=0)
""",
        # a factory whose result is an instance of a module-level class: pickled by reference
        """
import torch
from torch.utils.data import DataLoader


class PadCollate:
    def __init__(self, value):
        self.value = value

    def __call__(self, batch):
        return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=self.value)


def make_collate(value):
    return PadCollate(value)


def loader(data):
    return DataLoader(data, num_workers=2, collate_fn=make_collate(0.0), multiprocessing_context="spawn")
""",
        """
import multiprocessing as mp

def work(x):
    return x * 2

if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(pool.map(work, [1, 2]))
""",
        """
import multiprocessing as mp

def main():
    def report():
        print("child")
    mp.get_context("fork").Process(target=report).start()  # fork copies the function
""",
        """
from torch.utils.data import DataLoader

def main(data):
    loader = DataLoader(data, batch_size=2, num_workers=2, collate_fn=lambda batch: batch, multiprocessing_context="fork")
    return list(loader)
""",
        # the dataset uses the function in `__init__` and keeps only what it computed
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Scaled(Dataset):
    def __init__(self, values, scale):
        self.values = [scale(v) for v in values]

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        return torch.tensor(self.values[i])

def main(values):
    data = Scaled(values, scale=lambda v: v * 2)
    return list(DataLoader(data, num_workers=2, multiprocessing_context="spawn"))
""",
        # a function of this module given the pipeline: nothing says the dataset it returns keeps it
        """
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import MNIST

def mnist(root, transform):
    images = MNIST(root, download=True)
    return [(transform(image), label) for image, label in images]

def main(root):
    data = mnist(root, transform=transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: x * 2)]))
    return DataLoader(data, batch_size=64, num_workers=2, multiprocessing_context="spawn")
""",
        # the class says how it pickles: `__getstate__` leaves the lambda out of what the workers get
        """
import multiprocessing as mp

from torch.utils.data import DataLoader, Dataset


class Scaled(Dataset):
    def __init__(self, values, factor):
        self.values, self.factor = values, factor
        self.scale = lambda x: x * factor

    def __getstate__(self):
        return {"values": self.values, "factor": self.factor}

    def __setstate__(self, state):
        self.__init__(state["values"], state["factor"])

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        return self.scale(self.values[i])


if __name__ == "__main__":
    mp.set_start_method("spawn")
    print(list(DataLoader(Scaled([1.0, 2.0], 3.0), num_workers=2)))
""",
        # the dict with the lambda is bound to `kwargs` after the dataset is built, for a call run in this process
        """
import multiprocessing as mp

from torch.utils.data import DataLoader
from torchvision import datasets


def describe(target_transform):
    return target_transform(3)


def main():
    kwargs = dict(root="data", download=True)
    train = datasets.MNIST(train=True, **kwargs)
    kwargs = {"target_transform": lambda y: y % 2}
    print(describe(**kwargs))
    return DataLoader(train, batch_size=64, num_workers=2)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    print(len(main()))
""",
    )
    INVALID = (
        # the dataset keeps its transform by a tuple assignment
        Invalid(
            """
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class Scans(Dataset):
    def __init__(self, paths, transform=None):
        self.paths, self.transform = paths, transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return self.transform(self.paths[index])


def main(paths):
    pipeline = transforms.Compose([transforms.Lambda(lambda path: path.upper())])
    return list(DataLoader(Scans(paths, pipeline), num_workers=2, multiprocessing_context="spawn"))
""",
            (18,),
        ),
        # a DataLoader subclass of the module that adds no constructor builds a DataLoader
        Invalid(
            """
import torch


class Loader(torch.utils.data.DataLoader):
    pass


def main(data):
    return list(Loader(data, num_workers=2, collate_fn=lambda batch: batch, multiprocessing_context="spawn"))
""",
            (10,),
        ),
        # the transform pipeline is a list a helper fills with `append`: the lambda goes with the dataset
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


def get_transform(size):
    steps = [transforms.ToTensor()]
    steps.append(transforms.Lambda(lambda image: image[:, :size, :size]))
    return transforms.Compose(steps)


class Pictures(Dataset):
    def __init__(self, images, size):
        self.images = images
        self.transform = get_transform(size)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.transform(self.images[index])


def main(images):
    return list(DataLoader(Pictures(images, 16), num_workers=2, multiprocessing_context="spawn"))
""",
            (9,),
        ),
        # the lambda is stored into the keywords the loader is given
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


def seed_worker(seed):
    torch.manual_seed(seed)


def make_loaders(datasets, base_seed=0, **options):
    loaders = {}
    for name, data in datasets.items():
        params = {"batch_size": 4, "num_workers": 2, **options}
        params["dataset"] = data
        if "worker_init_fn" not in params:
            params["worker_init_fn"] = lambda worker: seed_worker(base_seed + worker)
        loaders[name] = DataLoader(**params)
    return loaders
""",
            (16,),
        ),
        # a helper hands its `**kwargs` on to the loader: the caller's keywords reach it
        Invalid(
            """
from torch.utils.data import DataLoader


def padded(size):
    def collate(items):
        return [item[:size] for item in items]

    return collate


def make_loader(data, batch_size=1, **kwargs):
    return DataLoader(data, batch_size=batch_size, multiprocessing_context="spawn", **kwargs)


def main(data):
    return list(make_loader(data, batch_size=8, collate_fn=padded(4), num_workers=2))
""",
            (17,),
        ),
        # the tokenizer's base class stores a lambda on it as it is built: the dataset keeps the tokenizer
        Invalid(
            """
import multiprocessing as mp

from torch.utils.data import DataLoader, Dataset


class Vocabulary:
    def __init__(self, add_bounds):
        self._set_length_fn(add_bounds)

    def _set_length_fn(self, add_bounds):
        self.length_fn = (lambda tokens: len(tokens) + 2) if add_bounds else len


class Tokenizer(Vocabulary):
    def __init__(self):
        super().__init__(add_bounds=True)


class Sentences(Dataset):
    def __init__(self, texts, tokenizer):
        self.texts = texts
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        return self.tokenizer.length_fn(self.texts[i])


if __name__ == "__main__":
    mp.set_start_method("spawn")
    loader = DataLoader(Sentences(["ab", "abc"], Tokenizer()), num_workers=2)
    print(list(loader))
""",
            (12,),
        ),
        # the dataset's own `__init__` stores the lambda on it
        Invalid(
            """
import multiprocessing as mp

from torch.utils.data import DataLoader, Dataset


class Scaled(Dataset):
    def __init__(self, values, factor):
        self.values = values
        self.scale = lambda x: x * factor

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        return self.scale(self.values[i])


if __name__ == "__main__":
    mp.set_start_method("spawn")
    loader = DataLoader(Scaled([1.0, 2.0], 3.0), num_workers=2)
    print(list(loader))
""",
            (10,),
        ),
        # `**kwargs` hands the dataset the keywords of the dict bound to it: its `target_transform` is kept
        Invalid(
            """
import multiprocessing as mp

from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    kwargs = dict(root="data", download=True, target_transform=transforms.Lambda(lambda y: y % 2))
    train = datasets.MNIST(train=True, **kwargs)
    kwargs = {"num_workers": 2}
    return DataLoader(train, batch_size=64, **kwargs)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    print(len(main()))
""",
            (9,),
        ),
        # a `Process` is pickled with its `args`: the nested `build` goes with it
        Invalid(
            """
import multiprocessing as mp


def make_env(name):
    def build():
        return name

    return build


def make_named(name):
    return name


def run(env_fn):
    print(env_fn())


if __name__ == "__main__":
    mp.set_start_method("spawn")
    worker = mp.Process(target=run, args=(make_env("cartpole"),))
    worker.start()
    worker.join()
""",
            (22,),
        ),
        # a nested helper reads the collate function its enclosing function defines
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


def train(data):
    def collate_fn(batch):
        return torch.stack(batch)

    def create_loader(dataset):
        return DataLoader(dataset, batch_size=2, num_workers=2, collate_fn=collate_fn)

    return [batch.shape for batch in create_loader(data)]
""",
            (11,),
        ),
        # the dataset's class is defined by a factory function: pickle looks it up as `get_dataset.<locals>.Dataset`
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, split):
        self.images = [torch.randn(3, 8, 8) for _ in range(4)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index]


def get_dataset(base):
    class Combined(base):
        pass

    return Combined


def main():
    Combined = get_dataset(Images)
    loader = DataLoader(Combined("train"), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    return [batch.shape for batch in loader]
""",
            (26,),
        ),
        Invalid(
            """
import multiprocessing as mp

if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(pool.map(lambda x: x * 2, [1, 2]))
""",
            (6,),
        ),
        Invalid(
            """
from torch.utils.data import DataLoader

def main(data):
    def init(worker_id):
        print(worker_id)
    loader = DataLoader(data, num_workers=2, worker_init_fn=init, multiprocessing_context="spawn")
    return list(loader)
""",
            (7,),
        ),
        Invalid(
            """
from torch.utils.data import DataLoader

def main(data):
    loader = DataLoader(data, batch_size=2, num_workers=2, collate_fn=lambda batch: batch)  # spawn on macOS
    return list(loader)
""",
            (5,),
        ),
        # kept by the dataset, the lambda is pickled with it for each worker
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset

class Degraded(Dataset):
    def __init__(self, images, degrade):
        self.images = images
        self.degrade = degrade

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.degrade(self.images[i])

def main(images):
    data = Degraded(images, degrade=lambda x: x + 0.1 * torch.randn_like(x))
    return list(DataLoader(data, batch_size=2, num_workers=2))  # spawn on macOS and Windows
""",
            (17,),
        ),
        # a pipeline holding a lambda, made by a function and kept by the dataset: pickled with it
        Invalid(
            """
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

def make_transforms(size):
    train = transforms.Compose([transforms.Resize(size), lambda image: image.convert("RGB"), transforms.ToTensor()])
    test = transforms.Compose([transforms.Resize(size), transforms.ToTensor()])
    return train, test

class Images(Dataset):
    def __init__(self, images, transform):
        self.images = images
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i])

if __name__ == "__main__":
    train_transform, _ = make_transforms(224)
    loader = DataLoader(Images([], train_transform), batch_size=8, num_workers=4)  # spawn on macOS and Windows
""",
            (7,),
        ),
        # a torchvision dataset keeps its `transform=`: the lambda inside is pickled for each worker
        Invalid(
            """
import torch
from torchvision import datasets, transforms

def loaders(root):
    pad = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda x: torch.nn.functional.pad(x, (4, 4)))])
    train = datasets.CIFAR10(root, train=True, download=True, transform=pad)
    return torch.utils.data.DataLoader(train, batch_size=64, num_workers=2, multiprocessing_context="spawn")
""",
            (6,),
        ),
        # a DataLoader subclass passes the lambda to `super().__init__`; a construction asks for workers
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


class PaddedLoader(DataLoader):
    def __init__(self, dataset, batch_size=1, **kwargs):
        super().__init__(dataset, batch_size, collate_fn=lambda items: torch.stack(items), **kwargs)


def loader(data):
    return PaddedLoader(data, batch_size=16, num_workers=4)
""",
            (8,),
        ),
        # the factory returns a function defined inside it
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


def make_collate(value):
    def collate(batch):
        return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=value)

    return collate


def loader(data):
    return DataLoader(data, num_workers=2, collate_fn=make_collate(0.0), multiprocessing_context="spawn")
""",
            (14,),
        ),
        # the method returns a function defined inside it (kge's `collate_fn=self._get_collate_fun()`)
        Invalid(
            """
import torch
from torch.utils.data import DataLoader


class TrainingJob:
    def __init__(self, data):
        self.data = data

    def _get_collate_fun(self):
        def collate(batch):
            return torch.stack(batch)

        return collate

    def loader(self):
        return DataLoader(self.data, num_workers=2, collate_fn=self._get_collate_fun(), multiprocessing_context="spawn")
""",
            (17,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        scopes = ctx.shared(_enclosing)
        yield from self._crossings(ctx, scopes)
        yield from self._loaders(ctx, scopes)

    def _crossings(self, ctx: FileContext, scopes) -> Iterator[Report]:
        if not PROCESS_CROSSING.search(ctx.text):
            return
        model = process_model(ctx)
        for _, crossing in model.crossings():
            if crossing.kind not in (*_STARTED, *_ALWAYS_PICKLED) or crossing.target is None:
                continue
            scope = scopes.get(id(crossing.node))
            # The target, then what a `Process` or `spawn` is started with: pickled with it (`args=(make_env(),)`).
            handed = [crossing.target]
            if crossing.kind in ("process", "spawn"):
                handed += [value for name in ("args", "kwargs") if (value := keyword(crossing.node, name)) is not None]
            found_in = next(
                ((value, held) for value in handed if (held := held_unpicklable(value, scope, ctx.module)) is not None),
                None,
            )
            if found_in is None:
                continue
            value, (node, found) = found_in
            method = model.start_method(crossing)
            if crossing.kind in _ALWAYS_PICKLED:
                how = "pickled for its workers whatever the start method"
            elif method.pickles:
                how = f"pickled for the child under {pickling_method_text(method)}"
            else:
                continue
            # An executor pickles in a feeder thread: the error reaches the task's future.
            raises = "its future's `result()` raises" if crossing.kind == "executor" else "the call raises"
            yield Report(value, f"{_what(ctx, value, node, found)}, {how}: {raises} {found.error}")

    def _loaders(self, ctx: FileContext, scopes) -> Iterator[Report]:
        if not WORKER_LOADER.search(ctx.text):
            return
        yield from self._dataset_attributes(ctx, scopes)
        given = ctx.shared(_given_keywords)
        for loader in module_datasets(ctx).worker_loaders:
            for argument, value, scope in given.of(loader.node):
                if argument not in ("collate_fn", "worker_init_fn"):
                    continue
                held = held_unpicklable(value, scope, ctx.module)
                if held is None:
                    continue
                method = loader_start_method(ctx, loader)
                if not method.pickles:
                    continue
                node, found = held
                yield Report(
                    value,
                    f"{_what(ctx, value, node, found)}, passed as `{argument}` to workers started with "
                    f"{pickling_method_text(method)}: starting them raises {found.error}",
                )

    def _dataset_attributes(self, ctx: FileContext, scopes) -> Iterator[Report]:
        """A dataset loaded by workers keeps what it was built with: `Folder(root, degradation=lambda
        x: ...)` when `__init__` stores it (`self.degradation = degradation`), or the `transform=` of a
        dataset class of another module (torchvision's keep it), and what that holds (a pipeline
        with a lambda in it). Pickling the dataset for a worker pickles them."""
        found = module_datasets(ctx)
        reported: set[int] = set()
        for loader in found.worker_loaders:
            construction = _construction(loader, found)
            method = loader_start_method(ctx, loader)
            if construction is None or not method.pickles:
                continue
            scope = scopes.get(id(construction))
            local = held_unpicklable(construction, scope, ctx.module)
            if local is not None and local[0] is construction and id(construction) not in reported:
                reported.add(id(construction))  # `Dataset(opt)`, `Dataset` a class a function defines
                yield Report(
                    construction,
                    f"`{_short(ctx, construction)}` is {local[1].kind}; pickled for workers started with "
                    f"{pickling_method_text(method)}, it raises {local[1].error}",
                )
                continue
            own = held_by_instance(dotted_name(construction.func) or "", ctx.module)
            if own is not None and id(own[0]) not in reported:
                reported.add(id(own[0]))
                yield Report(
                    own[0],
                    f"`{_short(ctx, own[0])}` is {own[1].kind} that `{_short(ctx, construction.func)}` stores on "
                    f"the dataset as it is built; pickled for workers started with {pickling_method_text(method)}, "
                    f"it raises {own[1].error}",
                )
            for value, attribute in _kept_arguments(construction, found, ctx.module, scope):
                held = held_unpicklable(value, scope, ctx.module)
                if held is None or id(held[0]) in reported:
                    continue
                node, callable_ = held
                reported.add(id(node))
                kept = f"the dataset keeps (`self.{attribute}`)"
                if node is not value:
                    kept = f"in `{_short(ctx, value)}`, which {kept}"
                yield Report(
                    node,
                    f"`{_short(ctx, node)}` is {callable_.kind} {kept}; pickled for workers started with "
                    f"{pickling_method_text(method)}, it raises {callable_.error}",
                )


def _what(ctx: FileContext, value: cst.BaseExpression, node: cst.BaseExpression, found) -> str:
    """`init` is a lambda; `make_collate(pad)` gives a nested `def` (`collate`, line 8): what it returns."""
    if node is value:
        return f"`{_short(ctx, value)}` is {found.kind}"
    return f"`{_short(ctx, value)}` gives {found.kind} (`{_short(ctx, node)}`, line {ctx.line(node)})"


def _construction(loader, found) -> cst.Call | None:
    """The call that made the dataset a loader loads: the argument itself, or a name's value."""
    dataset = loader.dataset
    made = found.values.get(dotted_name(dataset) or "") if dataset is not None else None
    made = dataset if isinstance(dataset, cst.Call) else made
    return made if isinstance(made, cst.Call) else None


def _kept_arguments(
    construction: cst.Call, found, module: cst.Module, scope: cst.FunctionDef | None
) -> list[tuple[cst.BaseExpression, str]]:
    """What the dataset keeps of its construction's arguments, with the attribute when known:
    what `__init__` stores, for a class of this module; the keywords datasets of other modules keep.
    A `**kwargs` gives the keywords of the dict last bound to it (`kwargs = dict(transform=t)`)."""
    name = dotted_name(construction.func)
    spread = spread_keywords(construction, scope if scope is not None else module)
    if name in found.classes:
        return found.classes[name].stored_arguments(construction, spread)
    defined = (s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef)))
    if name is not None and name in defined:
        return []  # a function or another class of this module: nothing says what it keeps
    kept = process_table().dataset_kept_keywords
    given = [(arg.keyword.value, arg.value) for arg in construction.args if arg.keyword is not None]
    return [(value, key) for key, value in (*given, *spread) if key in kept]


def _given_keywords(ctx: FileContext) -> GivenKeywords:
    return GivenKeywords(ctx.module)


def _enclosing(ctx: FileContext) -> dict[int, cst.FunctionDef]:
    return enclosing_functions(ctx.module)


def _short(ctx: FileContext, node: cst.CSTNode) -> str:
    code = " ".join(ctx.code(node).split())
    return code if len(code) <= 40 else code[:39] + "…"
