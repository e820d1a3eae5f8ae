"""Independent numeric references shared by the gradient tests."""
import numpy as np


def finite_differences(f, x, eps=1e-6):
    """d sum(f(x)) / dx by central differences (`f` of a numpy array)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (np.sum(f(up)) - np.sum(f(down))) / (2 * eps)
    return grad
