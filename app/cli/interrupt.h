// Ctrl-C handling for long CLI runs: the first SIGINT/SIGTERM sets a flag (the run finishes the images
// in flight and leaves a valid output file); a second one exits at once (exit code 130). The output is
// flushed per image, so even then it is valid up to the last whole line.
#pragma once

#include <atomic>

namespace lector::cli {

// Installs the handlers and returns the flag they set.
const std::atomic<bool>& installInterruptHandler();

}  // namespace lector::cli
