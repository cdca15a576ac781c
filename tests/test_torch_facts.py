"""Re-measure, on the installed torch, the behaviour the rules are built on (docs/facts.md)."""

# These tests commit the hazards on purpose:
# gpumem-lint: noqa: GML101, GML102, GML103, GML104

from __future__ import annotations

import importlib
import warnings

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
nn = torch.nn
F = torch.nn.functional


def test_f1_data_write_between_forward_and_backward_is_silent():
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()
    w.data.mul_(10)
    loss.backward()
    assert torch.equal(w.grad, torch.tensor([20.0, 40.0, 60.0]))  # not 2 * [1, 2, 3]


def test_f2_detach_write_between_forward_and_backward_raises():
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()
    w.detach().mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_f3_state_dict_is_the_live_parameters():
    model = nn.Linear(2, 2)
    snapshot = model.state_dict()
    shallow = {k: v.detach() for k, v in model.state_dict().items()}
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    assert torch.equal(snapshot["weight"], model.weight)
    assert torch.equal(shallow["weight"], model.weight)


def test_f4_views_share_and_advanced_indexing_copies():
    x = torch.zeros(3, 3)
    row, picked = x[0], x[torch.tensor([0])]
    x.add_(1)
    assert row.sum().item() == 3.0
    assert picked.sum().item() == 0.0


def test_f5_inplace_write_to_expanded_tensor_raises():
    expanded = torch.zeros(1, 4).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        expanded.add_(1)


@pytest.mark.parametrize(
    ("write", "raises"),
    [
        ("e[0] = 5", True),  # row 0 repeats one element along the expanded dimension 1
        ("e[1:] = 5", True),
        ("e[:, 0] = 5", False),  # one element of each row: three locations
        ("e[0, 0] = 5", False),
        ("e[0, ...] = 5", True),  # `...` stands for dimension 1, whole
        ("e[..., 0] = 5", False),
        ("e[e > 2] = 5", False),  # a mask: deprecated, a warning only
    ],
)
def test_f5_indexed_assignment_raises_where_the_part_still_repeats(write, raises):
    e = torch.rand(3, 1).expand(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if raises:
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                exec(write)
        else:
            exec(write)


def test_f6_inplace_write_to_chunk_output():
    base = torch.zeros(4, 2, requires_grad=True)
    first, _ = (base * 1).chunk(2)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        first.mul_(2)
    plain = torch.zeros(4)
    head, _ = plain.chunk(2)
    head.add_(1)
    assert plain.sum().item() == 2.0


def test_f7_numpy_bridge_shares_memory_without_a_version_bump():
    array = np.zeros(3, dtype=np.float32)
    tensor = torch.from_numpy(array)
    array[0] = 42
    assert tensor[0].item() == 42 and tensor._version == 0
    shared = torch.as_tensor(array)
    shared.add_(1)
    assert array[1] == 1
    copied = torch.as_tensor(array, dtype=torch.float64)
    copied.add_(1)
    assert array[1] == 1


def test_f8_parameter_shares_memory_with_its_source():
    source = torch.zeros(3)
    parameter = nn.Parameter(source)
    source.add_(1)
    assert parameter.sum().item() == 3.0


def test_f9_batch_norm_updates_running_statistics_in_place():
    running_mean, running_var = torch.zeros(2), torch.ones(2)
    F.batch_norm(torch.ones(4, 2), running_mean, running_var, training=True)
    assert running_mean.sum().item() > 0
    schema = torch.ops.aten.native_batch_norm.default._schema
    running = [a for a in schema.arguments if a.name == "running_mean"][0]
    assert running.alias_info is None  # undeclared: not in the generated tables


def test_f10_reshape_aliases_only_when_it_can():
    x = torch.zeros(2, 3)
    x.reshape(6).add_(1)
    assert x.sum().item() == 6.0
    y = torch.zeros(3, 2).t()
    y.reshape(6).add_(1)
    assert y.sum().item() == 0.0


@pytest.mark.parametrize(
    ("write", "error"),
    [
        (lambda layer: layer.weight.mul_(0.5), "a leaf Variable that requires grad"),
        (lambda layer: layer.weight[:, :2].mul_(0.5), "a view of a leaf Variable that requires grad"),
        (lambda layer: layer.weight.__setitem__(0, 1.0), "a view of a leaf Variable that requires grad"),
        (lambda layer: layer.bias.__isub__(1.0), "a leaf Variable that requires grad"),
        (lambda layer: next(layer.parameters()).add_(1.0), "a leaf Variable that requires grad"),
    ],
)
def test_f21_inplace_write_to_a_grad_leaf_raises_outside_no_grad(write, error):
    layer = nn.Linear(4, 4)
    with pytest.raises(RuntimeError, match=error):
        write(layer)
    with torch.no_grad():
        write(layer)  # initialisation and manual updates: allowed
    layer.requires_grad_(False)
    write(layer)  # a frozen module's parameters are not leaves that require grad
    before = layer.weight.clone()
    layer.weight.data.mul_(2)  # through `.data` autograd does not see the write
    assert torch.equal(layer.weight, before * 2)


def test_f22_iterating_a_tensor_unbinds_it():
    scores = torch.randn(3, 3, requires_grad=True) @ torch.randn(3, 3)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being modified inplace"):
        for row in scores:
            row.clamp_(min=0)


def test_f23_numpy_full_integer_index_is_a_scalar_copy_torch_a_view():
    a = np.zeros(3)
    element = a[1]
    a[1] = 5.0
    assert element == 0.0  # numpy: a scalar copy
    rows = np.zeros((2, 3))
    row = rows[1]
    rows[1, 0] = 5.0
    assert row[0] == 5.0  # fewer integers than dimensions: a view
    t = torch.zeros(3)
    view = t[1]
    t[1] = 5.0
    assert view.item() == 5.0  # torch: a 0-d view


def test_f23_split_outputs_are_disjoint():
    qkv = torch.zeros(2, 6)
    q, k, v = qkv.split(2, dim=1)
    q.add_(1.0)
    assert k.abs().sum().item() == 0.0 and v.abs().sum().item() == 0.0
    assert qkv[:, :2].sum().item() == 4.0  # the base sees the write


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x[:-1].copy_(x[1:]),
        lambda x: x.__setitem__(slice(None, -1), x[1:]),
        lambda x: x[1:].add_(x[:-1]),
        lambda x: torch.mul(x[1:], 2, out=x[:-1]),
    ],
)
def test_f24_overlapping_writes_raise(write):
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        write(torch.arange(10.0))


