#include "core/ocr/det_preprocess.h"

#include <algorithm>
#include <cmath>

#include <ATen/Parallel.h>

#include <opencv2/imgproc.hpp>

namespace lector::pipeline {

DetInputSize detInputSize(int width, int height, std::int64_t maxPixels)
{
    double w = std::max(width, 1);
    double h = std::max(height, 1);
    if (maxPixels > 0 && w * h > static_cast<double>(maxPixels)) {
        const double scale = std::sqrt(static_cast<double>(maxPixels) / (w * h));
        w *= scale;
        h *= scale;
    }
    const auto round32 = [](double v) { return std::max(32, static_cast<int>(std::lround(v / 32.0)) * 32); };
    return {round32(w), round32(h)};
}

Image resizeForDet(const Image& image, DetInputSize size)
{
    const cv::Mat src(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
    Image out(size.width, size.height);
    cv::Mat dst(size.height, size.width, CV_8UC3, out.rgb.data());
    cv::resize(src, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
    return out;
}

at::Tensor normalizeDetInput(const Image& resized, int64_t paddedHeight, int64_t paddedWidth)
{
    // B, G, R statistics; source pixels are R, G, B.
    constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
    constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
    const int64_t h = resized.height, w = resized.width;
    const int64_t ph = std::max(h, paddedHeight), pw = std::max(w, paddedWidth);
    at::Tensor input = at::empty({1, 3, ph, pw}, at::kFloat);  // [1, 3(BGR), H, W]
    float* planes = input.data_ptr<float>();
    // Rows in parallel: a page is a few million values, milliseconds on one thread.
    at::parallel_for(0, ph, 64, [&](int64_t begin, int64_t end) {
        for (int c = 0; c < 3; ++c) {
            const int srcChannel = 2 - c;
            const float scale = 1.0f / (255.0f * kStd[c]);
            const float shift = -kMean[c] / kStd[c];
            const float white = 255.0f * scale + shift;
            float* plane = planes + c * ph * pw;
            for (int64_t y = begin; y < end; ++y) {
                float* out = plane + y * pw;
                int64_t x = 0;
                if (y < h) {
                    const std::uint8_t* row = resized.row(static_cast<int>(y));
                    for (; x < w; ++x) out[x] = row[x * 3 + srcChannel] * scale + shift;
                }
                for (; x < pw; ++x) out[x] = white;
            }
        }
    });
    return input;
}

}  // namespace lector::pipeline
