/* A stand-in for libnvidia-ml.so.1 (the few entry points probe_nvml looks up), so that the NVML meter's dlopen
 * path is exercised on machines without an NVIDIA driver. Two GPUs: GPU 0 has a total-energy counter (mJ) that
 * advances 50 J per read; GPU 1 answers "not supported" for energy and reports 100 W (mW) instead.
 * FAKE_NVML_FAIL=init: nvmlInit_v2 fails; =read: it loads and starts, but every energy and power read fails
 * (an NVML that loads but returns errors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
enum { kSuccess = 0, kNotSupported = 3, kInvalidArgument = 2, kUnknown = 999 };

static int failing(const char* what) {
  const char* f = getenv("FAKE_NVML_FAIL");
  return f != NULL && strcmp(f, what) == 0;
}

static char g_devices[2];
static unsigned long long g_energy_mj = 1000000;

static int index_of(nvmlDevice_t d) {
  for (int i = 0; i < 2; ++i)
    if ((void*)d == (void*)&g_devices[i]) return i;
  return -1;
}

int nvmlInit_v2(void) { return failing("init") ? kUnknown : kSuccess; }
int nvmlShutdown(void) { return kSuccess; }
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 2;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* device) {
  if (i >= 2) return kInvalidArgument;
  *device = (nvmlDevice_t)(void*)&g_devices[i];
  return kSuccess;
}
int nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  snprintf(name, length, "Fake GPU %d", index_of(device));
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy_mj) {
  if (failing("read")) return kUnknown;
  if (index_of(device) != 0) return kNotSupported;
  g_energy_mj += 50000;
  *energy_mj = g_energy_mj;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* power_mw) {
  (void)device;
  if (failing("read")) return kUnknown;
  *power_mw = 100000;
  return kSuccess;
}
const char* nvmlErrorString(int result) { return result == kNotSupported ? "Not Supported" : "Unknown Error"; }
