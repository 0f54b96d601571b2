// lector-cli batch DIR --out results.jsonl|.csv : a resumable folder run. One writer appends and
// flushes per image; --resume skips images already in the output; Ctrl-C finishes the images in flight.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "app/cli/batch_runner.h"
#include "app/cli/commands.h"
#include "app/cli/engine_options.h"
#include "app/cli/folder_scan.h"
#include "app/cli/interrupt.h"
#include "core/doc/result_writer.h"

namespace lector::cli {
namespace {

std::string formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

// Progress on stderr: one line per image, or a rewritten line on a terminal.
class Progress {
public:
    explicit Progress(std::size_t total) : m_total(total), m_tty(isatty(STDERR_FILENO)), m_start(std::chrono::steady_clock::now()) {}
    void report(std::size_t done, const doc::OcrResult& r)
    {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        const double rate = done / std::max(elapsed, 1e-9);
        const double eta = (m_total - done) / std::max(rate, 1e-9);
        const char* status = r.failed() ? "FAILED" : "ok";
        std::fprintf(stderr, "%s[%zu/%zu] %s %s %.0f ms | %.2f img/s, ETA %s%s", m_tty ? "\r\033[K" : "", done, m_total,
                     r.image.c_str(), status, r.timing("total"), rate, formatDuration(eta).c_str(), m_tty ? "" : "\n");
        if (r.failed()) std::fprintf(stderr, "%s  %s\n", m_tty ? "\n" : "", r.error->message.c_str());
        std::fflush(stderr);
    }
    void finish() const
    {
        if (m_tty) std::fputc('\n', stderr);
    }

private:
    std::size_t m_total;
    bool m_tty;
    std::chrono::steady_clock::time_point m_start;
};

}  // namespace

int runBatch(const std::vector<std::string>& argv)
{
    auto specs = engineOptionSpecs();
    specs.push_back({"out", "FILE", "output file: .jsonl (JSON Lines) or .csv"});
    specs.push_back({"recursive", "", "include sub-folders"});
    specs.push_back({"resume", "", "skip images already in the output file and append the rest"});
    specs.push_back({"overwrite", "", "replace an existing output file"});
    specs.push_back({"types", "EXTS", "file extensions to include (default jpg,jpeg,png,bmp,webp,tif,tiff,ppm,pgm)"});
    specs.push_back({"help", "", "show this help"});
    Args args(specs);
    if (auto err = args.parse(argv)) {
        std::fprintf(stderr, "lector-cli batch: %s\n", err->c_str());
        return 2;
    }
    if (args.has("help")) {
        std::printf("usage: lector-cli batch DIR --out results.jsonl|results.csv [options]\n\n%s", args.help().c_str());
        return 0;
    }
    if (args.positional().size() != 1 || !args.has("out")) {
        std::fprintf(stderr, "lector-cli batch: usage: lector-cli batch DIR --out results.jsonl|results.csv [--recursive] [--resume]\n");
        return 2;
    }
    const std::filesystem::path root = args.positional()[0];
    const std::filesystem::path out = args.value("out");
    auto format = doc::outputFormatFromPath(out);
    if (!format.ok()) {
        std::fprintf(stderr, "lector-cli batch: %s\n", format.error().message.c_str());
        return 2;
    }
    if (args.has("resume") && args.has("overwrite")) {
        std::fprintf(stderr, "lector-cli batch: --resume and --overwrite exclude each other\n");
        return 2;
    }
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && !args.has("resume") && !args.has("overwrite")) {
        std::fprintf(stderr, "lector-cli batch: %s already exists; use --resume to continue it or --overwrite to replace it\n",
                     out.c_str());
        return 2;
    }
    engine::EngineConfig config;
    BatchOptions options;
    if (auto e = engineConfigFromArgs(args, config)) {
        std::fprintf(stderr, "lector-cli batch: %s\n", e->c_str());
        return 2;
    }
    if (auto e = requestTemplateFromArgs(args, options.requestTemplate)) {
        std::fprintf(stderr, "lector-cli batch: %s\n", e->c_str());
        return 2;
    }
    const auto types = args.has("types") ? splitList(args.value("types")) : defaultImageExtensions();
    auto scanned = scanFolder(root, args.has("recursive"), types);
    if (!scanned.ok()) {
        std::fprintf(stderr, "lector-cli batch: %s\n", scanned.error().message.c_str());
        return 2;
    }
    std::vector<BatchItem> items = std::move(scanned).value();
    if (items.empty()) {
        std::fprintf(stderr, "lector-cli batch: no images in %s%s\n", root.c_str(),
                     args.has("recursive") ? "" : " (use --recursive to include sub-folders)");
        return 1;
    }

    std::set<std::string> already;
    if (args.has("resume")) {
        auto done = doc::readDoneImages(out);
        if (!done.ok()) {
            std::fprintf(stderr, "lector-cli batch: %s\n", done.error().message.c_str());
            return 1;
        }
        already = std::move(done).value();
        std::erase_if(items, [&](const BatchItem& it) { return already.count(it.name) > 0; });
        std::fprintf(stderr, "lector-cli batch: resuming: %zu images already in %s, %zu to go\n", already.size(),
                     out.c_str(), items.size());
    }
    auto writer = doc::ResultWriter::open(out, format.value(), /*append=*/args.has("resume"));
    if (!writer.ok()) {
        std::fprintf(stderr, "lector-cli batch: %s\n", writer.error().message.c_str());
        return 1;
    }
    if (items.empty()) return 0;

    auto engine = engine::Engine::create(config);
    if (!engine.ok()) {
        std::fprintf(stderr, "lector-cli: %s\n", engine.error().message.c_str());
        return 3;
    }
    options.maxInFlight = 2 * config.maxImagesPerStep;
    BatchRunner runner(**engine, options);
    Progress progress(items.size());
    const auto& interrupted = installInterruptHandler();
    std::size_t failed = 0, written = 0;
    bool writeFailed = false;
    std::atomic<bool> stop{false};
    // Stop on Ctrl-C or when the output cannot be written (a full disk): nothing is lost that was
    // written, and a --resume run continues from there.
    std::thread watcher([&] {
        while (!stop.load()) {
            if (interrupted.load()) stop.store(true);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    runner.run(
        items,
        [&](std::size_t, doc::OcrResult r) {
            if (writeFailed) return;
            if (auto w = (*writer)->write(r); !w.ok()) {
                std::fprintf(stderr, "\nlector-cli batch: %s\n", w.error().message.c_str());
                writeFailed = true;
                stop.store(true);
                return;
            }
            ++written;
            if (r.failed()) ++failed;
            progress.report(written, r);
        },
        &stop);
    stop.store(true);
    watcher.join();
    progress.finish();
    (*engine)->shutdown();
    // A Ctrl-C that came after the last image was written interrupted nothing: exit as a finished run.
    const bool cutShort = interrupted.load() && written < items.size();
    std::fprintf(stderr, "lector-cli batch: %zu written to %s, %zu failed%s\n", written, out.c_str(), failed,
                 cutShort ? " (interrupted; run again with --resume to continue)" : "");
    if (writeFailed) return 1;
    if (cutShort) return 130;
    return failed ? 1 : 0;
}

}  // namespace lector::cli
