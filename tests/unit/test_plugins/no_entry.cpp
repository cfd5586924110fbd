// A shared library that is not an fthost plugin: it has no fthost_plugin_v1 entry point.
extern "C" __attribute__((visibility("default"))) int not_a_plugin() { return 42; }
