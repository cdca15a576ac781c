# source: https://github.com/paarthneekhara/AdversarialDeepFakes/issues/23
# family: autograd in-place error on a multi-output view (unbind)
# symptom: robust_fgsm -> predict_with_model -> the Normalize transform's t.sub_(m).div_(s) raises
#   "Output 0 of UnbindBackward is a view and is being modified inplace"
# hazard: the sub_ on each channel of the perturbed image, which requires grad for the attack
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Unbind is a view and is being modified inplace. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class Normalize:
    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, tensor):
        for t, m, s in zip(tensor, self.mean, self.std):
            t.sub_(m).div_(s)  # hazard: GML105
        return tensor


norm_transform = Normalize([0.5] * 3, [0.5] * 3)


def predict_with_model(image, model):
    resized_image = F.interpolate(image.unsqueeze(0), size=(16, 16)).squeeze(0)
    normalized_image = norm_transform(resized_image)  # hazard-via: GML105
    logits = model(normalized_image.unsqueeze(0))
    return logits.argmax(1), logits


def robust_fgsm(input_img, model, eps=0.03):
    perturbed = input_img.clone().requires_grad_(True)
    _, logits = predict_with_model(perturbed, model)  # hazard-via: GML105
    loss = F.cross_entropy(logits, torch.tensor([0]))
    loss.backward()
    return (perturbed + eps * perturbed.grad.sign()).clamp(0, 1).detach()


classifier = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 2))
print(robust_fgsm(torch.rand(3, 20, 20), classifier).shape)
