#include "core/ocr/reading_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace lector::pipeline {
namespace {

float length(PointF v) { return std::hypot(v.x, v.y); }
PointF sub(PointF a, PointF b) { return {a.x - b.x, a.y - b.y}; }

// A line's axis-aligned extent in the page's text frame (x along the reading direction, y down).
struct Box {
    float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    float thickness = 0;  // extent across the line's own reading direction
    float width() const { return x1 - x0; }
    float yCenter() const { return (y0 + y1) / 2; }
};

struct Split {
    std::vector<int> left, right;
};

float median(std::vector<float> v)
{
    if (v.empty()) return 0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

class Orderer {
public:
    Orderer(std::vector<Box> boxes, const ReadingOrderOptions& options) : m_boxes(std::move(boxes)), m_opt(options)
    {
        std::vector<float> t;
        for (const auto& b : m_boxes) t.push_back(b.thickness);
        m_lineHeight = std::max(1.0f, median(t));
    }

    std::vector<TextRow> run()
    {
        std::vector<int> all(m_boxes.size());
        std::iota(all.begin(), all.end(), 0);
        if (!all.empty()) region(all);
        return std::move(m_rows);
    }

private:
    void region(const std::vector<int>& ids)
    {
        if (ids.size() == 1) {
            emitRow(ids);
            return;
        }
        if (auto split = columnSplit(ids)) {
            region(split->left);
            breakParagraph();
            region(split->right);
            return;
        }
        const auto bands = splitBands(ids);
        if (bands.size() == 1) {
            rows(ids);
            return;
        }
        for (size_t i = 0; i < bands.size();) {
            if (i > 0 && bands[i].gapBefore > m_opt.paragraphGap * m_lineHeight) breakParagraph();
            // Regroup a run of bands that share a column gutter (two columns under a full-width title).
            std::vector<int> merged = bands[i].ids;
            std::optional<Split> split;
            size_t j = i + 1;
            for (; j < bands.size(); ++j) {
                std::vector<int> next = merged;
                next.insert(next.end(), bands[j].ids.begin(), bands[j].ids.end());
                auto s = columnSplit(next);
                if (!s) break;
                merged = std::move(next);
                split = std::move(s);
            }
            if (split) {
                region(split->left);
                breakParagraph();
                region(split->right);
            } else {
                j = i + 1;
                region(bands[i].ids);
            }
            i = j;
        }
    }

    // The widest vertical gutter that separates two text columns, if any.
    std::optional<Split> columnSplit(const std::vector<int>& ids) const
    {
        std::vector<int> sorted = ids;
        std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return box(a).x0 < box(b).x0; });
        struct Gap {
            size_t at;
            float width;
        };
        std::vector<Gap> gaps;
        float coverEnd = box(sorted[0]).x1;
        for (size_t k = 1; k < sorted.size(); ++k) {
            const float gap = box(sorted[k]).x0 - coverEnd;
            if (gap >= m_opt.columnMinGap * m_lineHeight) gaps.push_back({k, gap});
            coverEnd = std::max(coverEnd, box(sorted[k]).x1);
        }
        std::sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) { return a.width > b.width; });
        for (const Gap& g : gaps) {
            Split s{{sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(g.at)},
                    {sorted.begin() + static_cast<std::ptrdiff_t>(g.at), sorted.end()}};
            if (isTextColumn(s.left) && isTextColumn(s.right)) return s;
        }
        return std::nullopt;
    }

    bool isTextColumn(const std::vector<int>& ids) const
    {
        std::vector<float> widths;
        for (int i : ids) widths.push_back(box(i).width());
        return median(widths) >= m_opt.columnMinWidth * m_lineHeight;
    }

    struct Band {
        std::vector<int> ids;
        float gapBefore = 0;
    };

    // Horizontal bands separated by vertical gaps. Lines overlapping by at most a quarter line height
    // (skew, tight leading) still count as separate.
    std::vector<Band> splitBands(const std::vector<int>& ids) const
    {
        std::vector<int> sorted = ids;
        std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return box(a).y0 < box(b).y0; });
        std::vector<Band> bands;
        float bandEnd = 0;
        for (int id : sorted) {
            const Box& b = box(id);
            const float tolerance = 0.25f * std::min(b.thickness, m_lineHeight);
            if (bands.empty() || b.y0 >= bandEnd - tolerance) {
                bands.push_back({{id}, bands.empty() ? 0.0f : std::max(0.0f, b.y0 - bandEnd)});
                bandEnd = b.y1;
            } else {
                bands.back().ids.push_back(id);
                bandEnd = std::max(bandEnd, b.y1);
            }
        }
        return bands;
    }

    // Lines of one band (no gap, no column inside): cluster into rows by vertical centre, then read
    // each row left to right.
    void rows(std::vector<int> ids)
    {
        std::sort(ids.begin(), ids.end(), [&](int a, int b) { return box(a).yCenter() < box(b).yCenter(); });
        std::vector<std::vector<int>> rows;
        float rowCenter = 0, rowHeight = 0;
        for (int id : ids) {
            const Box& b = box(id);
            if (!rows.empty() && std::abs(b.yCenter() - rowCenter) <= 0.5f * std::max(rowHeight, b.thickness)) {
                rows.back().push_back(id);
                const float n = static_cast<float>(rows.back().size());
                rowCenter += (b.yCenter() - rowCenter) / n;
                rowHeight = std::max(rowHeight, b.thickness);
            } else {
                rows.push_back({id});
                rowCenter = b.yCenter();
                rowHeight = b.thickness;
            }
        }
        for (auto& row : rows) emitRow(row);
    }

    void emitRow(std::vector<int> ids)
    {
        std::sort(ids.begin(), ids.end(), [&](int a, int b) { return box(a).x0 < box(b).x0; });
        m_rows.push_back({std::move(ids), m_breakNext});
        m_breakNext = false;
    }

    void breakParagraph() { m_breakNext = !m_rows.empty(); }

    const Box& box(int id) const { return m_boxes[static_cast<size_t>(id)]; }

    std::vector<Box> m_boxes;
    ReadingOrderOptions m_opt;
    float m_lineHeight = 1;
    std::vector<TextRow> m_rows;
    bool m_breakNext = false;
};

}  // namespace

