# source: https://github.com/meetps/pytorch-semseg/issues/121 (code: ptsemseg/models/pspnet.py, pspnet's final layers
#   and forward, and ptsemseg/models/utils.py, conv2DBatchNormRelu)
# family: autograd in-place errors: a tensor saved for backward then modified
# symptom: "Can't backward with pspnet, because of an in-place modified variable. When I change the model segnet it
#   works"; "Using Dropout inplace causes the problem ... solved by changing self.dropout = nn.Dropout2d(p=0.1,
#   inplace=True) to inplace=False"
# hazard: `x = self.dropout(x)`, a Dropout2d(inplace=True), writes the output of cbr_final, whose last layer is a
#   ReLU(inplace=True) that saved that output for its backward
# runs-on-cpu: yes. pspnet keeps its final layers: a 1x1 conv stands in for the ResNet backbone and the pyramid pooling
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [2, 512, 8, 8]], which is output 0 of Relu, is at version 2;
#   expected version 1 instead. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class conv2DBatchNormRelu(nn.Module):
    def __init__(self, in_channels, n_filters, k_size, stride, padding, bias=True, dilation=1, is_batchnorm=True):
        super(conv2DBatchNormRelu, self).__init__()
        conv_mod = nn.Conv2d(int(in_channels), int(n_filters), kernel_size=k_size, padding=padding, stride=stride,
                             bias=bias, dilation=dilation)
        if is_batchnorm:
            self.cbr_unit = nn.Sequential(conv_mod, nn.BatchNorm2d(int(n_filters)), nn.ReLU(inplace=True))
        else:
            self.cbr_unit = nn.Sequential(conv_mod, nn.ReLU(inplace=True))

    def forward(self, inputs):
        outputs = self.cbr_unit(inputs)
        return outputs


class pspnet(nn.Module):
    def __init__(self, n_classes=21, input_size=(32, 32)):
        super(pspnet, self).__init__()
        self.n_classes = n_classes
        self.input_size = input_size
        self.backbone_and_pyramid = nn.Conv2d(3, 4096, 1)
        # Final conv layers
        self.cbr_final = conv2DBatchNormRelu(4096, 512, 3, 1, 1, False)
        self.dropout = nn.Dropout2d(p=0.1, inplace=True)
        self.classification = nn.Conv2d(512, self.n_classes, 1, 1, 0)

    def forward(self, x):
        inp_shape = x.shape[2:]
        x = F.max_pool2d(x, 4)
        x = self.backbone_and_pyramid(x)

        x = self.cbr_final(x)
        x = self.dropout(x)  # hazard: GML109

        x = self.classification(x)
        x = F.interpolate(x, size=inp_shape, mode="bilinear", align_corners=True)
        return x


model = pspnet(n_classes=21)
model.train()
images = torch.randn(2, 3, 32, 32)
labels = torch.randint(0, 21, (2, 32, 32))
loss = F.cross_entropy(model(images), labels)
loss.backward()
print(loss.item())
