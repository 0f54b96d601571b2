#include "core/ocr/assemble.h"

#include <algorithm>
#include <cmath>

#include "core/ocr/reading_order.h"

namespace lector::pipeline {

std::array<int, 4> quadBoundingBox(const Quad& q, int width, int height)
{
    float x0 = q[0].x, x1 = q[0].x, y0 = q[0].y, y1 = q[0].y;
    for (const auto& p : q) {
        x0 = std::min(x0, p.x);
        x1 = std::max(x1, p.x);
        y0 = std::min(y0, p.y);
        y1 = std::max(y1, p.y);
    }
    return {std::clamp(static_cast<int>(std::floor(x0)), 0, width), std::clamp(static_cast<int>(std::floor(y0)), 0, height),
            std::clamp(static_cast<int>(std::ceil(x1)), 0, width), std::clamp(static_cast<int>(std::ceil(y1)), 0, height)};
}

void assembleResult(const Detection& detection, std::span<const LineText> texts, const PipelineOptions& options,
                    doc::OcrResult& result)
{
    result.width = detection.imageWidth;
    result.height = detection.imageHeight;
    result.lines.clear();
    result.text.clear();

    std::vector<size_t> kept;  // indices into detection.lines
    std::vector<LineGeometry> geometry;
    for (size_t i = 0; i < detection.lines.size() && i < texts.size(); ++i) {
        if (texts[i].text.empty() || texts[i].confidence < options.dropScore) continue;
        kept.push_back(i);
        geometry.push_back({detection.lines[i].quad, texts[i].rotated90, texts[i].rotated180});
    }
    ReadingOrderOptions order;
    order.paragraphGap = options.paragraphGap;
    for (const TextRow& row : readingOrder(geometry, order)) {
        if (!result.text.empty()) result.text += row.paragraphBefore ? "\n\n" : "\n";
        for (size_t k = 0; k < row.lines.size(); ++k) {
            const size_t i = kept[static_cast<size_t>(row.lines[k])];
            doc::TextLine line;
            line.text = texts[i].text;
            line.polygon = detection.lines[i].quad;
            line.box = quadBoundingBox(line.polygon, detection.imageWidth, detection.imageHeight);
            line.confidence = texts[i].confidence;
            if (k > 0) result.text += ' ';
            result.text += line.text;
            result.lines.push_back(std::move(line));
        }
    }
}

}  // namespace lector::pipeline
