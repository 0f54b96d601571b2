// lector-cli: composition root of the command-line tool. Wiring only; the work is in commands.
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/commands.h"

namespace {

const char* kUsage =
    "usage: lector-cli <command> [options]\n"
    "\n"
    "commands:\n"
    "  recognize FILE...        recognise images, print results (JSON by default)\n"
    "  batch DIR --out FILE     recognise a folder into results.jsonl or results.csv (resumable)\n"
    "  bench [FILE|DIR]...      per-stage latency table over images (warm-up excluded)\n"
    "\n"
    "run 'lector-cli <command> --help' for the options of a command.\n";

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const std::string command = argv[1];
    std::vector<std::string> rest(argv + 2, argv + argc);
    if (command == "recognize") return lector::cli::runRecognize(rest);
    if (command == "batch") return lector::cli::runBatch(rest);
    if (command == "bench") return lector::cli::runBench(rest);
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::fprintf(stderr, "lector-cli: unknown command '%s'\n\n%s", command.c_str(), kUsage);
    return 2;
}
