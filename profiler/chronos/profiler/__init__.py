"""chronos.profiler: parallel profiling runs over checkpoint intervals."""
