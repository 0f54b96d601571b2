// Shared helpers of the PP-OCR tests: the fixture reference (shared/fixtures/ppocr/reference.json),
// fixture tensors, and small geometry helpers. Header-only, test code only.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/safetensors.h"
#include "core/ocr/types.h"
#include "tests/support/lector_test.h"

namespace lector::test::ocr {

inline const std::vector<std::string>& fixtureImages()
{
    static const std::vector<std::string> names = {"receipt_zh", "doc_en", "rotated_en"};
    return names;
}

inline nlohmann::json reference()
{
    std::ifstream in(fixture("fixtures/ppocr/reference.json"));
    return nlohmann::json::parse(in);
}

inline std::shared_ptr<const model::SafetensorsFile> tensors(const std::string& image)
{
    auto f = model::SafetensorsFile::open(fixture("fixtures/ppocr/ppocr_" + image + ".safetensors"));
    if (!f.ok()) fail(__FILE__, __LINE__, f.error().message);
    return *f;
}

inline std::array<float, 4> quadBox(const pipeline::Quad& q)
{
    std::array<float, 4> b{q[0].x, q[0].y, q[0].x, q[0].y};
    for (const auto& p : q) {
        b[0] = std::min(b[0], p.x);
        b[1] = std::min(b[1], p.y);
        b[2] = std::max(b[2], p.x);
        b[3] = std::max(b[3], p.y);
    }
    return b;
}

template <class A, class B>
double iou(const A& a, const B& b)
{
    const double ix = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
    const double iy = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
    const double inter = ix * iy;
    const double areaA = (a[2] - a[0]) * double(a[3] - a[1]), areaB = (b[2] - b[0]) * double(b[3] - b[1]);
    return inter / (areaA + areaB - inter);
}

}  // namespace lector::test::ocr
