"""The registry: one table of every rule, in code order."""

from gpumem_lint.rules.base import Rule
from gpumem_lint.rules.gml001_invalid_syntax import InvalidSyntax
from gpumem_lint.rules.gml003_unreadable_file import UnreadableFile
from gpumem_lint.rules.gml009_internal_error import InternalError
from gpumem_lint.rules.gml101_data_write_before_backward import DataWriteBeforeBackward
from gpumem_lint.rules.gml102_state_dict_alias_snapshot import StateDictAliasSnapshot
from gpumem_lint.rules.gml103_alias_read_after_inplace_write import AliasReadAfterInplaceWrite
from gpumem_lint.rules.gml104_inplace_write_on_expanded_tensor import InplaceWriteOnExpandedTensor
from gpumem_lint.rules.gml105_inplace_write_on_multi_output_view import InplaceWriteOnMultiOutputView
from gpumem_lint.rules.gml106_numpy_shared_memory_write import NumpySharedMemoryWrite
from gpumem_lint.rules.gml107_inplace_write_on_argument import InplaceWriteOnArgument

ALL_RULES: tuple[type[Rule], ...] = (
    InvalidSyntax,
    UnreadableFile,
    InternalError,
    DataWriteBeforeBackward,
    StateDictAliasSnapshot,
    AliasReadAfterInplaceWrite,
    InplaceWriteOnExpandedTensor,
    InplaceWriteOnMultiOutputView,
    NumpySharedMemoryWrite,
    InplaceWriteOnArgument,
)

RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "InternalError", "InvalidSyntax", "UnreadableFile"]
