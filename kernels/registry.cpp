namespace hpr::kernels { int kKernelsAbi = 1; }
