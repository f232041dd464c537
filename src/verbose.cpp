#include "verbose.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <unistd.h>

namespace selgraph {
namespace impl {

namespace {
int env_int(const char *name) {
    const char *v = std::getenv(name);
    return v ? std::atoi(v) : 0;
}
} // namespace

int verbose_level() {
    static const int level = env_int("SELGRAPH_VERBOSE");
    return level;
}

void jit_generated(const std::string &name, const void *code, size_t size) {
    static const bool dump = env_int("SELGRAPH_JIT_DUMP") != 0;
    static const bool profile = env_int("SELGRAPH_JIT_PROFILE") != 0;
    if (dump) {
        const std::string file = "selgraph_jit_" + name + ".bin";
        if (FILE *f = std::fopen(file.c_str(), "wb")) {
            std::fwrite(code, 1, size, f);
            std::fclose(f);
        }
    }
    if (profile) {
        // Kernels of several threads' compiles: one line each, whole.
        static std::mutex m;
        std::lock_guard<std::mutex> lock(m);
        const std::string file =
                "/tmp/perf-" + std::to_string(getpid()) + ".map";
        if (FILE *f = std::fopen(file.c_str(), "a")) {
            std::fprintf(f, "%lx %zx selgraph_%s\n",
                         static_cast<unsigned long>(
                                 reinterpret_cast<uintptr_t>(code)),
                         size, name.c_str());
            std::fclose(f);
        }
    }
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch())
            .count();
}

void verbose_print(const std::string &line) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    std::fprintf(stdout, "%s\n", line.c_str());
    std::fflush(stdout);
}

} // namespace impl
} // namespace selgraph
