import re
from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Severity
from gpumem_lint.rules.base import Invalid, Report, Rule
from gpumem_lint.semantic.releases import Retained


class EmptyCacheAfterDelStillReferenced(Rule):
    """
    ## What it does
    Flags `del x` followed by `torch.cuda.empty_cache()` (with nothing but other `del`s,
    `gc.collect()` or `name = None` between) when, at that call, something else still refers to
    `x`'s memory: a name or attribute bound to it (`self.last = x`), a list or dict made in the same
    function that holds it (`outputs.append(x)`, `{"model": x}`), a view or alias of it (`x[0]`,
    `x.view(...)`, `x.detach()`, `x.numpy()`, `x.state_dict()`), or an optimizer built directly from
    `x.parameters()`, or an object that keeps what it is given (a Lightning `Trainer` after
    `trainer.fit(x)`, an accelerate `Accelerator` after `prepare(x)`: `memory_api.toml` [keepers],
    from their source), or one built from it that keeps it (a transformers `Trainer(model=x)`, which also
    moves it to the GPU: [built_keepers]). A container holding one item of `x` (`{k: x[k]}`) keeps only that item. Memory
    known to be on the host (`t.cpu()`, `torch.load(f, map_location="cpu")`, a transformers or diffusers
    `from_pretrained(...)` given no `device_map=` or `device=` and not moved since, what such an object
    holds, a function of this file every `return` of which gives such memory) is not judged: the CUDA
    cache never holds it (docs/facts.md F49, F50).

    ## Why is this bad?
    `del x` removes a name, not a tensor: the memory is freed only with the last reference.
    `empty_cache()` returns to the driver only the blocks no tensor uses, so here it frees nothing of
    `x`: `nvidia-smi` and the next allocation see the memory still taken, and the program that meant
    to make room (before loading a second model, before evaluation) runs out of memory anyway. A
    view keeps the whole storage, not only the part it shows, and an optimizer keeps every parameter
    in its `param_groups`. Measured on the installed torch by `tests/test_release_facts.py`
    (docs/facts.md F32): at the `empty_cache()` of each of its programs, a weak reference to the
    deleted storage is alive exactly when this rule reports the `del`.

    ## Known problems
    Holders are followed within one function, and only those the analysis can name: a reference kept
    by another object (`Trainer(model=model)`, `DistributedDataParallel(model)`, a container of a
    class it does not know, `self.outputs` made in another method) or a callback is not seen. An
    optimizer built from parameter groups collected in a list is not followed (the list may hold
    another module's groups on the path that deletes this one). A deleted parameter is not judged
    by itself: the caller may hold it, or may have passed a temporary, which CPython 3.11+ moves into
    the callee's frame, where `del` does free it. A name that may hold one of several objects (bound
    in the arms of an `if`, or anew by a loop) is not judged: which one a holder keeps may depend on a
    flag the del is also under. A holder bound on only one path is reported: on that path the memory
    stays. A `from_pretrained(...)` without a placement is taken to load on the CPU even under
    `with torch.device("cuda"):` or after `torch.set_default_device("cuda")`, where transformers
    loads on that device (F50): such a program's finding is missed.

    ## Example
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    train(model, optimizer)
    del model
    torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    train(model, optimizer)
    del model, optimizer  # drop every reference
    torch.cuda.empty_cache()
    ```

    ## Fix safety
    There is no automatic fix: the other reference may be wanted (deleting it is the user's choice).

    ## References
    - [CUDA memory management](https://docs.pytorch.org/docs/stable/notes/cuda.html#memory-management)
    - [`torch.cuda.empty_cache`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html)
    - [The `del` statement](https://docs.python.org/3/reference/simple_stmts.html#the-del-statement)
    """

    code = "GML407"
    name = "empty-cache-after-del-still-referenced"
    severity = Severity.WARNING
    summary = "`del x` then `torch.cuda.empty_cache()` while something else still refers to `x`"
    fix_title = "Drop every reference to the memory first (`del x, holder`, or set the attribute to None)"
    triggers = ("empty_cache",)
    # The `del` and the `empty_cache()` call it precedes lie in one scope.
    scope_triggers = (re.compile(r"empty_cache"),)
    VALID = (
        # the trainer that kept the model goes too
        """
import lightning.pytorch as pl
import torch


def sweep(make_model, loader, widths):
    for width in widths:
        model = make_model(width)
        trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1)
        trainer.fit(model, loader)
        del model, trainer
        torch.cuda.empty_cache()
""",
        """
import torch

x = torch.randn(1024, 1024, device="cuda")
total = x.sum().item()
del x
torch.cuda.empty_cache()
""",
        """
import torch

model = Net().cuda()
optimizer = torch.optim.AdamW(model.parameters())
train(model, optimizer)
del model, optimizer
torch.cuda.empty_cache()
""",
        """
import torch

lora_layers = None
adapters = None
if use_lora:
    lora_layers = collect_lora_layers(model)
del lora_layers
torch.cuda.empty_cache()
""",
        """
import torch

state = unet.state_dict()
processors = build_processors(state)
del state
unet.set_attn_processor(processors)
train(unet)
torch.cuda.empty_cache()
""",
        """
import torch

out = model(batch)
loss = out["loss"]
del out
torch.cuda.empty_cache()
loss.backward()
""",
        """
import torch

def evaluate(loader):
    for batch in loader:
        score(batch)
        del batch
        torch.cuda.empty_cache()
""",
        # `.tolist()` gives Python numbers: the list holds copies of the values, no tensor's memory
        """
import torch

def score_batches(model, batches):
    scores = []
    for batch in batches:
        best = model(batch.cuda()).max(dim=1).values.tolist()
        scores.extend(best)
        del best
        torch.cuda.empty_cache()
    return scores
""",
        # made and deleted under the same unchanged flag: nothing else holds `outputs`
        """
import torch

def log_probs(model, batch, with_router: bool):
    if with_router:
        outputs = model(batch, output_router_logits=True)
        logits = outputs.logits.float()
    else:
        logits = model(batch).logits.float()
    total = logits.log_softmax(-1).sum()
    del logits
    if with_router:
        del outputs
    torch.cuda.empty_cache()
    return total
""",
        # loaded to the host: what still refers to the checkpoint holds no CUDA memory (F49)
        """
import torch

def load_weights(model, path):
    checkpoint = torch.load(path, map_location="cpu")
    state_dict = checkpoint
    if "model" in checkpoint:
        state_dict = checkpoint["model"]
    model.load_state_dict(state_dict)
    del checkpoint
    torch.cuda.empty_cache()
""",
        # a function whose every return is host memory gives host memory (F49): `kept` holds none of the cache's
        """
import torch

def to_image(t):
    return t.detach().cpu().numpy()

def restore(model, batch):
    with torch.no_grad():
        out = to_image(model(batch.cuda()))
        kept = out
    del out
    torch.cuda.empty_cache()
    return kept
""",
        # loaded without a device: a pipeline and its parts on the host (F50), whatever `weights` keeps
        """
import torch
from diffusers import DiffusionPipeline

def reference_names(path):
    pipe = DiffusionPipeline.from_pretrained(path, torch_dtype=torch.float32)
    transformer = pipe.transformer
    weights = transformer.state_dict()
    del pipe
    del transformer
    torch.cuda.empty_cache()
    return list(weights)
""",
        # `shard` holds one item of the loaded dict, not the dict: `del` frees the other tensors
        """
import torch

def reshard(paths):
    for path in paths:
        state_dict = torch.load(path, map_location="cuda")
        for key in sorted(state_dict.keys()):
            shard = {key: state_dict[key]}
            torch.save(shard, f"{path}.{key}")
        del state_dict
        torch.cuda.empty_cache()
""",
        # the trainer goes with the model: nothing refers to its memory any more
        """
import gc

import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments


def finetune(train_set):
    model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
    trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=train_set)
    metrics = trainer.train()
    del trainer, model
    gc.collect()
    torch.cuda.empty_cache()
    return metrics
""",
    )
    INVALID = (
        # the trainer keeps the model it was built with, and moved it to the GPU
        Invalid(
            """
import gc

import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments


def finetune(train_set):
    model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
    trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=train_set)
    trainer.train()
    del model
    gc.collect()
    torch.cuda.empty_cache()
    return trainer.evaluate()
""",
            (12,),
        ),
        # the trainer keeps the model it fitted (`trainer.lightning_module`)
        Invalid(
            """
import lightning.pytorch as pl
import torch


def sweep(make_model, loader, widths):
    for width in widths:
        model = make_model(width)
        trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1)
        trainer.fit(model, loader)
        del model
        torch.cuda.empty_cache()
""",
            (11,),
        ),
        Invalid(
            """
import torch

model = Net().cuda()
optimizer = torch.optim.AdamW(model.parameters())
train(model, optimizer)
del model
torch.cuda.empty_cache()
""",
            (7,),
        ),
        Invalid(
            """
import torch
from diffusers import DiffusionPipeline

def reference_names(path):
    pipe = DiffusionPipeline.from_pretrained(path, torch_dtype=torch.float16)
    pipe.to("cuda")
    transformer = pipe.transformer
    weights = transformer.state_dict()
    del pipe
    del transformer
    torch.cuda.empty_cache()
    return list(weights)
""",
            (11,),
        ),
        Invalid(
            """
import torch

class Tracker:
    def update(self, logits):
        self.last = logits
        del logits
        torch.cuda.empty_cache()
""",
            (7,),
        ),
        Invalid(
            """
import torch

x = torch.randn(1024, 1024, device="cuda")
first_row = x[0]
del x
torch.cuda.empty_cache()
""",
            (6,),
        ),
        Invalid(
            """
import torch

outputs = []
for batch in loader:
    out = model(batch.cuda())
    outputs.append(out)
    del out
    torch.cuda.empty_cache()
""",
            (8,),
        ),
        Invalid(
            """
import gc

import torch

def embed_all(texts):
    model = load_encoder().cuda()
    config = {"encoder_model": model, "batch_size": 32}
    vectors = embed(texts, config)
    del model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return vectors, config
""",
            (10,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        for facts in ctx.semantic.facts:
            for retained in facts.retained:
                yield Report(retained.deleted, _message(ctx, retained))


def _message(ctx: FileContext, retained: Retained) -> str:
    call = f"the `empty_cache()` at line {ctx.line(retained.call)}"
    made = retained.holder_node
    where = f" (`{ctx.code(made)}`, line {ctx.line(made)})" if made is not None else ""
    return f"`{retained.holder}`{where} still refers to `{retained.name}`'s memory, so {call} frees none of it"
