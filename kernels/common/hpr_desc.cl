// OpenCL C mirror of hpr::kernels::Desc (kernels/device_batch.hpp). The host prepends it (embedded_source("hpr_desc"))
// before each application's kernel source.
typedef struct __attribute__((aligned(16))) {
  uint off;
  ushort len;
  ushort flags;
  uint flow;
  uint seq;
} hpr_desc;
