// placeholder so the library has a translation unit until algorithms land
namespace hpr::sched { int kSchedulerAbi = 1; }
