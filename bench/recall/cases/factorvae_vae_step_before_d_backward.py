# source: https://github.com/1Konny/FactorVAE/issues/15 (code: solver.py, Solver.train)
# family: autograd in-place errors: an optimizer step overwrites parameters a pending backward needs
# symptom: "Inplace problem when calling D_tc_loss.backward()": one of the variables needed for gradient computation
#   has been modified by an inplace operation: [torch.cuda.FloatTensor [4096, 6]], which is output 0 of TBackward;
#   a later comment: the VAE's optimizer performs a step before D_tc_loss, which still goes through D_z, is backwarded
# hazard: self.optim_VAE.step() writes the VAE's weights while D_tc_loss's graph (through D_z and z) still needs them
# runs-on-cpu: yes (small MLPs stand in for FactorVAE and Discriminator; the data loader is a list of batches)
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [128, 12]], which is output 0 of AsStrided, is at version 2; expected version 1 instead.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

class FactorVAE(nn.Module):
    def __init__(self, z_dim=6):
        super().__init__()
        self.z_dim = z_dim
        self.encode = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2 * z_dim))
        self.decode = nn.Sequential(nn.Linear(z_dim, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x, no_dec=False):
        stats = self.encode(x)
        mu, logvar = stats[:, :self.z_dim], stats[:, self.z_dim:]
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        if no_dec: return z.squeeze()
        return self.decode(z), mu, logvar, z.squeeze()

def permute_dims(z):
    B, d = z.size()
    return torch.cat([z_j[torch.randperm(B)] for z_j in z.split(1, 1)], 1)

class Solver(object):
    def __init__(self, batch_size=32, gamma=6.4):
        self.batch_size, self.gamma = batch_size, gamma
        self.VAE = FactorVAE(6)
        self.optim_VAE = optim.Adam(self.VAE.parameters(), lr=1e-4, betas=(0.9, 0.999))
        self.D = nn.Sequential(nn.Linear(6, 1000), nn.LeakyReLU(0.2, True), nn.Linear(1000, 2))
        self.optim_D = optim.Adam(self.D.parameters(), lr=1e-4, betas=(0.5, 0.9))
        self.data_loader = [(torch.rand(batch_size, 64), torch.rand(batch_size, 64)) for _ in range(3)]

    def train(self):
        ones = torch.ones(self.batch_size, dtype=torch.long)
        zeros = torch.zeros(self.batch_size, dtype=torch.long)
        for x_vae, x_disc in self.data_loader:
            x_recon, mu, logvar, z = self.VAE(x_vae)
            vae_recon_loss = F.binary_cross_entropy_with_logits(x_recon, x_vae, reduction='sum').div(self.batch_size)
            vae_kld = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(1).mean()
            D_z = self.D(z)
            vae_tc_loss = (D_z[:, :1] - D_z[:, 1:]).mean()
            vae_loss = vae_recon_loss + vae_kld + self.gamma * vae_tc_loss

            self.optim_VAE.zero_grad()
            vae_loss.backward(retain_graph=True)
            self.optim_VAE.step()  # hazard: GML109

            z_prime = self.VAE(x_disc, no_dec=True)
            z_pperm = permute_dims(z_prime).detach()
            D_z_pperm = self.D(z_pperm)
            D_tc_loss = 0.5 * (F.cross_entropy(D_z, zeros) + F.cross_entropy(D_z_pperm, ones))

            self.optim_D.zero_grad(); D_tc_loss.backward(); self.optim_D.step()
        print('done')

Solver().train()
