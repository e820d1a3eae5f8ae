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


def central_differences(loss, z, eps=1e-6):
    """dL/dRe z + i dL/dIm z of the real scalar loss(z) by central differences (dL/dz alone
    for a real z): autodiff's gradient convention for complex values."""
    grad = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for unit in ((1, 1j) if np.iscomplexobj(z) else (1,)):
            up, down = z.copy(), z.copy()
            up[i] += eps * unit
            down[i] -= eps * unit
            grad[i] += unit * (loss(up) - loss(down)) / (2 * eps)
    return grad
