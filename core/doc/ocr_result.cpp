#include "core/doc/ocr_result.h"

namespace lector::doc {

void OcrResult::setTiming(const std::string& stage, double ms)
{
    for (auto& [name, value] : timingMs) {
        if (name == stage) {
            value = ms;
            return;
        }
    }
    timingMs.emplace_back(stage, ms);
}

double OcrResult::timing(const std::string& stage) const
{
    for (const auto& [name, value] : timingMs) {
        if (name == stage) return value;
    }
    return 0.0;
}

OcrResult makeErrorResult(std::string image, Error error)
{
    OcrResult r;
    r.image = std::move(image);
    r.error = std::move(error);
    return r;
}

}  // namespace lector::doc