PointF readingDirection(const LineGeometry& line)
{
    PointF dir = line.rotated90 ? sub(line.quad[3], line.quad[0]) : sub(line.quad[1], line.quad[0]);
    if (line.rotated180) dir = {-dir.x, -dir.y};
    const float n = length(dir);
    return n > 0 ? PointF{dir.x / n, dir.y / n} : PointF{1, 0};
}

std::vector<TextRow> readingOrder(std::span<const LineGeometry> lines, const ReadingOrderOptions& options)
{
    // Dominant reading direction: length-weighted sum of the lines' directions.
    PointF sum{0, 0};
    for (const auto& line : lines) {
        const PointF d = readingDirection(line);
        const float len = std::max(length(sub(line.quad[1], line.quad[0])), length(sub(line.quad[3], line.quad[0])));
        sum.x += d.x * len;
        sum.y += d.y * len;
    }
    const float n = length(sum);
    const PointF dx = n > 1e-3f ? PointF{sum.x / n, sum.y / n} : PointF{1, 0};
    const PointF dy{-dx.y, dx.x};  // "down" in the text frame

    std::vector<Box> boxes;
    boxes.reserve(lines.size());
    for (const auto& line : lines) {
        Box b{1e30f, -1e30f, 1e30f, -1e30f, 0};
        for (const auto& p : line.quad) {
            const float x = p.x * dx.x + p.y * dx.y, y = p.x * dy.x + p.y * dy.y;
            b.x0 = std::min(b.x0, x);
            b.x1 = std::max(b.x1, x);
            b.y0 = std::min(b.y0, y);
            b.y1 = std::max(b.y1, y);
        }
        b.thickness = line.rotated90 ? length(sub(line.quad[1], line.quad[0])) : length(sub(line.quad[3], line.quad[0]));
        boxes.push_back(b);
    }
    return Orderer(std::move(boxes), options).run();
}

}  // namespace lector::pipeline
