# source: https://github.com/MouseLand/suite2p/pull/1266 (fixes issue #1265; code: suite2p/registration/bidiphase.py, shift)
# family: in-place write whose source overlaps its destination (a slice shifted onto itself)
# symptom: since registration passes torch tensors, `bidiphase.shift` corrupts the odd scan lines instead of shifting
#   them (34 % of odd-line pixels differ from the intended shift with bidiphase=3): numpy copies an overlapping source
#   first, torch's copy does not; the fix copies the source slice first (clone() / copy())
# hazard: `frames[:, 1::2, bidiphase:] = frames[:, 1::2, :-bidiphase]` on a torch tensor
# runs-on-cpu: yes
# printed (torch 2.13): odd-line pixels that differ from the numpy shift: 29.7%
import numpy as np
import torch


def shift(frames, bidiphase):
    """Shift the odd lines of frames (n x Ly x Lx) along x by bidiphase, in place."""
    if bidiphase > 0:
        frames[:, 1::2, bidiphase:] = frames[:, 1::2, :-bidiphase]  # hazard: GML110
    else:
        frames[:, 1::2, :bidiphase] = frames[:, 1::2, -bidiphase:]


def register_frames(frames, bidiphase=3):
    if bidiphase != 0:
        shift(frames, bidiphase)
    return frames


rng = np.random.default_rng(0)
raw = rng.random((4, 16, 64)).astype(np.float32)
want = raw.copy()
shift(want, 3)
got = register_frames(torch.from_numpy(raw.copy()), bidiphase=3).numpy()
odd = (got[:, 1::2] != want[:, 1::2]).mean()
print(f"odd-line pixels that differ from the numpy shift: {odd:.1%}")
