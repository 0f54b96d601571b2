// lector-cli subcommands. Each returns the process exit code: 0 all fine, 1 some images failed (each
// failure is an error object in the output), 2 usage error, 3 the model could not be loaded,
// 130 interrupted (Ctrl-C; the output written so far is valid).
#pragma once

#include <string>
#include <vector>

namespace lector::cli {

int runRecognize(const std::vector<std::string>& argv);
int runBatch(const std::vector<std::string>& argv);
int runBench(const std::vector<std::string>& argv);

}  // namespace lector::cli
