"""The analyzer's knowledge of torch, read from data files (never from torch itself).

`ops.json` is generated from torch's operator schemas; `aliasing.toml` is kept by hand
for what schemas cannot say. Everything is loaded once per process.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# Names that are also methods of Python's own containers and strings: seeing one
# called proves nothing about the receiver being a tensor (`line.split(",")`).
_BUILTIN_METHOD_NAMES = frozenset(name for kind in (list, dict, str, tuple, set, bytes) for name in dir(kind))


@dataclass(eq=False)
class Knowledge:
    torch_version: str
    inplace_methods: frozenset[str]
    inplace_operators: frozenset[str]  # `x += y` writes x; `x @= y` rebinds it (no `Tensor.__imatmul__`)
    inplace_functions: frozenset[str]
    out_functions: frozenset[str]
    out_methods: frozenset[str]  # the ones `torch.Tensor` has as methods
    view_methods: frozenset[str]
    view_functions: frozenset[str]
    view_properties: frozenset[str]
    multi_view_methods: frozenset[str]
    multi_view_functions: frozenset[str]
    expand_methods: frozenset[str]
    expand_functions: frozenset[str]
    uninitialised_makers: frozenset[str]  # `torch.empty(n)`: memory without values until written
    shape_dependent_expands: frozenset[str]  # `broadcast_tensors`: which output is expanded, shapes say
    expanded_forward_runs: frozenset[str]  # `e.zero_()` on an expanded `e` runs; with grad, backward raises
    may_alias_methods: frozenset[str]
    detach_methods: frozenset[str]
    detach_properties: frozenset[str]
    detach_in_place_methods: frozenset[str]  # `t.detach_()`: t no longer requires grad
    renorming_modules: frozenset[str]  # `nn.Embedding(n, d, max_norm=1.0)`: each call writes its weight
    renorming_functions: frozenset[str]  # `F.embedding(idx, weight, max_norm=1.0)`: writes `weight`
    renorming_keyword: str
    tensor_to_numpy_methods: frozenset[str]
    other_numpy_frameworks: frozenset[str]  # `.numpy()` of their tensors copies
    array_copy_methods: frozenset[str]  # `a.astype(t)`: a new ndarray
    tensor_to_numpy_functions: frozenset[str]
    numpy_to_tensor_functions: frozenset[str]
    state_dict_methods: frozenset[str]
    parameter_methods: frozenset[str]
    load_methods: frozenset[str]
    load_into_functions: frozenset[str]  # `dcp.load(sd, ...)`: fills the tensors of its first argument (F42)
    copy_functions: frozenset[str]
    not_data_writes: frozenset[str]
    layout_write_methods: frozenset[str]  # `x.t_()`: new metadata, same values
    non_differentiable: frozenset[str]  # `x.argmax()`, `x > 0`: results that never require grad
    index_outputs: dict[str, int]  # `x.topk(k)`: the position of the output that holds indices
    no_grad_contexts: frozenset[str]
    differentiating_functions: frozenset[str]  # `jacobian(f, x)`: calls `f` on inputs that require grad
    functional_inplace_kwarg: frozenset[str]
    functional_inplace_underscore: frozenset[str]
    module_inplace_kwarg: frozenset[str]
    init_functions: frozenset[str]
    wrapper_functions: frozenset[str]
    evidence_methods: frozenset[str]
    non_tensor_results: frozenset[str]
    python_value_results: frozenset[str]  # `x.tolist()`, `x.item()`: values that hold no tensor memory
    partial_views: frozenset[str]
    not_module_calls: frozenset[str]
    not_tensor_function_prefixes: tuple[str, ...]
    other_tensor_attributes: frozenset[str]
    backward_writes: frozenset[str]  # `p.grad`: attributes that `backward()` writes
    metadata_attributes: frozenset[str]
    object_dict_attributes: frozenset[str]
    plain_tensor_methods: frozenset[str]
    plain_tensor_properties: frozenset[str]
    metadata_methods: frozenset[str]
    metadata_functions: frozenset[str]
    foreach_prefix: str
    undeclared_mutators: dict[str, tuple[int, ...]]
    module_parameters: dict[str, frozenset[str]]  # "torch.nn.Linear" -> {"weight", "bias"}
    module_buffers: dict[str, frozenset[str]]
    container_modules: frozenset[str]  # `nn.Sequential`: its parameters are those of the layers it holds
    grad_mode_setters: frozenset[str]
    shape_constructors: frozenset[str]
    one_dimensional: frozenset[str]
    one_dimensional_tuples: frozenset[str]  # `np.unique(x, return_counts=True)`: a tuple of 1-D arrays
    shape_keeping: frozenset[str]  # `np.argsort(x)`: as many dimensions as `x`
    tuple_output_modules: frozenset[str]
    module_self_methods: frozenset[str]  # `Net().cuda()` is the module itself
    buffer_makers: frozenset[str]  # `torch.zeros(n)`, `x.clone()`: memory made to be passed and filled
    buffer_overwrites: frozenset[str]  # `buf.zero_()`: a whole overwrite that readies a buffer

    @cached_property
    def tensor_only_methods(self) -> frozenset[str]:
        """Methods whose call is evidence that the receiver is a tensor (or ndarray)."""
        names = (
            self.inplace_methods
            | self.layout_write_methods
            | self.view_methods
            | self.multi_view_methods
            | self.detach_methods
            | self.evidence_methods
            | self.out_methods  # `x.mean()`, `x.sigmoid()`: aten ops as methods
        )
        return frozenset(names - _BUILTIN_METHOD_NAMES)

    @cached_property
    def tensor_result_methods(self) -> frozenset[str]:
        """Tensor methods whose result is a tensor too (not `x.tolist()`, `x.size()`)."""
        return self.tensor_only_methods - self.non_tensor_results

    @cached_property
    def data_write_methods(self) -> frozenset[str]:
        return self.inplace_methods - self.not_data_writes

    @cached_property
    def tensor_functions(self) -> frozenset[str]:
        """`torch.<name>` functions known to return tensors."""
        return (
            self.out_functions
            | self.view_functions
            | self.inplace_functions
            | self.expand_functions
            | self.shape_dependent_expands
            | frozenset(name.removeprefix("torch.") for name in self.numpy_to_tensor_functions)
        )


def data_text(name: str) -> str:
    """A data file shipped beside this module (read from the file system: importlib.resources costs
    5 ms of every start-up, and the package is installed unpacked)."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


