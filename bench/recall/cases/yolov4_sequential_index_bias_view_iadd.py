# source: https://github.com/Lornatang/YOLOv4-PyTorch/issues/6 (code: yolov4_pytorch/model/module/layer.py,
#   YOLO.__init__ and YOLO._initialize_biases)
# family: autograd in-place errors: a leaf that requires grad, or a view of one, written in place
# symptom: "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation." at
#   `b[:, 4] += math.log(8 / (640 / s) ** 2)`, from `self._initialize_biases()` in the model's __init__
# hazard: `b` is `mi.bias.view(...)`, a view of a conv's bias Parameter, with `mi` taken from the model's Sequential
#   by a computed index (`self.model[f % module.i]`)
# runs-on-cpu: yes. Two 1x1 convs and a Detect stand-in (with `f`, `i`, `stride`, `num_anchors`, `num_classes`)
#   replace the network parse_model builds from the yaml
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place
#   operation.
import math

import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, num_classes, num_anchors, f, i):
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.f, self.i = f, i
        self.stride = torch.tensor([8.0, 16.0])


class YOLO(nn.Module):
    def __init__(self, num_classes=2, num_anchors=3):
        super(YOLO, self).__init__()
        outputs = num_anchors * (num_classes + 5)
        self.model = nn.Sequential(nn.Conv2d(4, outputs, 1), nn.Conv2d(4, outputs, 1),
                                   Detect(num_classes, num_anchors, f=[0, 1], i=2))
        self._initialize_biases()  # only run once

    def _initialize_biases(self, cf=None):
        module = self.model[-1]  # Detect() module
        for f, s in zip(module.f, module.stride):
            mi = self.model[f % module.i]
            b = mi.bias.view(module.num_anchors, -1)  # conv.bias(21) to (3,7)
            b[:, 4] += math.log(8 / (640 / s) ** 2)  # hazard: GML108
            b[:, 5:] += math.log(0.6 / (module.num_classes - 0.99)) if cf is None else torch.log(cf / cf.sum())
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)


model = YOLO()
print(model.model[0].bias[:7])
