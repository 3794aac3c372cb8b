namespace hpr { const char* version() { return HPR_VERSION; } }
