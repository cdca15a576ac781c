"""Which rule code each run-time hazard family is reported under: the code of the static rule that finds
the same hazard, so `trace` and `check` findings line up (and the rule page explains both)."""

from __future__ import annotations

CODES = {
    "data-write": "GML101",  # write through .data read by backward
    "state-dict": "GML102",  # state_dict() snapshot overwritten, then read
    "alias-write": "GML103",  # .detach()/.data/view alias read after a write through another tensor
    "numpy": "GML106",  # from_numpy tensor read after its array was rewritten
    "process-boundary": "GML201",  # write-after-send: written after it was sent to another process
    "receiver-write": "GML202",  # a child writes a tensor its parent sent
    "empty-cache": "GML406",  # torch.cuda.empty_cache() in every optimizer step
    "fork-after-cuda": "GML204",  # fork after the CUDA driver was initialised, CUDA then used in the child
}
