# source: https://github.com/Trusted-AI/adversarial-robustness-toolbox/issues/2262
# family: aliasing that silently changes values: a numpy bridge written in place
# symptom: "`PyTorchYolo` and `PyTorchObjectDetector` modify the original numpy array": with clip_values=(0, 255),
#   `predict(x)` divides the images in place after `torch.from_numpy`, so the caller's array is changed too
# hazard: `x_tensor /= norm_factor` on `torch.from_numpy(x)`, the caller's array, which the caller reads afterwards
# runs-on-cpu: yes
# printed (torch 2.13): before predict: 200.0, after predict: 0.78431374 (the caller's image was divided by 255)
import numpy as np
import torch
import torch.nn as nn


class PyTorchYolo:
    def __init__(self, model, clip_values=None, device="cpu"):
        self._model = model
        self.clip_values = clip_values
        self._device = torch.device(device)

    def _preprocess(self, x):
        x_tensor = torch.from_numpy(x).to(self._device)
        if self.clip_values is not None:
            norm_factor = self.clip_values[1]
            x_tensor /= norm_factor  # hazard: GML106
        return x_tensor

    def predict(self, x, batch_size=2):
        x_preprocessed = self._preprocess(x)
        outputs = []
        with torch.no_grad():
            for i in range(0, len(x_preprocessed), batch_size):
                outputs.append(self._model(x_preprocessed[i : i + batch_size]))
        return torch.cat(outputs).numpy()


model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
detector = PyTorchYolo(model, clip_values=(0, 255))
images = np.full((4, 3, 32, 32), 200.0, dtype=np.float32)
print("before predict:", images[0, 0, 0, 0], end=", ")
detections = detector.predict(images)
print("after predict:", images[0, 0, 0, 0])
