# source: https://github.com/hellloxiaotian/ESRGCNN/issues/2 (code: esrgcnn/model/esrgcnn.py, MFCModule)
# family: autograd in-place write on a multi-output view (split)
# symptom: testing raises "RuntimeError: Output 1 of SplitWithSizesBackward0 is a view and is being modified
#   inplace ..." in nn.ReLU(inplace=True) (F.relu -> torch.relu_) applied to the second output of torch.split
# hazard: self.ReLU (nn.ReLU(inplace=True)) applied to remain1, an output of torch.split
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 1 of SplitWithSizes is a view and is being modified inplace. This view is the output of a function that returns multiple views. ...
import torch
import torch.nn as nn


class MFCModule(nn.Module):
    def __init__(self, in_channels, out_channels, gropus=1):
        super(MFCModule, self).__init__()
        kernel_size = 3
        padding = 1
        features = 64
        features1 = 48
        distill_rate = 0.25
        self.distilled_channels = int(features * distill_rate)
        self.remaining_channels = int(features - self.distilled_channels)
        self.conv1_1 = nn.Sequential(nn.Conv2d(in_channels=features, out_channels=features, kernel_size=kernel_size, padding=padding, groups=1, bias=False))
        self.conv1_2 = nn.Sequential(nn.Conv2d(in_channels=features1, out_channels=features, kernel_size=kernel_size, padding=padding, groups=1, bias=False))
        self.conv1_3 = nn.Sequential(nn.Conv2d(in_channels=features1, out_channels=features, kernel_size=kernel_size, padding=padding, groups=1, bias=False))
        self.ReLU = nn.ReLU(inplace=True)

    def forward(self, input):
        out1_c = self.conv1_1(input)
        dit1, remain1 = torch.split(out1_c, (self.distilled_channels, self.remaining_channels), dim=1)
        out1_r = self.ReLU(remain1)  # hazard: GML105
        out2_c = self.conv1_2(out1_r)
        dit2, remain2 = torch.split(out2_c, (self.distilled_channels, self.remaining_channels), dim=1)
        remain2 = remain2 + remain1
        out2_r = self.ReLU(remain2)
        out3_c = self.conv1_3(out2_r)
        dit3, remain3 = torch.split(out3_c, (self.distilled_channels, self.remaining_channels), dim=1)
        remain3 = remain3 + remain2
        dit = dit1 + dit2 + dit3
        out_t = torch.cat([dit, remain3], dim=1)
        out_r = self.ReLU(out_t)
        return input + out_r


net = MFCModule(64, 64)
lr = torch.randn(1, 64, 12, 12)
try:
    sr = net(lr).detach().squeeze(0)  # detach() break the reversed transformation.
    print(sr.shape)
except RuntimeError as error:
    print("RuntimeError:", error)