@pytest.mark.parametrize(
    ("shape", "write"),
    [
        ((3, 3), lambda m: m.copy_(m.t())),
        ((3, 3), lambda m: m.__setitem__(slice(None), m.T)),
        ((3, 3), lambda m: m.add_(m.permute(1, 0))),
        ((2, 3, 4, 4), lambda m: m.__setitem__(1, m[1].transpose(-2, -1))),  # a row of a batch of matrices
    ],
)
def test_f24_a_write_of_its_own_elements_reordered_raises(shape, write):
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        write(torch.randn(*shape))


def test_f24_what_the_overlap_check_does_not_see():
    index = torch.tensor([0, 1, 2])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        index[index] = torch.tensor([5, 6, 7])
    strided = torch.arange(10.0).view(2, 5)
    strided[:, :-1] = strided[:, 1:]  # not caught: the CPU kernel's order decides
    assert strided[0].tolist() == [1.0, 2.0, 3.0, 4.0, 4.0]
    halves = torch.arange(10.0)
    halves[:5] = halves[5:]  # disjoint
    torch.add(halves, 1, out=halves)  # the whole input: elementwise, safe
    assert halves.tolist() == [6.0, 7.0, 8.0, 9.0, 10.0, 6.0, 7.0, 8.0, 9.0, 10.0]


def _layout_write_methods() -> list[str]:
    from gpumem_lint.knowledge import knowledge

    return sorted(knowledge().layout_write_methods)


_LAYOUT_ARGS = {"transpose_": (0, 1), "swapaxes_": (0, 1), "swapdims_": (0, 1), "unsqueeze_": (0,)}


