# source: https://github.com/cornellius-gp/gpytorch/issues/550
# family: memory-control APIs
# symptom: "Memory Deallocation": after training an ExactGP on CUDA, `del model; torch.cuda.empty_cache()` leaves
#   torch.cuda.memory_allocated() unchanged ("Before: 39936 - after: 1725952 - final: 1725952")
# hazard: `del model` then empty_cache() while the optimizer (model.parameters()) and mll (which holds model) still
#   refer to it
# runs-on-cpu: no (needs CUDA and gpytorch)
# printed (torch 2.13): - (CUDA only)
import torch
import gpytorch

train_x = torch.linspace(0, 1, 100).view(1, -1).cuda()
train_y = torch.sin(train_x * (2 * 3.1416)).cuda()


class ExactGPModel(gpytorch.models.ExactGP):
    def __init__(self, train_x, train_y, likelihood):
        super(ExactGPModel, self).__init__(train_x, train_y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        mean_x = self.mean_module(x)
        covar_x = self.covar_module(x)
        return gpytorch.distributions.MultivariateNormal(mean_x, covar_x)


likelihood = gpytorch.likelihoods.GaussianLikelihood().cuda()
model = ExactGPModel(train_x[0], train_y[0], likelihood).cuda()

optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)

model.train()
likelihood.train()
training_iterations = 100

memory_before = torch.cuda.memory_allocated()
for i in range(training_iterations):
    # Zero backprop gradients
    optimizer.zero_grad()
    # Get output from model
    output = model(train_x[0])
    # Calc loss and backprop derivatives
    loss = -mll(output, train_y[0])
    loss.backward()
    print('Iter %d/%d - Loss: %.3f' % (i + 1, training_iterations, loss.item()))
    optimizer.step()
memory_after = torch.cuda.memory_allocated()

del model
torch.cuda.empty_cache()  # hazard: GML407
memory_final = torch.cuda.memory_allocated()

print('Before: ' + str(memory_before) + ' - after: ' + str(memory_after) + '-final: ' + str(memory_final))
