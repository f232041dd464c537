#include "verbose.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

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

bool jit_dump_enabled() {
    static const bool on = env_int("SELGRAPH_JIT_DUMP") != 0;
    return on;
}

void jit_dump(const std::string &name, const void *code, size_t size) {
    const std::string file = "selgraph_jit_" + name + ".bin";
    if (FILE *f = std::fopen(file.c_str(), "wb")) {
        std::fwrite(code, 1, size, f);
        std::fclose(f);
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
