// lector-cli recognize FILE... : recognise images and print their results in input order.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <iostream>

#include "app/cli/batch_runner.h"
#include "app/cli/commands.h"
#include "app/cli/engine_options.h"
#include "app/cli/interrupt.h"
#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "core/doc/export_text.h"

namespace lector::cli {

int runRecognize(const std::vector<std::string>& argv)
{
    auto specs = engineOptionSpecs();
    specs.push_back({"format", "FMT", "json (default) | jsonl | csv | text | markdown"});
    specs.push_back({"csv-fields", "", "with --format csv: one row per image, one column per field"});
    specs.push_back({"help", "", "show this help"});
    Args args(specs);
    if (auto err = args.parse(argv)) {
        std::fprintf(stderr, "lector-cli recognize: %s\n", err->c_str());
        return 2;
    }
    if (args.has("help")) {
        std::printf("usage: lector-cli recognize FILE... [options]\n\n%s", args.help().c_str());
        return 0;
    }
    const std::string format = args.value("format", "json");
    if (format != "json" && format != "jsonl" && format != "csv" && format != "text" && format != "markdown") {
        std::fprintf(stderr, "lector-cli recognize: --format expects json, jsonl, csv, text or markdown, got '%s'\n", format.c_str());
        return 2;
    }
    if (args.positional().empty()) {
        std::fprintf(stderr, "lector-cli recognize: no input files (usage: lector-cli recognize FILE...)\n");
        return 2;
    }
    engine::EngineConfig config;
    BatchOptions options;
    if (auto e = engineConfigFromArgs(args, config)) {
        std::fprintf(stderr, "lector-cli recognize: %s\n", e->c_str());
        return 2;
    }
    if (auto e = requestTemplateFromArgs(args, options.requestTemplate)) {
        std::fprintf(stderr, "lector-cli recognize: %s\n", e->c_str());
        return 2;
    }
    auto engine = engine::Engine::create(config);
    if (!engine.ok()) {
        std::fprintf(stderr, "lector-cli: %s\n", engine.error().message.c_str());
        return 3;
    }

    std::vector<BatchItem> items;
    for (const auto& f : args.positional()) items.push_back({f, f});
    std::vector<doc::OcrResult> results;
    options.maxInFlight = 2 * config.maxImagesPerStep;
    BatchRunner runner(**engine, options);
    const auto& interrupted = installInterruptHandler();
    // Interrupted runs skip the images cancelled in the queue: keep the delivered ones, in input order.
    std::vector<std::optional<doc::OcrResult>> delivered(items.size());
    runner.run(items, [&](std::size_t i, doc::OcrResult r) { delivered[i] = std::move(r); }, &interrupted);
    (*engine)->shutdown();
    results.clear();
    for (auto& r : delivered)
        if (r) results.push_back(std::move(*r));

    bool anyFailed = false;
    for (const auto& r : results) {
        if (r.failed()) {
            anyFailed = true;
            std::fprintf(stderr, "lector-cli: %s\n", r.error->message.c_str());
        }
    }
    if (format == "json") {
        std::cout << doc::toJsonText(results);
    } else if (format == "jsonl") {
        for (const auto& r : results) std::cout << doc::toJson(r).dump() << "\n";
    } else if (format == "csv") {
        std::cout << (args.has("csv-fields") ? doc::toFieldsCsv(results) : doc::toCsv(results));
    } else {
        for (const auto& r : results) {
            if (results.size() > 1) std::cout << "==> " << r.image << " <==\n";
            std::cout << (format == "markdown" ? doc::toMarkdown(r) : doc::toPlainText(r));
            if (results.size() > 1) std::cout << "\n";
        }
    }
    std::cout.flush();
    if (!std::cout) {  // e.g. a full disk behind a redirect: never report success for lost output
        std::fprintf(stderr, "lector-cli: writing the results to standard output failed: %s\n", std::strerror(errno));
        return 1;
    }
    if (interrupted.load()) return 130;
    return anyFailed ? 1 : 0;
}

}  // namespace lector::cli
