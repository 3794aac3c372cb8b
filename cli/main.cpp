#include <cstdio>
int main() { std::puts("hpr: under construction"); return 0; }
