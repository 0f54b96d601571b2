#include "tests/support/lector_test.h"

#include <ftw.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <vector>

#ifndef LECTOR_SOURCE_DIR
#define LECTOR_SOURCE_DIR "."
#endif

namespace lector::test {
namespace {

struct Case {
    std::string name;
    std::function<void()> fn;
};

std::vector<Case>& cases()
{
    static std::vector<Case> all;
    return all;
}

std::vector<std::filesystem::path>& tempDirs()
{
    static std::vector<std::filesystem::path> dirs;
    return dirs;
}

}  // namespace

void registerCase(const char* name, std::function<void()> fn) { cases().push_back({name, std::move(fn)}); }

void fail(const char* file, int line, const std::string& what)
{
    std::ostringstream s;
    s << file << ":" << line << ": " << what;
    throw Failure(s.str());
}

std::filesystem::path sharedDir()
{
    if (const char* env = std::getenv("LECTOR_SHARED_DIR")) return env;
    return std::filesystem::path(LECTOR_SOURCE_DIR) / ".." / "shared";
}

std::filesystem::path fixture(const std::string& relative)
{
    const auto p = sharedDir() / relative;
    if (!std::filesystem::exists(sharedDir())) throw Skip("shared/ not found at " + sharedDir().string());
    if (!std::filesystem::exists(p)) fail(__FILE__, __LINE__, "missing fixture " + p.string());
    return p;
}

std::filesystem::path ppocrModelDir()
{
    std::filesystem::path base = std::getenv("LECTOR_MODELS_DIR")
                                     ? std::filesystem::path(std::getenv("LECTOR_MODELS_DIR"))
                                     : std::filesystem::path(LECTOR_SOURCE_DIR) / "models";
    const auto dir = base / "ppocr-v4";
    if (!std::filesystem::exists(dir / "ch_PP-OCRv4_det_infer.onnx"))
        throw Skip("PP-OCR models not fetched (run ./lector.sh fetch-models): " + dir.string());
    return dir;
}

std::filesystem::path tempDir()
{
    static std::mt19937_64 rng(std::random_device{}());
    auto dir = std::filesystem::temp_directory_path() / ("lector-test-" + std::to_string(rng()));
    std::filesystem::create_directories(dir);
    tempDirs().push_back(dir);
    return dir;
}

}  // namespace lector::test

int main(int argc, char** argv)
{
    using namespace lector::test;
    const std::string filter = argc > 1 ? argv[1] : "";
    int passed = 0, failed = 0, skipped = 0;
    for (const auto& c : cases()) {
        if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
        const auto t0 = std::chrono::steady_clock::now();
        try {
            c.fn();
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            std::printf("PASS %s (%.0f ms)\n", c.name.c_str(), ms);
            ++passed;
        } catch (const Skip& s) {
            std::printf("SKIP %s: %s\n", c.name.c_str(), s.what());
            ++skipped;
        } catch (const Failure& f) {
            std::printf("FAIL %s\n  %s\n", c.name.c_str(), f.what());
            ++failed;
        } catch (const std::exception& e) {
            std::printf("FAIL %s\n  unexpected exception: %s\n", c.name.c_str(), e.what());
            ++failed;
        }
        std::fflush(stdout);
    }
    // POSIX nftw rather than std::filesystem::remove_all: on the GPU machine (g++ 13 with the pip libtorch)
    // remove_all crashed here with a segmentation fault after every case had passed.
    for (const auto& d : tempDirs()) {
        nftw(d.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
             FTW_DEPTH | FTW_PHYS);
    }
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    std::fflush(stdout);
    std::fflush(stderr);
    // Skip static destructors: cases keep fixture tensors and models in function-local statics, and with
    // the CUDA build of libtorch (GPU machine) their teardown at exit runs after libtorch's own and
    // crashed (exit 139 after every case had passed). The OS reclaims everything anyway.
    std::_Exit(failed ? 1 : 0);
}
