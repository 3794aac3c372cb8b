// placeholder so the library has a translation unit until algorithms land
namespace hpr::prof { int kProfilerAbi = 1; }
