// NOTE(ocr): PaddleOCR expands a box by offsetting its polygon with pyclipper (round joins) and then
// takes the minimum-area rectangle of the result. The box is already a rectangle, and the minimum-area
// rectangle of a rectangle offset by d with round joins is that rectangle grown by d on every side in
// its own axes, so the expansion is done in closed form here (no polygon clipping library).
#include "core/ocr/db_postprocess.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace lector::pipeline {
namespace {

float distance(PointF a, PointF b) { return std::hypot(a.x - b.x, a.y - b.y); }

cv::Mat probMat(const at::Tensor& prob)
{
    TORCH_CHECK(prob.scalar_type() == at::kFloat && prob.device().is_cpu() && prob.is_contiguous(),
                "dbPostprocess: prob must be a contiguous float32 CPU tensor");
    const auto h = static_cast<int>(prob.size(-2));
    const auto w = static_cast<int>(prob.size(-1));
    return cv::Mat(h, w, CV_32F, const_cast<float*>(prob.data_ptr<float>()));
}

float boxScoreMat(const cv::Mat& prob, const Quad& quad)
{
    const int w = prob.cols, h = prob.rows;
    float minX = quad[0].x, maxX = quad[0].x, minY = quad[0].y, maxY = quad[0].y;
    for (const auto& p : quad) {
        minX = std::min(minX, p.x);
        maxX = std::max(maxX, p.x);
        minY = std::min(minY, p.y);
        maxY = std::max(maxY, p.y);
    }
    const int x0 = std::clamp(static_cast<int>(std::floor(minX)), 0, w - 1);
    const int x1 = std::clamp(static_cast<int>(std::ceil(maxX)), 0, w - 1);
    const int y0 = std::clamp(static_cast<int>(std::floor(minY)), 0, h - 1);
    const int y1 = std::clamp(static_cast<int>(std::ceil(maxY)), 0, h - 1);
    cv::Mat mask = cv::Mat::zeros(y1 - y0 + 1, x1 - x0 + 1, CV_8U);
    std::vector<cv::Point> poly;
    for (const auto& p : quad) poly.emplace_back(static_cast<int>(p.x - x0), static_cast<int>(p.y - y0));
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(1));
    return static_cast<float>(cv::mean(prob(cv::Rect(x0, y0, x1 - x0 + 1, y1 - y0 + 1)), mask)[0]);
}

}  // namespace

Quad orderedRectCorners(PointF center, float width, float height, float angleDeg)
{
    cv::Point2f pts[4];
    cv::RotatedRect({center.x, center.y}, {width, height}, angleDeg).points(pts);
    std::sort(pts, pts + 4, [](const cv::Point2f& a, const cv::Point2f& b) { return a.x < b.x; });
    const auto& [tl, bl] = pts[1].y > pts[0].y ? std::pair{pts[0], pts[1]} : std::pair{pts[1], pts[0]};
    const auto& [tr, br] = pts[3].y > pts[2].y ? std::pair{pts[2], pts[3]} : std::pair{pts[3], pts[2]};
    return Quad{PointF{tl.x, tl.y}, PointF{tr.x, tr.y}, PointF{br.x, br.y}, PointF{bl.x, bl.y}};
}

float boxScore(const at::Tensor& prob, const Quad& quad) { return boxScoreMat(probMat(prob), quad); }

float unclipDistance(float width, float height, float unclipRatio)
{
    const float perimeter = 2.0f * (width + height);
    return perimeter > 0 ? width * height * unclipRatio / perimeter : 0.0f;
}

std::vector<DetectedLine> dbPostprocess(const at::Tensor& prob, int imageWidth, int imageHeight,
                                        const DbOptions& options)
{
    const cv::Mat map = probMat(prob);
    cv::Mat bitmap = map > options.threshold;  // 255 where text
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(bitmap, contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);

    const float sx = static_cast<float>(imageWidth) / static_cast<float>(map.cols);
    const float sy = static_cast<float>(imageHeight) / static_cast<float>(map.rows);
    const float maxX = static_cast<float>(imageWidth - 1), maxY = static_cast<float>(imageHeight - 1);
    std::vector<DetectedLine> lines;
    const size_t numCandidates = std::min(contours.size(), static_cast<size_t>(std::max(options.maxCandidates, 0)));
    for (size_t i = 0; i < numCandidates; ++i) {
        const cv::RotatedRect rect = cv::minAreaRect(contours[i]);
        if (std::min(rect.size.width, rect.size.height) < options.minSide) continue;
        const PointF center{rect.center.x, rect.center.y};
        const Quad box = orderedRectCorners(center, rect.size.width, rect.size.height, rect.angle);
        const float score = boxScoreMat(map, box);
        if (score < options.boxThreshold) continue;

        // The contour runs through the centres of the boundary pixels; the region those pixels cover
        // is half a pixel larger on every side: in pixel-corner coordinates ([i, i+1) is pixel i, the
        // convention of the crop) it is one pixel wider and higher, its centre half a pixel further on.
        const float d = unclipDistance(rect.size.width, rect.size.height, options.unclipRatio);
        const float grownW = rect.size.width + 1 + 2 * d, grownH = rect.size.height + 1 + 2 * d;
        if (std::min(grownW, grownH) < options.minSide + 2) continue;
        Quad quad = orderedRectCorners({center.x + 0.5f, center.y + 0.5f}, grownW, grownH, rect.angle);
        // Whole-pixel corners, as PaddleOCR: axis-aligned crops then copy pixels instead of
        // interpolating between them, which the recogniser reads measurably better (spaces survive).
        for (auto& p : quad) {
            p.x = std::clamp(std::round(p.x * sx), 0.0f, maxX);
            p.y = std::clamp(std::round(p.y * sy), 0.0f, maxY);
        }
        if (distance(quad[0], quad[1]) <= 3.0f || distance(quad[0], quad[3]) <= 3.0f) continue;
        lines.push_back({quad, score});
    }
    return lines;
}

}  // namespace lector::pipeline
