#include "app/cli/interrupt.h"

#include <csignal>
#include <unistd.h>

namespace lector::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void onInterrupt(int)
{
    if (g_interrupted.exchange(true)) _exit(130);
    const char msg[] = "\nlector-cli: interrupted, finishing the images in flight (Ctrl-C again to quit now)\n";
    [[maybe_unused]] auto n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

const std::atomic<bool>& installInterruptHandler()
{
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return g_interrupted;
}

}  // namespace lector::cli