@pytest.mark.parametrize("method", _layout_write_methods())
def test_f25_layout_writes_are_inplace_ops_for_autograd(method):
    def call(tensor):
        args = ((2, 2), (1, 1)) if method == "as_strided_" else _LAYOUT_ARGS.get(method, ())
        return getattr(tensor, method)(*args)

    leaf = torch.randn(4, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        call(leaf)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        call(leaf[:2])
    first, _ = (leaf * 2).split(2)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and is being modified inplace"):
        call(first)
    saved = leaf.sigmoid()
    call(saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.sum().backward()
    values = torch.arange(8.0).reshape(4, 2)
    view = values[:2]
    call(values)
    assert view.tolist() == [[0.0, 1.0], [2.0, 3.0]]  # other aliases see the same values
    with torch.no_grad():
        call(leaf)


def test_f25_other_inplace_view_ops_raise_errors_of_their_own():
    first, _ = (torch.randn(4, 2, requires_grad=True) * 2).split(2)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        first.detach_()
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        first.resize_(2)


def _knowledge():
    from gpumem_lint.knowledge import knowledge

    return knowledge()


#: How each name is called on a 1-D tensor `x` (a comparison against 0, the others bare).
_CALLS = {
    "searchsorted": lambda x: torch.searchsorted(x.sort().values, torch.tensor([0.5])),
    "bucketize": lambda x: torch.bucketize(x, torch.tensor([0.0])),
    "isclose": lambda x: x.isclose(torch.zeros(4)),
    "topk": lambda x: x.topk(2),
    "kthvalue": lambda x: x.kthvalue(2),
    "cummax": lambda x: x.cummax(0),
    "cummin": lambda x: x.cummin(0),
}


def _call(name, x):
    if name in _CALLS:
        return _CALLS[name](x)
    return getattr(x, name)(0.0) if name in {"eq", "ne", "lt", "le", "gt", "ge"} else getattr(x, name)()


@pytest.mark.parametrize("name", sorted(_knowledge().non_differentiable))
def test_f26_integer_and_boolean_results_never_require_grad(name):
    assert not _call(name, torch.randn(4, requires_grad=True)).requires_grad


@pytest.mark.parametrize(("name", "position"), sorted(_knowledge().index_outputs.items()))
def test_f26_index_outputs_never_require_grad_and_the_values_do(name, position):
    outputs = _call(name, torch.randn(4, requires_grad=True))
    assert not outputs[position].requires_grad
    assert outputs[1 - position].requires_grad


def test_f26_comparison_operators_never_require_grad():
    x = torch.randn(4, requires_grad=True)
    assert not (x > 0).requires_grad and not (x == x).requires_grad


_SELF_METHOD_ARGS = {"to": ("cpu",), "type": (torch.float32,), "apply": (lambda module: None,), "to_empty": ()}


@pytest.mark.parametrize("method", sorted(_knowledge().module_self_methods))
def test_f27_module_methods_return_the_module_itself(method):
    # A module without tensors: `cuda()` moves nothing, so this runs on a machine without a GPU.
    module = nn.ReLU()
    kwargs = {"device": "cpu"} if method == "to_empty" else {}
    assert getattr(module, method)(*_SELF_METHOD_ARGS.get(method, ()), **kwargs) is module
    linear = nn.Linear(2, 2)
    if method != "cuda":
        assert getattr(linear, method)(*_SELF_METHOD_ARGS.get(method, ()), **kwargs) is linear


@pytest.mark.parametrize("name", sorted(_knowledge().shape_dependent_expands))
def test_f31_shape_dependent_expands_stretch_only_the_smaller_inputs(name):
    full, small = torch.arange(6.0).reshape(2, 3), torch.ones(2, 1)
    same, stretched = getattr(torch, name)(full, small)
    assert same.stride() == full.stride() and 0 in stretched.stride()
    same -= stretched  # a plain view: the write runs and reaches the input
    assert full.tolist() == [[-1.0, 0.0, 1.0], [2.0, 3.0, 4.0]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        stretched.add_(1)


#: How each in-place op of aliasing.toml [expanded_writes] is called on a 4 x 4 tensor `e`, and the
#: assignments through a mask or an index tensor, which behave alike.
_EXPANDED_WRITES = {
    "fill_": lambda e: e.fill_(1.0),
    "zero_": lambda e: e.zero_(),
    "masked_fill_": lambda e: e.masked_fill_(e > -1, 1.0),
    "index_put_": lambda e: e.index_put_((torch.tensor([0]),), torch.tensor(1.0)),
    "index_fill_": lambda e: e.index_fill_(0, torch.tensor([0]), 1.0),
    "e[mask] = v": lambda e: e.__setitem__(e > -1, 1.0),
    "e[index] = v": lambda e: e.__setitem__(torch.tensor([0, 1]), 1.0),
}


def test_f36_expanded_writes_table_is_measured():
    assert _knowledge().expanded_forward_runs == {name for name in _EXPANDED_WRITES if not name.startswith("e[")}


@pytest.mark.parametrize("name", sorted(_EXPANDED_WRITES))
def test_f36_writes_that_run_on_an_expanded_tensor_raise_in_backward_when_it_requires_grad(name):
    write = _EXPANDED_WRITES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the index-put family: "deprecated"
        write(torch.rand(1, 4).expand(4, 4))  # runs
        source = torch.rand(4, requires_grad=True)
        expanded = (source * 1).view(1, 4).expand(4, 4)
        write(expanded)  # runs too
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        (expanded * 1).sum().backward()


_AUGMENTED_SOURCES = {"+=": "x += y", "@=": "x @= y", "**=": "x **= y", "//=": "x //= y", "<<=": "x <<= y"}


@pytest.mark.parametrize("symbol", sorted(_AUGMENTED_SOURCES))
def test_f34_augmented_assignment_writes_in_place_unless_torch_lacks_the_method(symbol):
    x = torch.ones(2, 2, dtype=torch.int64) * 2
    held, version = x, x._version
    namespace = {"x": x, "y": torch.ones(2, 2, dtype=torch.int64)}
    exec(_AUGMENTED_SOURCES[symbol], namespace)
    in_place = namespace["x"] is held and held._version > version
    assert in_place == (symbol in _knowledge().inplace_operators)
    assert in_place or held.tolist() == [[2, 2], [2, 2]]


@pytest.mark.parametrize("name", sorted(_knowledge().uninitialised_makers))
def test_f35_uninitialised_makers_are_documented_as_such(name):
    factory = getattr(torch, name, None) or getattr(torch.Tensor, name)
    assert "uninitialized" in factory.__doc__.lower()


@pytest.mark.parametrize("attribute", sorted(_knowledge().backward_writes))
def test_f37_backward_writes_these_attributes_of_the_leaves_it_reaches(attribute):
    w = torch.ones(3, requires_grad=True)
    assert getattr(w, attribute) is None
    (w * 2).sum().backward()
    first = getattr(w, attribute).clone()
    (w * 2).sum().backward()
    assert first.tolist() == [2.0, 2.0, 2.0] and getattr(w, attribute).tolist() == [4.0, 4.0, 4.0]


@pytest.mark.parametrize("name", sorted(_knowledge().load_into_functions))
def test_f42_checkpoint_loads_fill_the_given_tensors_in_place(name, tmp_path):
    from torch.distributed.checkpoint import FileSystemReader

    module, function = name.rsplit(".", 1)
    load = getattr(importlib.import_module(module), function)
    model = nn.Linear(3, 2)
    state = model.state_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated spelling warns
        torch.distributed.checkpoint.save(state, checkpoint_id=tmp_path, no_dist=True)
        saved, address = model.weight.detach().clone(), state["weight"].data_ptr()
        with torch.no_grad():
            model.weight.zero_()
        if function == "load":
            load(state, checkpoint_id=tmp_path, no_dist=True)
        else:
            load(state, FileSystemReader(tmp_path), no_dist=True)
    assert state["weight"].data_ptr() == address
    assert torch.equal(model.weight, saved)  # the module's own tensor, restored through the dict


def test_f43_a_graph_that_ends_in_a_comparison_keeps_nothing():
    layer = nn.Linear(4, 4)
    d = layer(torch.randn(2, 4))
    d[d.abs() < 0.5] = 0.5
    (d * 2).sum().backward()  # raises nothing: `abs`'s graph was freed with the statement
    d = layer(torch.randn(2, 4))
    size = d.abs()
    d[size < 0.5] = 0.5
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (d * 2 + size).sum().backward()


def _holds_tensor_memory(value) -> bool:
    if isinstance(value, (torch.Tensor, torch.UntypedStorage)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor_memory(item) for item in value)
    return False


@pytest.mark.parametrize("name", sorted(_knowledge().python_value_results))
def test_python_value_results_hold_no_tensor_memory(name):
    t = torch.arange(6.0).view(2, 3)
    result = getattr(t[:1, :1] if name == "item" else t, name)()
    assert not _holds_tensor_memory(result)
    assert name in _knowledge().non_tensor_results


def test_untyped_storage_is_the_tensor_memory_and_not_a_python_value():
    t = torch.arange(6.0)
    assert t.untyped_storage().data_ptr() == t.data_ptr()
    assert "untyped_storage" not in _knowledge().python_value_results


@pytest.mark.parametrize("method", ["items", "keys"])
def test_f45_tensors_and_arrays_have_no_mapping_iterators(method):
    from gpumem_lint.semantic.flow import _MAPPING_ITERATORS

    assert method in _MAPPING_ITERATORS
    assert not hasattr(torch.zeros(2), method) and not hasattr(np.zeros(2), method)


def test_f46_load_state_dict_with_assign_writes_no_memory():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    before = target.state_dict()
    kept = before["weight"].clone()
    target.load_state_dict(source.state_dict(), assign=True)
    assert torch.equal(before["weight"], kept)  # the old tensor is not written
    assert target.weight.data_ptr() == source.weight.data_ptr()  # the module holds the given one
    other = nn.Linear(3, 2)
    snapshot = other.state_dict()
    kept = snapshot["weight"].clone()
    other.load_state_dict(nn.Linear(3, 2).state_dict())
    assert not torch.equal(snapshot["weight"], kept)  # without `assign`: copied into the old tensor


_PLAIN = _knowledge().plain_tensor_methods | _knowledge().plain_tensor_properties


@pytest.mark.parametrize("plain", sorted(_PLAIN) + ["* 2"])
def test_f51_a_parameter_name_refuses_a_plain_tensor(plain):
    """aliasing.toml [plain_tensors]: each row gives a tensor `nn.Module` refuses for a Parameter's name."""
    module = nn.Linear(3, 2)

    def made(p):
        if plain == "* 2":
            return p * 2
        result = getattr(p, plain)
        return result() if plain in _knowledge().plain_tensor_methods else result

    with pytest.raises(TypeError, match="cannot assign"):
        module.weight = made(module.weight)
    # An attribute that is no Parameter takes it, and is none of what `parameters()` hands an optimizer.
    module.hidden = made(module.weight)
    assert not isinstance(module.hidden, nn.Parameter)
    assert all(p is not module.hidden for p in module.parameters())
    assert "hidden" not in module.state_dict()


def test_f52_numpy_copies_an_overlapping_slice_first_and_torch_on_the_cpu_does_not():
    array = np.arange(9).reshape(3, 3)
    array[:, 1:] = array[:, :-1]
    assert array.tolist() == [[0, 0, 1], [3, 3, 4], [6, 6, 7]]
    tensor = torch.arange(9).reshape(3, 3)
    tensor[:, 1:] = tensor[:, :-1]  # the strided case torch's overlap check cannot see (F24)
    assert tensor.tolist() != [[0, 0, 1], [3, 3, 4], [6, 6, 7]]


def test_f52_numpy_computes_a_boolean_self_index_before_it_writes_and_torch_refuses_it():
    array = np.array([True, False, True, True])
    kept = array[array]
    kept[0] = False
    array[array] = kept
    assert array.tolist() == [False, False, True, True]
    mask = torch.tensor([True, False, True, True])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        mask[mask] = mask[mask].clone()


@pytest.mark.parametrize("name", sorted(_knowledge().differentiating_functions))
def test_f54_differentiating_functions_call_theirs_on_leaves_that_require_grad(name):
    """aliasing.toml [backward] differentiating_functions: each calls its function on tensors that require
    grad, from inputs that do not, with grad on, and differentiates what it returns: a write to a tensor
    an op saved raises, as in training."""
    transform = importlib.import_module(name.rsplit(".", 1)[0]).__dict__[name.rsplit(".", 1)[1]]
    seen = []

    def record(a):
        seen.append((a.requires_grad, torch.is_grad_enabled()))
        return (a * a).sum() if name.endswith(("hessian", "hvp", "vhp")) else a * a

    def overwrite_saved(a):
        b = a * 1.0
        c = F.softplus(b)
        b.add_(1)
        return c.sum() if name.endswith(("hessian", "hvp", "vhp")) else c

    x = torch.randn(3)
    extra = () if name.endswith(("jacobian", "hessian")) else (torch.ones(3),)
    transform(record, x, *extra)
    assert seen and all(seen[0]) and not x.requires_grad
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        transform(overwrite_saved, x, *extra)


@pytest.mark.parametrize("name", sorted(_knowledge().one_dimensional))
def test_f23_one_dimensional_constructors_make_one_dimension(name):
    """aliasing.toml [indexing] one_dimensional: every array they give is 1-D, so an integer index is a scalar."""
    made = {
        "numpy.arange": lambda: (np.arange(6),),
        "numpy.linspace": lambda: (np.linspace(0, 1, 5),),
        "numpy.unique": lambda: np.unique(np.array([[3, 1], [1, 2]]), return_index=True, return_counts=True),
    }[name]()
    assert all(array.ndim == 1 for array in made)
    last = made[-1]
    before = last.copy()
    item = last[0]
    item -= 1  # a scalar copy: the array keeps its value
    assert not isinstance(item, np.ndarray) and np.array_equal(last, before)


@pytest.mark.parametrize("name", sorted(_knowledge().shape_keeping))
def test_f23_shape_keeping_functions_keep_the_dimensions(name):
    """aliasing.toml [indexing] shape_keeping; and an index array of 1-D gathers a 1-D array from a 1-D one."""
    function = getattr(np, name.rsplit(".", 1)[1])
    for array in (np.arange(5.0), np.ones((2, 3))):
        assert function(array).ndim == array.ndim
    counts = np.array([3, 1, 2])
    assert counts[np.argsort(counts)].ndim == 1


def test_f56_detach_in_place_leaves_a_leaf_that_does_not_require_grad():
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x -= 0.1 * x.grad
    assert "detach_" in _knowledge().detach_in_place_methods
    x.detach_()
    assert x.is_leaf and not x.requires_grad
    x -= 0.1 * x.grad  # an optimiser's update, legal now
    assert torch.allclose(x, torch.full((3,), 0.8))


_RENORMING = _knowledge()


@pytest.mark.parametrize("name", sorted(_RENORMING.renorming_modules | _RENORMING.renorming_functions))
def test_f57_max_norm_rescales_the_weight_in_place_under_no_grad(name):
    """aliasing.toml [renorming_calls]: each row, given `max_norm`, moves its weight's version without a leaf error."""
    keyword = {_RENORMING.renorming_keyword: 0.5}
    if name in _RENORMING.renorming_modules:
        module = getattr(nn, name)(10, 4, **keyword)
        weight, call = module.weight, lambda: module(torch.tensor([[1, 2]]))
    else:
        weight = torch.randn(10, 4, requires_grad=True)
        call = lambda: getattr(F, name)(torch.tensor([[1, 2]]), weight, **keyword)  # noqa: E731
    before = weight._version
    call().sum().backward()  # a leaf that requires grad, written under no-grad: runs
    assert weight._version > before and weight.requires_grad and weight.is_leaf
    saved = weight @ torch.ones(4, 2, requires_grad=True)
    call()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_f58_what_indexes_a_tensor_is_an_integer_that_never_requires_grad(dtype):
    """`x[idx]`: torch takes an integer or bool index tensor, no other (flow.py `_index_grad`)."""
    x = torch.randn(5, 3, requires_grad=True)
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        x[torch.zeros(2, dtype=dtype)]
    for index in (torch.tensor([0, 2]), torch.tensor([0, 2], dtype=torch.int32), x[:, 0] > 0):
        with pytest.raises(RuntimeError, match="floating point"):
            index.requires_grad_()
        picked = index.gather(0, torch.tensor([0])) if index.dtype != torch.bool else index[:1]
        assert picked.grad_fn is None and not picked.requires_grad
