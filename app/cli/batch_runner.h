// BatchRunner: feeds a list of image files through the engine with a bounded number in flight, so
// memory stays flat over thousands of images. Files are decoded on a small worker pool while the
// engine works on earlier ones; results are handed to the sink in input order, on the caller's thread
// (run() blocks). A stop flag (Ctrl-C) stops new submissions and cancels the images still queued in
// the engine (they never reach the sink, so a resumed run does them); the images of the running step
// finish and reach the sink, so the output stays valid.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/doc/ocr_result.h"
#include "core/engine/engine.h"

namespace lector::cli {

struct BatchItem {
    std::filesystem::path path;   // file to read
    std::string name;             // what the result's "image" says (relative to the batch root)
};

struct BatchOptions {
    int maxInFlight = 8;          // decoded images held at once (submitted or waiting)
    int decodeThreads = 1;
    engine::Request requestTemplate;  // preset, prompt, sampling ... (image and name are filled in)
};

class BatchRunner {
public:
    using Sink = std::function<void(std::size_t index, doc::OcrResult result)>;

    BatchRunner(engine::Engine& engine, BatchOptions options) : m_engine(engine), m_options(std::move(options)) {}

    // Runs all items (or until `stop` becomes true). Returns how many results reached the sink.
    std::size_t run(const std::vector<BatchItem>& items, const Sink& sink, const std::atomic<bool>* stop = nullptr);

private:
    engine::Engine& m_engine;
    BatchOptions m_options;
};

}  // namespace lector::cli
