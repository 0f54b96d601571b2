#include "core/ocr/line_input.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ATen/Parallel.h>

#include <opencv2/imgproc.hpp>

namespace lector::pipeline {

int scaledLineWidth(const Image& crop)
{
    if (crop.empty()) return 1;
    const double w = std::ceil(static_cast<double>(kLineHeight) * crop.width / crop.height);
    return static_cast<int>(std::clamp(w, 1.0, static_cast<double>(kRecMaxWidth)));
}

at::Tensor lineBatchInput(std::span<const Image* const> crops, int width)
{
    const int64_t n = static_cast<int64_t>(crops.size());
    at::Tensor input = at::zeros({n, 3, kLineHeight, width}, at::kFloat);  // [N, 3(BGR), 48, W]
    float* base = input.data_ptr<float>();
    const int64_t plane = static_cast<int64_t>(kLineHeight) * width;
    // Each crop fills its own slice: the crops in parallel (as cropLines()).
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        cv::Mat resized;
        for (int64_t i = begin; i < end; ++i) {
            const Image& crop = *crops[static_cast<size_t>(i)];
            if (crop.empty()) continue;
            const int w = std::min(width, scaledLineWidth(crop));
            const cv::Mat src(crop.height, crop.width, CV_8UC3, const_cast<std::uint8_t*>(crop.rgb.data()));
            cv::resize(src, resized, cv::Size(w, kLineHeight), 0, 0, cv::INTER_LINEAR);
            float* out = base + i * 3 * plane;
            for (int y = 0; y < kLineHeight; ++y) {
                const std::uint8_t* row = resized.ptr<std::uint8_t>(y);
                for (int x = 0; x < w; ++x) {
                    for (int c = 0; c < 3; ++c)  // c: B, G, R <- row: R, G, B
                        out[c * plane + y * width + x] = row[x * 3 + (2 - c)] * (2.0f / 255.0f) - 1.0f;
                }
            }
        }
    });
    return input;
}

std::vector<RecBatch> planRecBatches(std::span<const int> contentWidths, int maxBatch, std::int64_t maxBatchPixels)
{
    std::vector<int> order(contentWidths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return contentWidths[static_cast<size_t>(a)] < contentWidths[static_cast<size_t>(b)]; });
    std::vector<RecBatch> batches;
    for (const int idx : order) {
        const int width = std::max(kRecMinWidth, contentWidths[static_cast<size_t>(idx)]);
        if (!batches.empty()) {
            RecBatch& last = batches.back();
            const auto count = static_cast<std::int64_t>(last.indices.size()) + 1;
            if (count <= maxBatch && count * width * kLineHeight <= maxBatchPixels) {
                last.indices.push_back(idx);
                last.width = width;  // sorted ascending: the newest crop is the widest
                continue;
            }
        }
        batches.push_back({{idx}, width});
    }
    return batches;
}

}  // namespace lector::pipeline
