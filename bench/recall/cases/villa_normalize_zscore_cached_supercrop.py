# source: https://github.com/ScrollPrize/villa/pull/1446 (code as quoted there: _prepare_image and normalize_zscore, CropCache._extract_subcrop, the neural_tracing/infer.py consumer)
# family: aliasing that silently changes values: numpy bridge (`.numpy()` of a view into a cached tensor, normalised in place)
# symptom: normalising a crop z-scores the cached supercrop in place (`.numpy()` shares its memory and
#   `astype(float32, copy=False)` returns the same array), so the next overlapping crop from that cache entry is drawn
#   from a buffer that is part raw and part already normalised, and gets normalised again
# hazard: `arr -= mean` in normalize_zscore, on the array that `.numpy()` of the cached crop handed it
# runs-on-cpu: yes
# printed (torch 2.13): the same crop normalised twice differs: max |diff| 1.27... (cached supercrop mean after two crops: 2.46..., raw mean 2.99...)
import numpy as np
import torch


def _prepare_image(image, target_dtype=np.float32):
    arr = np.asarray(image)
    if target_dtype is not None:
        arr = arr.astype(target_dtype, copy=False)
    return arr


def normalize_zscore(image, eps=1e-6):
    arr = _prepare_image(image, np.float32)
    mean, std = arr.mean(), arr.std()
    arr -= mean  # hazard: GML106
    arr /= std + eps
    return arr


class CropCache:
    def __init__(self, volume, size=8):
        self.volume = volume
        self.size = size
        self.supercrops = {}

    def _supercrop(self, key):
        if key not in self.supercrops:
            z, y, x = key
            self.supercrops[key] = self.volume[z:z + 2 * self.size, y:y + 2 * self.size, x:x + 2 * self.size].clone()
        return self.supercrops[key]

    def _extract_subcrop(self, supercrop, offset):
        z0, y0, x0 = offset
        d = h = w = self.size
        return supercrop[z0:z0 + d, y0:y0 + h, x0:x0 + w]

    def get(self, center_zyx):
        key = tuple(c // (2 * self.size) * (2 * self.size) for c in center_zyx)
        offset = tuple(c - k for c, k in zip(center_zyx, key))
        return self._extract_subcrop(self._supercrop(key), offset), key


class Tracer:
    def __init__(self, volume):
        self.crop_cache = CropCache(volume)

    def crop_at(self, center_zyx):
        volume_crop_raw, min_corner_zyx = self.crop_cache.get(center_zyx)
        volume_crop_zscore = torch.from_numpy(normalize_zscore(volume_crop_raw.numpy()))  # hazard-via: GML106
        return volume_crop_zscore


volume = torch.rand(32, 32, 32) * 2 + 2
tracer = Tracer(volume)
first = tracer.crop_at((4, 4, 4)).clone()
tracer.crop_at((6, 6, 6))
again = tracer.crop_at((4, 4, 4))
print("the same crop normalised twice differs: max |diff|", (first - again).abs().max().item(),
      "(cached supercrop mean after two crops:", tracer.crop_cache.supercrops[(0, 0, 0)].mean().item(),
      "raw mean", volume[:16, :16, :16].mean().item(), ")")
