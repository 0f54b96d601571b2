// LECTOR_ASSERT: invariants that stay checked in release builds (ref counts, block ownership).
// A failure is a bug: it prints the condition and aborts, like GGML_ASSERT.
#pragma once

#include <cstdio>
#include <cstdlib>

#define LECTOR_ASSERT(cond)                                                               \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: LECTOR_ASSERT(%s) failed\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)
