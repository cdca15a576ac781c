"""`gpumem-lint trace`: run a program and report the memory-sharing hazards that really happen.

Only the modules that name torch in their docstring import it, and they are imported only once the traced
program has imported torch itself: a program that sets `OMP_NUM_THREADS` before `import torch` must see its
setting honoured under the tracer too. `gpumem-lint check` imports nothing from this package.
"""
