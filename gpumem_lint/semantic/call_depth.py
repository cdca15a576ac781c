"""How many calls deep a caller's tensors are followed into the functions of the file.

`main` passes a tensor that requires grad to `show`, which passes it to `denormalize`, which
writes it: the model re-analyses a function whose callers pass more than before (model.py),
and the fast path keeps its callers as far up (fast_path.py). Without libcst, so that the fast
path can read it before deciding to parse.
"""

#: The direct call, and this many calls beyond it.
FOLLOWED_CALLS = 4
