def scale_kernel(x):
    return x * 2


def scale(x):
    return scale_kernel(x)
