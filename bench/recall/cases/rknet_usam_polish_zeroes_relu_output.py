# source: https://github.com/AggMan96/RK-Net/issues/9 (code: model.py, USAM.__call__ and ft_net.forward)
# family: autograd in-place errors: a saved tensor written in place (the output of a ReLU module)
# symptom: training fails in loss.backward() with "one of the variables needed for gradient computation has been
#   modified by an inplace operation: [torch.cuda.FloatTensor [8, 1, 96, 96]], which is output 0 of ReluBackward0";
#   the answer: the polish step `att[:, :, :, 0] = 0` ... writes att in place, add `att = att.clone()`
# hazard: USAM zeroes the border of `att`, the output of self.relu, which ReLU saved for its backward
# runs-on-cpu: yes. A small conv stem stands in for the ResNet-50 backbone (the case needs no torchvision)
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [2, 1, 16, 16]], which is output 0 of Relu, is at version 4;
#   expected version 0 instead. ...
import torch
import torch.nn as nn
from torch.nn import functional as F


class USAM(nn.Module):
    def __init__(self, kernel_size=3, padding=1, polish=True):
        super(USAM, self).__init__()
        kernel = torch.ones((kernel_size, kernel_size)).unsqueeze(0).unsqueeze(0)
        self.weight = nn.Parameter(data=kernel, requires_grad=False)
        kernel2 = (torch.ones((1, 1)) * (kernel_size * kernel_size)).unsqueeze(0).unsqueeze(0)
        self.weight2 = nn.Parameter(data=kernel2, requires_grad=False)
        self.polish = polish
        self.pad = padding
        self.relu = nn.ReLU()
        self.bn = nn.BatchNorm2d(1)

    def __call__(self, x):
        fmap = x.sum(1, keepdim=True)
        x1 = F.conv2d(fmap, self.weight, padding=self.pad)
        x2 = F.conv2d(fmap, self.weight2, padding=0)
        att = x2 - x1
        att = self.bn(att)
        att = self.relu(att)
        if self.polish:
            att[:, :, :, 0] = 0  # hazard: GML109
            att[:, :, :, -1] = 0
            att[:, :, 0, :] = 0
            att[:, :, -1, :] = 0
        output = x + att * x
        return output


class ft_net(nn.Module):
    def __init__(self, class_num):
        super(ft_net, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.usam_1 = USAM()
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Linear(8, class_num)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.usam_1(x)
        x = self.pool(x).view(x.size(0), -1)
        return self.classifier(x)


model = ft_net(class_num=5)
inputs, labels = torch.randn(2, 3, 16, 16), torch.tensor([1, 3])
loss = nn.CrossEntropyLoss()(model(inputs), labels)
loss.backward()
print("trained one step")
