# source: https://github.com/cassidylaidlaw/perceptual-advex/issues/8 (code: perceptual_advex/perceptual_attacks.py,
#   the line search of the perceptual attack's _attack, lines 623-625 of the reporter's traceback)
# family: in-place writes on overlapping memory
# symptom: "RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to
#   a single memory location" at `live[live] = (adv_labels == labels[live]) | (lpips_dists > self.bound)` in Colab
# hazard: the boolean mask `live` indexes the write into `live` itself
# runs-on-cpu: yes. A linear classifier and an L2 distance stand in for the AlexNet and the LPIPS model; the attack
#   loop is cut to the step that shrinks the live set
# printed (torch 2.13): RuntimeError: unsupported operation: some elements of the input tensor and the written-to
#   tensor refer to a single memory location. Please clone() the tensor before performing the operation.
import torch
import torch.nn as nn


class PerceptualAttack(nn.Module):
    def __init__(self, model, bound=0.5, num_iterations=5, targeted=False):
        super().__init__()
        self.model = model
        self.bound = bound
        self.num_iterations = num_iterations
        self.targeted = targeted

    def _attack(self, inputs, labels):
        adv_inputs = inputs.clone()
        live = torch.ones_like(labels, dtype=torch.bool)
        for attack_iter in range(self.num_iterations):
            step = 0.3 * torch.randn_like(adv_inputs[live])
            adv_inputs[live] = adv_inputs[live] + step
            adv_labels = self.model(adv_inputs[live]).argmax(1)
            lpips_dists = (adv_inputs[live] - inputs[live]).flatten(1).norm(dim=1)
            if self.targeted:
                live[live] = (adv_labels != labels[live]) | (lpips_dists > self.bound)
            else:
                live[live] = (adv_labels == labels[live]) | (lpips_dists > self.bound)  # hazard: GML110
            if live.sum() == 0:
                break
        return adv_inputs


model = nn.Sequential(nn.Flatten(), nn.Linear(12, 3))
inputs = torch.rand(8, 3, 2, 2)
labels = model(inputs).argmax(1)
attack = PerceptualAttack(model)
adv_inputs = attack._attack(inputs, labels)
print((adv_inputs - inputs).abs().max())
