// A small Qt-free test harness for core/ and gpu/ tests: they must also build and run on the GPU
// machine, which has no Qt (docs/gpu-machine.md). The GUI tests use Qt Test.
//
// Usage, one executable per unit (tests/<area>/tst_<unit>.cpp):
//   LECTOR_TEST(decodesTruncatedJpegAsError) { ...; LECTOR_CHECK(cond); LECTOR_CHECK_EQ(a, b); }
//   main() is provided by lector_test_main (link it); it runs every case, or those whose name contains
//   argv[1], and ends with the line "N passed, N failed, N skipped" that CI reads.
// A failed check prints file:line and the values, and ends that case only (it throws).
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/common/result.h"

namespace lector::test {

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct Skip : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void registerCase(const char* name, std::function<void()> fn);
struct Registrar {
    Registrar(const char* name, std::function<void()> fn) { registerCase(name, std::move(fn)); }
};

[[noreturn]] void fail(const char* file, int line, const std::string& what);

// The value of a Result the test expects to succeed; otherwise the case fails with the error's message.
template <class T>
T must(Result<T> r)
{
    if (!r.ok()) fail(__FILE__, __LINE__, r.error().message);
    return std::move(r).value();
}

// ../shared relative to the source tree, or $LECTOR_SHARED_DIR.
std::filesystem::path sharedDir();
// A fixture file under sharedDir(); skips the case (not fails) only when the whole shared/ is absent.
std::filesystem::path fixture(const std::string& relative);
// Directory of the fetched PP-OCR models (LECTOR_MODELS_DIR or <source>/models/ppocr-v4).
std::filesystem::path ppocrModelDir();
// A fresh empty temporary directory, removed at exit.
std::filesystem::path tempDir();

template <class A, class B>
std::string describePair(const A& a, const B& b)
{
    std::ostringstream s;
    s << "left: " << a << "\n      right: " << b;
    return s.str();
}

}  // namespace lector::test

#define LECTOR_TEST_CAT2_(a, b) a##b
#define LECTOR_TEST_CAT_(a, b) LECTOR_TEST_CAT2_(a, b)
#define LECTOR_TEST(name)                                                                       \
    static void name();                                                                         \
    static ::lector::test::Registrar LECTOR_TEST_CAT_(lectorTestReg_, name)(#name, &name);      \
    static void name()

#define LECTOR_CHECK(cond)                                                                      \
    do {                                                                                        \
        if (!(cond)) ::lector::test::fail(__FILE__, __LINE__, "LECTOR_CHECK(" #cond ")");       \
    } while (0)

#define LECTOR_CHECK_MSG(cond, msg)                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            std::ostringstream lectorTestMsg_;                                                  \
            lectorTestMsg_ << "LECTOR_CHECK(" #cond "): " << msg;                               \
            ::lector::test::fail(__FILE__, __LINE__, lectorTestMsg_.str());                     \
        }                                                                                       \
    } while (0)

#define LECTOR_CHECK_EQ(a, b)                                                                   \
    do {                                                                                        \
        const auto& lectorA_ = (a);                                                             \
        const auto& lectorB_ = (b);                                                             \
        if (!(lectorA_ == lectorB_))                                                            \
            ::lector::test::fail(__FILE__, __LINE__,                                            \
                                 "LECTOR_CHECK_EQ(" #a ", " #b ")\n      " +                    \
                                     ::lector::test::describePair(lectorA_, lectorB_));         \
    } while (0)

#define LECTOR_CHECK_NEAR(a, b, tol)                                                            \
    do {                                                                                        \
        const double lectorA_ = (a), lectorB_ = (b);                                            \
        if (!(std::fabs(lectorA_ - lectorB_) <= (tol)))                                         \
            ::lector::test::fail(__FILE__, __LINE__,                                            \
                                 "LECTOR_CHECK_NEAR(" #a ", " #b ", " #tol ")\n      " +        \
                                     ::lector::test::describePair(lectorA_, lectorB_));         \
    } while (0)

#define LECTOR_SKIP(msg) throw ::lector::test::Skip(msg)
