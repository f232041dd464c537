#include "verbose.hpp"

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fcntl.h>
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
        // Kernels of several threads' compiles: one line each, whole. The
        // map is created afresh by this process's first kernel (a file
        // left by an earlier process of the same pid would name its code),
        // not through a link, and kept open; a forked child opens its own.
        static std::mutex m;
        static FILE *map = nullptr;
        static pid_t owner = 0;
        std::lock_guard<std::mutex> lock(m);
        const pid_t pid = getpid();
        if (owner != pid) {
            owner = pid;
            map = nullptr;
            const std::string file =
                    "/tmp/perf-" + std::to_string(pid) + ".map";
            const int fd =
                    open(file.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                         0600);
            if (fd >= 0 && !(map = fdopen(fd, "w")))
                close(fd);
        }
        if (map) {
            std::fprintf(map, "%" PRIxPTR " %zx selgraph_%s\n",
                         reinterpret_cast<uintptr_t>(code), size, name.c_str());
            std::fflush(map);
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
