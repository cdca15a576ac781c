# source: https://github.com/NVIDIA/earth2studio/issues/1133
# family: in-place write through an argument (the caller's tensor)
# symptom: StormCast.__call__ writes its result into the input tensor and returns it: the caller's initial
#   condition holds the forecast after the first call; StormCastCONUS clones first
# hazard: the slice assignment into `x`, the caller's tensor, inside the i/j/k loop
# runs-on-cpu: yes
# printed (torch 2.13): initial condition changed by the call: True
import torch


class StormCast:
    def __init__(self, regression_model, variables):
        self.regression_model = regression_model
        self.variables = variables

    @torch.inference_mode()
    def _forward(self, x, conditioning):
        return self.regression_model(x) + 0.1 * conditioning

    def __call__(self, x, coords, conditioning):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                for k in range(x.shape[2]):
                    x[i, j, k : k + 1] = self._forward(x[i, j, k : k + 1], conditioning[i, j, k : k + 1])  # hazard: GML107
        out_coords = dict(coords, lead_time=coords["lead_time"] + 1)
        return x, out_coords


model = StormCast(lambda t: t * 0.5 + 1.0, ["u10m", "v10m"])
x0 = torch.zeros(1, 1, 2, 2, 4, 4)
keep = x0.clone()
coords = {"lead_time": 0}
x1, coords1 = model(x0, coords, torch.ones_like(x0))  # hazard-via: GML107
print("initial condition changed by the call:", not torch.equal(x0, keep))