def _set(values) -> frozenset[str]:
    return frozenset(values)


@cache
def knowledge() -> Knowledge:
    ops = json.loads(data_text("ops.json"))
    hand = tomllib.loads(data_text("aliasing.toml"))
    modules = json.loads(data_text("modules.json"))["modules"]
    return Knowledge(
        torch_version=ops["torch_version"],
        inplace_methods=_set(ops["inplace_methods"]),
        inplace_operators=_set(ops["inplace_operators"]),
        inplace_functions=_set(ops["inplace_functions"]),
        out_functions=_set(ops["out_functions"]),
        out_methods=_set(ops["out_methods"]),
        view_methods=_set(ops["view_methods"]) | _set(hand["views"]["methods"]),
        view_functions=_set(ops["view_functions"]),
        view_properties=_set(hand["views"]["properties"]),
        multi_view_methods=_set(ops["multi_view_methods"]),
        multi_view_functions=_set(ops["multi_view_functions"]),
        expand_methods=_set(ops["expand_methods"]),
        expand_functions=_set(ops["expand_functions"]) - _set(hand["shape_dependent_expands"]["functions"]),
        shape_dependent_expands=_set(hand["shape_dependent_expands"]["functions"]),
        expanded_forward_runs=_set(hand["expanded_writes"]["forward_runs"]),
        uninitialised_makers=_set(hand["uninitialised"]["made_by"]),
        may_alias_methods=_set(hand["may_alias"]["methods"]),
        detach_methods=_set(hand["detach"]["methods"]),
        detach_properties=_set(hand["detach"]["properties"]),
        detach_in_place_methods=_set(hand["detach"]["in_place_methods"]),
        renorming_modules=_set(hand["renorming_calls"]["modules"]),
        renorming_functions=_set(hand["renorming_calls"]["functions"]),
        renorming_keyword=hand["renorming_calls"]["keyword"],
        tensor_to_numpy_methods=_set(hand["numpy_bridge"]["tensor_to_numpy_methods"]),
        other_numpy_frameworks=_set(hand["numpy_bridge"]["other_numpy_frameworks"]),
        array_copy_methods=_set(hand["numpy_bridge"]["array_copy_methods"]),
        tensor_to_numpy_functions=_set(hand["numpy_bridge"]["tensor_to_numpy_functions"]),
        numpy_to_tensor_functions=_set(hand["numpy_bridge"]["numpy_to_tensor_functions"]),
        state_dict_methods=_set(hand["module_state"]["state_dict_methods"]),
        parameter_methods=_set(hand["module_state"]["parameter_methods"]),
        load_methods=_set(hand["module_state"]["load_methods"]),
        load_into_functions=_set(hand["module_state"]["load_into_functions"]),
        copy_functions=_set(hand["copies"]["functions"]),
        not_data_writes=_set(hand["not_data_writes"]["methods"]),
        layout_write_methods=_set(ops["inplace_view_methods"]) - _set(hand["layout_writes"]["other_errors"]),
        non_differentiable=_set(hand["non_differentiable"]["results"]),
        index_outputs=dict(hand["non_differentiable"]["index_outputs"]),
        no_grad_contexts=_set(hand["no_grad_contexts"]["functions"]),
        differentiating_functions=_set(hand["backward"]["differentiating_functions"]),
        functional_inplace_kwarg=_set(ops["functional_inplace_kwarg"]),
        functional_inplace_underscore=_set(ops["functional_inplace_underscore"]),
        module_inplace_kwarg=_set(ops["module_inplace_kwarg"]),
        init_functions=_set(ops["init_functions"]),
        wrapper_functions=_set(hand["wrappers"]["functions"]),
        evidence_methods=_set(hand["evidence"]["methods"]),
        non_tensor_results=_set(hand["evidence"]["non_tensor_results"]),
        python_value_results=_set(hand["evidence"]["python_value_results"]),
        partial_views=_set(hand["partial_views"]["methods"]),
        not_module_calls=_set(hand["not_module_calls"]["methods"]),
        not_tensor_function_prefixes=tuple(hand["not_tensor_functions"]["prefixes"]),
        other_tensor_attributes=_set(hand["other_tensor_attributes"]["names"]),
        backward_writes=_set(hand["backward"]["writes_attributes"]),
        metadata_attributes=_set(hand["metadata"]["attributes"]),
        object_dict_attributes=_set(hand["object_dicts"]["attributes"]),
        plain_tensor_methods=_set(hand["plain_tensors"]["methods"]),
        plain_tensor_properties=_set(hand["plain_tensors"]["properties"]),
        metadata_methods=_set(hand["metadata"]["methods"]),
        metadata_functions=_set(hand["metadata"]["functions"]),
        foreach_prefix=hand["foreach"]["prefix"],
        undeclared_mutators={name: tuple(positions) for name, positions in hand["undeclared_mutators"].items()},
        module_parameters={f"torch.nn.{name}": _set(m.get("parameters", ())) for name, m in modules.items()},
        module_buffers={f"torch.nn.{name}": _set(m.get("buffers", ())) for name, m in modules.items()},
        container_modules=_set(f"torch.nn.{name}" for name, m in modules.items() if m.get("container")),
        grad_mode_setters=_set(hand["no_grad_contexts"]["setters"]),
        shape_constructors=_set(hand["indexing"]["shape_constructors"]),
        one_dimensional=_set(hand["indexing"]["one_dimensional"]),
        one_dimensional_tuples=_set(hand["indexing"]["one_dimensional_tuples"]),
        shape_keeping=_set(hand["indexing"]["shape_keeping"]),
        tuple_output_modules=_set(f"torch.nn.{name}" for name in hand["module_outputs"]["tuples"]),
        module_self_methods=_set(hand["module_outputs"]["returns_self"]),
        buffer_makers=_set(hand["output_buffers"]["made_by"]),
        buffer_overwrites=_set(hand["output_buffers"]["overwritten_by"]),
    )
