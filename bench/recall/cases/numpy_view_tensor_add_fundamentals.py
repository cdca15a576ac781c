# source: https://github.com/mrdbourke/pytorch-deep-learning/issues/83
# family: aliasing that silently changes values: numpy bridge (`tensor.numpy()` then an in-place add on the tensor)
# symptom: in the "PyTorch tensors & NumPy" section, `np_array = t.numpy()` then `t += 10` changes np_array too
#   (11s in both), while the course says the two do not share memory
# hazard: `tensor += 10` after `numpy_tensor = tensor.numpy()`, both read afterwards as separate values
# runs-on-cpu: yes
# printed (torch 2.13): tensor([11., 11., 11., 11., 11., 11., 11.]) [11. 11. 11. 11. 11. 11. 11.] (the array was meant to stay at 1s)
import torch


def tensor_to_numpy_demo():
    tensor = torch.ones(7)
    numpy_tensor = tensor.numpy()
    print(tensor, tensor.dtype, numpy_tensor, numpy_tensor.dtype)
    # change the tensor and see what happens to the array
    tensor += 10  # hazard: GML106
    print(tensor, numpy_tensor)
    return tensor, numpy_tensor


if __name__ == "__main__":
    tensor_to_numpy_demo()
