#include "core/ocr/crop.h"

#include <algorithm>
#include <cmath>

#include <ATen/Parallel.h>

#include <opencv2/imgproc.hpp>

namespace lector::pipeline {
namespace {

float distance(PointF a, PointF b) { return std::hypot(a.x - b.x, a.y - b.y); }

cv::Mat view(const Image& image)
{
    return cv::Mat(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
}

Image fromMat(const cv::Mat& m)
{
    Image out(m.cols, m.rows);
    m.copyTo(cv::Mat(out.height, out.width, CV_8UC3, out.rgb.data()));
    return out;
}

}  // namespace

LineCrop cropLine(const Image& image, const Quad& q)
{
    const int w = std::max(1, static_cast<int>(std::max(distance(q[0], q[1]), distance(q[3], q[2]))));
    const int h = std::max(1, static_cast<int>(std::max(distance(q[0], q[3]), distance(q[1], q[2]))));
    const cv::Point2f src[4] = {{q[0].x, q[0].y}, {q[1].x, q[1].y}, {q[2].x, q[2].y}, {q[3].x, q[3].y}};
    const cv::Point2f dst[4] = {{0, 0}, {float(w), 0}, {float(w), float(h)}, {0, float(h)}};
    cv::Mat warped;
    const cv::Mat m = cv::getPerspectiveTransform(src, dst);
    cv::warpPerspective(view(image), warped, m, cv::Size(w, h), cv::INTER_CUBIC, cv::BORDER_REPLICATE);
    LineCrop crop;
    if (static_cast<float>(h) >= 1.5f * static_cast<float>(w)) {
        cv::rotate(warped, warped, cv::ROTATE_90_COUNTERCLOCKWISE);
        crop.rotated90 = true;
    }
    crop.image = fromMat(warped);
    return crop;
}

std::vector<LineCrop> cropLines(std::span<const CropRef> refs)
{
    std::vector<LineCrop> crops(refs.size());
    at::parallel_for(0, static_cast<int64_t>(refs.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const CropRef& ref = refs[static_cast<size_t>(i)];
            crops[static_cast<size_t>(i)] = cropLine(*ref.image, ref.quad);
        }
    });
    return crops;
}

Image rotate180(const Image& image)
{
    cv::Mat turned;
    cv::rotate(view(image), turned, cv::ROTATE_180);
    return fromMat(turned);
}

}  // namespace lector::pipeline
