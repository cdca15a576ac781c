# source: https://github.com/pytorch/pytorch/issues/17008
# family: silent aliasing: a tuple assignment that swaps two rows through views (`x[i], x[j] = x[j], x[i]`)
# symptom: "Pythonic element swapping doesn't work with Tensors": after `x[0], x[1] = x[1], x[0]` both rows hold the old
#   row 1 (the right-hand `x[0]` is a view, overwritten by the first assignment before it is copied into `x[1]`)
# hazard: the swap of two rows of the permutation buffer inside the pivoting loop
# runs-on-cpu: yes (a row-pivoting Gaussian elimination stands in for the reporter's "swap elements i and j")
# printed (torch 2.13): "rows after the pivot swap are equal: True" twice, then "solution: tensor([nan, nan, nan])" where
#   torch.linalg.solve gives tensor([0.4528, 0.1887, 0.3962])
import torch


def pivot_rows(a):
    a = a.clone()
    n = a.shape[0]
    for col in range(n):
        pivot = int(torch.argmax(a[col:, col].abs())) + col
        if pivot != col:
            a[col], a[pivot] = a[pivot], a[col]  # hazard: GML103
            print("rows after the pivot swap are equal:", bool(torch.equal(a[col], a[pivot])))
        for row in range(col + 1, n):
            a[row] -= a[row, col] / a[col, col] * a[col]
    return a


def solve(a, b):
    aug = pivot_rows(torch.cat([a, b[:, None]], dim=1))
    n = a.shape[0]
    x = torch.zeros(n, dtype=a.dtype)
    for i in reversed(range(n)):
        x[i] = (aug[i, n] - aug[i, i + 1:n] @ x[i + 1:]) / aug[i, i]
    return x


a = torch.tensor([[0.5, 2.0, 1.0], [4.0, 1.0, 0.0], [1.0, 3.0, 5.0]], dtype=torch.float64)
b = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
x = solve(a, b)
print("solution:", x)
print("torch.linalg.solve:", torch.linalg.solve(a, b))
