// libFuzzer entry for one target; HPR_FUZZ_ENTRY names the function (set per executable in CMakeLists.txt).
#include "tests/fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return HPR_FUZZ_ENTRY(data, size); }
